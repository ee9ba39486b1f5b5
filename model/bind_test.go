package model

import (
	"bytes"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestBindUnsupportedType: a weight of a type glassbox has no kernels for
// (IQ2_XXS, IQ1_S, or Q8_K, an activation format) fails at bind with the tensor's name and the type, not
// in the first forward pass (a token embedding is only read then).
func TestBindUnsupportedType(t *testing.T) {
	for _, tc := range []struct {
		dt   tensor.DType
		cols int64
	}{{tensor.IQ2_XXS, 256}, {tensor.IQ1_S, 256}, {tensor.Q8_K, 256}} {
		rb, err := tc.dt.RowBytes(tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		var meta gguf.Metadata
		if err := meta.Set("general.architecture", "llama"); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		ts := []gguf.WriteTensor{{Name: "token_embd.weight", Shape: []int64{2, tc.cols}, Type: tc.dt, Data: make([]byte, 2*rb)}}
		if err := gguf.Write(&buf, &meta, ts); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		b := NewBinder(f)
		b.Matrix("token_embd.weight", 2, int(tc.cols))
		if err := b.Err(); err == nil || !strings.Contains(err.Error(), "token_embd.weight") || !strings.Contains(err.Error(), tc.dt.String()) || !strings.Contains(err.Error(), "load:") {
			t.Errorf("%s: error %v, want one naming the tensor, the type and the load stage", tc.dt, err)
		}
	}
}
