package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// TestTokenizeSentencePiece: tokenize on a SentencePiece model file, and on
// a checkpoint keeping one in its spiece_model tensor, prints what the
// tokenizer gives with EOS appended.
func TestTokenizeSentencePiece(t *testing.T) {
	model := shared.Path(t, "vocab/ugm/ugm-t5like.model")
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromSentencePiece(raw)
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello ﬁne world"
	ids, _ := tok.Encode(text, true, false)
	want := strings.Trim(fmt.Sprint(ids), "[]") + "\n"
	if !strings.HasSuffix(want, " 1\n") {
		t.Fatalf("no EOS in %q", want)
	}

	// Checkpoints with the model's bytes as a one-dimensional tensor of
	// bytes: I8, or U8 as ComfyUI's umT5 files have it.
	ckptOf := func(dtype string) string {
		header := fmt.Sprintf(`{"spiece_model":{"dtype":"%s","shape":[%d],"data_offsets":[0,%d]}}`, dtype, len(raw), len(raw))
		for (8+len(header))%8 != 0 {
			header += " "
		}
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		b = append(append(b, header...), raw...)
		ckpt := filepath.Join(t.TempDir(), "umt5.safetensors")
		if err := os.WriteFile(ckpt, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ckpt
	}
	ckpt, ckptU8 := ckptOf("I8"), ckptOf("U8")
	noSP := writeTinySafetensors(t, "shared.weight")
	bad := filepath.Join(t.TempDir(), "bad.model")
	os.WriteFile(bad, []byte{0x0b, 1, 2}, 0o644)
	for _, tt := range []struct {
		name, path string
		args       []string
		wantOut    string
		wantErr    string
	}{
		{"model", model, nil, want, ""},
		{"no eos", model, []string{"--no-bos"}, strings.TrimSuffix(want, " 1\n") + "\n", ""},
		{"checkpoint", ckpt, nil, want, ""},
		{"checkpoint, U8", ckptU8, nil, want, ""},
		{"T5 without model", noSP, nil, "", `tensor "spiece_model": missing: a T5 text encoder (shared.weight)`},
		{"not a model", bad, nil, "", "is not a GGUF file or a checkpoint, and as a SentencePiece model"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"tokenize", "-m", tt.path}, tt.args...), text)
			out, errOut, code := runCmd(t, "", args...)
			if tt.wantErr != "" {
				if code != 1 || !strings.Contains(errOut, tt.wantErr) {
					t.Fatalf("exit %d, stderr %q, want 1 and %q", code, errOut, tt.wantErr)
				}
				return
			}
			if code != 0 || out != tt.wantOut {
				t.Fatalf("exit %d, out %q (stderr %q), want %q", code, out, errOut, tt.wantOut)
			}
		})
	}
}
