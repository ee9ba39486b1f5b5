package quantize

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

func f32bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// model builds a small GGUF in memory: a 64×64 matrix, a 1-D norm and a
// 16×48 matrix whose rows fit no 32-element block.
func model(t *testing.T) *gguf.File {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	var meta gguf.Metadata
	if err := meta.Set("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err := gguf.Write(&buf, &meta, []gguf.WriteTensor{
		{Name: "blk.0.attn_q.weight", Shape: []int64{64, 64}, Type: tensor.F32, Data: f32bytes(rnd(64 * 64))},
		{Name: "blk.0.attn_norm.weight", Shape: []int64{64}, Type: tensor.F32, Data: f32bytes(rnd(64))},
		{Name: "blk.0.odd.weight", Shape: []int64{16, 48}, Type: tensor.F32, Data: f32bytes(rnd(16 * 48))},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFile(t *testing.T) {
	in := model(t)
	for _, tc := range []struct {
		to      tensor.DType
		matrix  tensor.DType // what the 64×64 matrix becomes
		odd     tensor.DType // what the 48-column matrix becomes
		maxErr  float64
		version bool
	}{
		{tensor.Q4_0, tensor.Q4_0, tensor.F16, 0.12, true},
		{tensor.Q6_K, tensor.Q8_0, tensor.F16, 0.01, true}, // 64 columns: no 256-element super-block
		{tensor.F16, tensor.F16, tensor.F16, 1e-3, false},
	} {
		t.Run(tc.to.String(), func(t *testing.T) {
			var out bytes.Buffer
			rep, err := File(context.Background(), in, &out, Options{Type: tc.to})
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]tensor.DType{"blk.0.attn_q.weight": tc.matrix, "blk.0.attn_norm.weight": tensor.F32, "blk.0.odd.weight": tc.odd}
			for name, dt := range want {
				ti, err := f.Tensor(name)
				if err != nil || ti.Type != dt {
					t.Fatalf("%s: %v, %v; want %s", name, ti.Type, err, dt)
				}
			}
			for _, tr := range rep.Tensors {
				if tr.NRMSE > tc.maxErr {
					t.Errorf("%s: NRMSE %g", tr.Name, tr.NRMSE)
				}
			}
			ft, _ := FileType(tc.to)
			if got, err := f.Meta.Uint32("general.file_type"); err != nil || got != ft {
				t.Errorf("file_type %d, %v", got, err)
			}
			if f.Meta.Has("general.quantization_version") != tc.version {
				t.Errorf("quantization_version present: %v", !tc.version)
			}
			// The converted matrix dequantizes close to the original.
			ti, _ := f.Tensor("blk.0.attn_q.weight")
			got := make([]float32, 64*64)
			if err := kernel.Dequantize(ti.Type, f.Data(ti), got); err != nil {
				t.Fatal(err)
			}
			orig := make([]float32, 64*64)
			oi, _ := in.Tensor("blk.0.attn_q.weight")
			if err := kernel.Dequantize(tensor.F32, in.Data(oi), orig); err != nil {
				t.Fatal(err)
			}
			var num, den float64
			for i := range got {
				num += float64(got[i]-orig[i]) * float64(got[i]-orig[i])
				den += float64(orig[i]) * float64(orig[i])
			}
			if e := math.Sqrt(num / den); e > tc.maxErr {
				t.Errorf("matrix NRMSE %g", e)
			}
		})
	}
}

// moeModel builds a small mixture-of-experts GGUF: a stack of 4 experts'
// 32×64 matrices, its router, an attention matrix, the output and a norm.
func moeModel(t *testing.T) *gguf.File {
	r := rand.New(rand.NewPCG(3, 4))
	rnd := func(n int) []byte {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return f32bytes(x)
	}
	var meta gguf.Metadata
	if err := meta.Set("general.architecture", "llama"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	err := gguf.Write(&buf, &meta, []gguf.WriteTensor{
		{Name: "blk.0.ffn_up_exps.weight", Shape: []int64{4, 32, 64}, Type: tensor.F32, Data: rnd(4 * 32 * 64)},
		{Name: "blk.0.ffn_gate_inp.weight", Shape: []int64{4, 64}, Type: tensor.F32, Data: rnd(4 * 64)},
		{Name: "blk.0.attn_q.weight", Shape: []int64{64, 64}, Type: tensor.F32, Data: rnd(64 * 64)},
		{Name: "output.weight", Shape: []int64{96, 64}, Type: tensor.F32, Data: rnd(96 * 64)},
		{Name: "blk.0.ffn_norm.weight", Shape: []int64{64}, Type: tensor.F32, Data: rnd(64)},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExperts: a plain type converts the expert stack too (every expert's
// rows), and MXFP4_MOE gives it MXFP4 and every other matrix Q8_0; the
// router stays as it was, as llama-quantize leaves it.
func TestExperts(t *testing.T) {
	in := moeModel(t)
	mix, err := Parse("mxfp4_moe")
	if err != nil || mix.Mix == nil {
		t.Fatalf("Parse(mxfp4_moe): %+v, %v", mix, err)
	}
	for _, tc := range []struct {
		name     string
		opt      Options
		ft       uint32
		experts  tensor.DType
		others   tensor.DType
		maxErr   float64
		typeName string
	}{
		{"Q4_0", Options{Type: tensor.Q4_0}, 2, tensor.Q4_0, tensor.Q4_0, 0.12, "Q4_0"},
		{"MXFP4", Options{Type: tensor.MXFP4}, 38, tensor.MXFP4, tensor.MXFP4, 0.15, "MXFP4"},
		{"MXFP4_MOE", mix, 38, tensor.MXFP4, tensor.Q8_0, 0.15, "MXFP4_MOE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			rep, err := File(context.Background(), in, &out, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Type != tc.typeName || rep.FileType != tc.ft {
				t.Errorf("report type %s, file type %d", rep.Type, rep.FileType)
			}
			f, err := gguf.Parse(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if ft, err := f.Meta.Uint32("general.file_type"); err != nil || ft != tc.ft {
				t.Errorf("general.file_type %d, %v; want %d", ft, err, tc.ft)
			}
			want := map[string]tensor.DType{"blk.0.ffn_up_exps.weight": tc.experts, "blk.0.ffn_gate_inp.weight": tensor.F32,
				"blk.0.attn_q.weight": tc.others, "output.weight": tc.others, "blk.0.ffn_norm.weight": tensor.F32}
			for name, dt := range want {
				ti, err := f.Tensor(name)
				if err != nil || ti.Type != dt {
					t.Fatalf("%s: %v, %v; want %s", name, ti.Type, err, dt)
				}
				oi, _ := in.Tensor(name)
				n := int(oi.Elements())
				got, orig := make([]float32, n), make([]float32, n)
				if err := kernel.Dequantize(ti.Type, f.Data(ti), got); err != nil {
					t.Fatal(err)
				}
				if err := kernel.Dequantize(tensor.F32, in.Data(oi), orig); err != nil {
					t.Fatal(err)
				}
				var num, den float64
				for i := range got {
					num += float64(got[i]-orig[i]) * float64(got[i]-orig[i])
					den += float64(orig[i]) * float64(orig[i])
				}
				if e := math.Sqrt(num / den); e > tc.maxErr {
					t.Errorf("%s: NRMSE %g", name, e)
				}
			}
		})
	}
}

func TestParseType(t *testing.T) {
	for _, s := range []string{"q4_0", "Q4_K", "f16", "BF16", "mxfp4"} {
		if _, err := ParseType(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"Q8_K", "IQ2_XXS", "Q4_K_M", ""} {
		if _, err := ParseType(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	if _, err := File(ctx, model(t), &out, Options{Type: tensor.Q8_0}); err == nil {
		t.Fatal("no error after cancellation")
	}
}
