package kernel

import (
	"bytes"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tensor"
)

// The tiny-llama files hold the same weights in 13 formats, written by
// llama-quantize from the F32 file. For the legacy formats llama-quantize
// (without an importance matrix) runs ggml's reference quantizers, which
// ours follow, so re-quantizing the F32 weights must reproduce the file's
// bytes exactly. For every format, dequantizing must land within that
// format's error of the F32 weights.
func TestRealModels(t *testing.T) {
	ref, err := gguf.Open(shared.Path(t, "models/tiny-llama-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	bound := map[tensor.DType]float64{
		tensor.F16: 1e-3, tensor.BF16: 5e-3, tensor.Q8_0: 0.01, tensor.Q6_K: 0.03,
		tensor.Q5_0: 0.05, tensor.Q5_1: 0.05, tensor.Q5_K: 0.05, tensor.Q4_0: 0.1,
		tensor.Q4_1: 0.1, tensor.Q4_K: 0.1, tensor.Q3_K: 0.2, tensor.Q2_K: 0.4,
	}
	exact := map[tensor.DType]bool{tensor.F16: true, tensor.BF16: true, tensor.Q8_0: true,
		tensor.Q4_0: true, tensor.Q4_1: true, tensor.Q5_0: true, tensor.Q5_1: true}
	for _, name := range []string{"F16", "BF16", "Q8_0", "Q6_K", "Q5_1", "Q5_K_M", "Q5_0", "Q4_1",
		"Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(shared.Path(t, "models/tiny-llama-"+name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			seen := map[tensor.DType]int{}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if ti.Type == tensor.F32 {
					continue
				}
				rt, err := ref.Tensor(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float32, rt.Elements())
				if err := Dequantize(tensor.F32, ref.Data(rt), want); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, ti.Elements())
				if err := Dequantize(ti.Type, f.Data(ti), got); err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				if e := nrmse(got, want); e > bound[ti.Type] {
					t.Errorf("%s (%s): NRMSE %.4f vs F32 > %.3f", ti.Name, ti.Type, e, bound[ti.Type])
				}
				seen[ti.Type]++
				if exact[ti.Type] {
					b := make([]byte, len(f.Data(ti)))
					if err := Quantize(ti.Type, want, b); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(b, f.Data(ti)) {
						t.Errorf("%s (%s): re-quantized bytes differ from llama-quantize's", ti.Name, ti.Type)
					}
				}
			}
			t.Logf("checked %v", seen)
		})
	}
}

// TestKQuantsMatchLlamaQuality: our K-quant quantizers, applied to the F32
// weights, must lose no more than 3% more (NRMSE) than llama-quantize did
// for the same tensors (no importance matrix).
func TestKQuantsMatchLlamaQuality(t *testing.T) {
	ref, err := gguf.Open(shared.Path(t, "models/tiny-llama-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, name := range []string{"Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K"} {
		f, err := gguf.Open(shared.Path(t, "models/tiny-llama-"+name+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range []string{"blk.0.ffn_up.weight", "blk.1.attn_q.weight"} {
			ti, err := f.Tensor(tn)
			if err != nil {
				t.Fatal(err)
			}
			rt, _ := ref.Tensor(tn)
			want := make([]float32, rt.Elements())
			if err := Dequantize(tensor.F32, ref.Data(rt), want); err != nil {
				t.Fatal(err)
			}
			theirs := make([]float32, len(want))
			if err := Dequantize(ti.Type, f.Data(ti), theirs); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, len(f.Data(ti)))
			if err := Quantize(ti.Type, want, b); err != nil {
				t.Fatal(err)
			}
			ours := make([]float32, len(want))
			if err := Dequantize(ti.Type, b, ours); err != nil {
				t.Fatal(err)
			}
			eo, et := nrmse(ours, want), nrmse(theirs, want)
			if eo > 1.03*et {
				t.Errorf("%s %s (%s): NRMSE ours %.4f, llama-quantize %.4f", name, tn, ti.Type, eo, et)
			}
		}
		f.Close()
	}
}
