package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTinySafetensors writes a .safetensors file of one F16 tensor of one
// element per name.
func writeTinySafetensors(t *testing.T, names ...string) string {
	t.Helper()
	var h []string
	for i, n := range names {
		h = append(h, fmt.Sprintf(`"%s":{"dtype":"F16","shape":[1],"data_offsets":[%d,%d]}`, n, 2*i, 2*i+2))
	}
	header := "{" + strings.Join(h, ",") + "}"
	for (8+len(header))%8 != 0 {
		header += " "
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	b = append(b, make([]byte, 2*len(names))...)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokenizeCheckpoint: tokenize on a diffusion checkpoint prints its
// CLIP windows (the fields of ../shared/golden/sd15/clip-tokens.jsonl).
func TestTokenizeCheckpoint(t *testing.T) {
	sd := writeTinySafetensors(t, clipEmbedding, "model.diffusion_model.out.2.bias")
	vae := writeTinySafetensors(t, "decoder.conv_in.weight")
	pad := func(n int) string { return strings.TrimSuffix(strings.Repeat("49407,", n), ",") }
	ones := func(n int) string { return strings.TrimSuffix(strings.Repeat("1,", n), ",") }
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{"json", "", []string{"tokenize", "-m", sd, "--json", "a lovely cat"},
			`{"tokens":[49406,320,2165,2368,` + pad(73) + `],"weights":[` + ones(77) + `],"n_chunks":1}` + "\n", "", 0},
		{"json weights", "", []string{"tokenize", "-m", sd, "--json", "(cat:1.5)"},
			`{"tokens":[49406,2368,` + pad(75) + `],"weights":[1,1.5,` + ones(75) + `],"n_chunks":1}` + "\n", "", 0},
		{"plain", "", []string{"tokenize", "-m", sd, "cat"}, "49406 2368 " + strings.ReplaceAll(pad(75), ",", " ") + "\n", "", 0},
		{"stdin", "  CAT\n", []string{"tokenize", "-m", sd}, "49406 2368 " + strings.ReplaceAll(pad(75), ",", " ") + "\n", "", 0},
		{"bad weight", "", []string{"tokenize", "-m", sd, "(a:.)"}, "", `encode: prompt: byte 2: bad emphasis weight: "." is not a number`, 1},
		{"no text encoder", "", []string{"tokenize", "-m", vae, "cat"}, "", "has no CLIP text encoder", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
		})
	}
}
