package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tiny.gguf")
	stories := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantCode int
	}{
		{"tiny Q4_K_M", []string{"-o", out, "--preset", "tiny", "--type", "Q4_K_M", "--seed", "5"}, "", 0},
		{"vocab from a file", []string{"-o", out, "--preset", "tiny", "--type", "F16", "--vocab", stories, "-q"}, "", 0},
		{"shape overrides", []string{"-o", out, "--preset", "134m", "--type", "Q8_0", "--layers", "2", "--dim", "256", "--heads", "4", "--kv-heads", "4", "--ffn", "256", "--vocab-size", "1000", "-q"}, "", 0},
		{"bad override", []string{"-o", out, "--preset", "tiny", "--heads", "3"}, "not a multiple of heads 3", 1},
		{"no output", []string{"--preset", "tiny"}, "-o OUT.gguf is required", 2},
		{"no preset", []string{"-o", out}, "--preset is required", 2},
		{"unknown preset", []string{"-o", out, "--preset", "70b"}, `unknown preset "70b"`, 2},
		{"unknown type", []string{"-o", out, "--preset", "tiny", "--type", "Q7"}, `weight format "Q7" is not supported`, 1},
		{"missing vocab file", []string{"-o", out, "--preset", "tiny", "--vocab", filepath.Join(dir, "nope")}, "load:", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", append([]string{"synth"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
			if code == 0 {
				f, err := gguf.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if n, _ := f.Meta.Int("llama.block_count"); n != 2 {
					t.Errorf("block_count %d", n)
				}
			}
		})
	}
}

// TestSynthMoE: synth writes a mixture of experts that show and bench
// describe and run (a token reading its experts only); a bad expert count
// is refused.
func TestSynthMoE(t *testing.T) {
	out := filepath.Join(t.TempDir(), "moe.gguf")
	if _, errs, code := runCmd(t, "", "synth", "-o", out, "--preset", "moe-tiny", "--type", "Q8_0", "--experts", "6", "--experts-used", "3", "-q"); code != 0 {
		t.Fatal(errs)
	}
	if show, _, _ := runCmd(t, "", "show", "-m", out); !strings.Contains(show, "experts                6, 3 per token") {
		t.Errorf("show: %s", show)
	}
	bench, errs, code := runCmd(t, "", "bench", "-m", out, "-p", "8", "-n", "4", "-r", "1")
	if code != 0 || !strings.Contains(bench, "read per token (3 of 6 experts)") || !strings.Contains(bench, "tg4") {
		t.Errorf("bench: exit %d, %s %s", code, bench, errs)
	}
	if _, errs, code := runCmd(t, "", "synth", "-o", out, "--preset", "moe-tiny", "--experts-used", "9"); code != 1 || !strings.Contains(errs, "experts used 9 must be between 1 and experts 4") {
		t.Errorf("bad experts used: exit %d, %s", code, errs)
	}
}
