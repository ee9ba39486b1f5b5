package clip

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// tiny is a small text transformer with CLIP's structure and window.
var tiny = Config{Dim: 64, NumHeads: 4, HiddenDim: 256, NumLayers: 3, CtxLen: 77, VocabSize: 1000}

// randomWeights returns a Source with random weights of shape c in dtype
// (F32 or F16), and the same values as float64 by name.
func randomWeights(c Config, dt tensor.DType, seed uint64) (*checkpoint.Map, map[string][]float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := &checkpoint.Map{Label: "random.safetensors", Tensors: map[string]*checkpoint.Tensor{}}
	vals := map[string][]float64{}
	add := func(name string, shape []int, gen func() float32) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		size := 4
		if dt == tensor.F16 {
			size = 2
		}
		data := make([]byte, size*n)
		v := make([]float64, n)
		for i := range v {
			f := gen()
			if dt == tensor.F16 {
				h := kernel.FP32ToFP16(f)
				binary.LittleEndian.PutUint16(data[2*i:], h)
				f = kernel.FP16ToFP32(h)
			} else {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
			}
			v[i] = float64(f)
		}
		m.Tensors[name] = &checkpoint.Tensor{Name: name, DType: dt, Shape: shape, Data: data}
		vals[name] = v
	}
	u := func() float32 { return float32(2*rng.Float64() - 1) }
	lin := func(name string, out, in int) {
		s := float32(math.Sqrt(3 / float64(in)))
		add(name+".weight", []int{out, in}, func() float32 { return u() * s })
		add(name+".bias", []int{out}, func() float32 { return u() * 0.1 })
	}
	norm := func(name string) {
		add(name+".weight", []int{c.Dim}, func() float32 { return 1 + 0.125*u() })
		add(name+".bias", []int{c.Dim}, func() float32 { return 0.125 * u() })
	}
	add("embeddings.token_embedding.weight", []int{c.VocabSize, c.Dim}, u)
	add("embeddings.position_embedding.weight", []int{c.CtxLen, c.Dim}, u)
	for l := range c.NumLayers {
		p := fmt.Sprintf("encoder.layers.%d.", l)
		norm(p + "layer_norm1")
		for _, n := range []string{"q_proj", "k_proj", "v_proj", "out_proj"} {
			lin(p+"self_attn."+n, c.Dim, c.Dim)
		}
		norm(p + "layer_norm2")
		lin(p+"mlp.fc1", c.HiddenDim, c.Dim)
		lin(p+"mlp.fc2", c.Dim, c.HiddenDim)
	}
	norm("final_layer_norm")
	return m, vals
}

// reference is the text transformer written plainly in float64 (exact
// quick-GELU and softmax), with sd.cpp's clip skip and emphasis rules:
// the specification Encode is checked against.
func reference(c Config, w map[string][]float64, ids []int32, weights []float32, clipSkip int) []float64 {
	d, hd := c.Dim, c.Dim/c.NumHeads
	layerNorm := func(x []float64, name string) []float64 {
		out := make([]float64, len(x))
		g, b := w[name+".weight"], w[name+".bias"]
		for i := 0; i < len(x); i += d {
			row := x[i : i+d]
			var mean, v float64
			for _, a := range row {
				mean += a
			}
			mean /= float64(d)
			for _, a := range row {
				v += (a - mean) * (a - mean)
			}
			s := 1 / math.Sqrt(v/float64(d)+normEps)
			for j, a := range row {
				out[i+j] = (a-mean)*s*g[j] + b[j]
			}
		}
		return out
	}
	linear := func(x []float64, name string, in, outDim int) []float64 {
		W, b := w[name+".weight"], w[name+".bias"]
		n := len(x) / in
		out := make([]float64, n*outDim)
		for i := range n {
			for r := range outDim {
				s := b[r]
				for k := range in {
					s += x[i*in+k] * W[r*in+k]
				}
				out[i*outDim+r] = s
			}
		}
		return out
	}
	var all []float64
	for k := 0; k < len(ids); k += c.CtxLen {
		n := c.CtxLen
		x := make([]float64, n*d)
		for i := range n {
			for j := range d {
				x[i*d+j] = w["embeddings.token_embedding.weight"][int(ids[k+i])*d+j] + w["embeddings.position_embedding.weight"][i*d+j]
			}
		}
		for l := range c.NumLayers - clipSkip + 1 {
			p := fmt.Sprintf("encoder.layers.%d.", l)
			h := layerNorm(x, p+"layer_norm1")
			q, kk, v := linear(h, p+"self_attn.q_proj", d, d), linear(h, p+"self_attn.k_proj", d, d), linear(h, p+"self_attn.v_proj", d, d)
			att := make([]float64, n*d)
			for head := range c.NumHeads {
				for i := range n {
					sc := make([]float64, i+1) // causal: keys 0..i
					m := math.Inf(-1)
					for j := range sc {
						for e := range hd {
							sc[j] += q[i*d+head*hd+e] * kk[j*d+head*hd+e]
						}
						sc[j] /= math.Sqrt(float64(hd))
						m = max(m, sc[j])
					}
					var z float64
					for j := range sc {
						sc[j] = math.Exp(sc[j] - m)
						z += sc[j]
					}
					for j := range sc {
						for e := range hd {
							att[i*d+head*hd+e] += sc[j] / z * v[j*d+head*hd+e]
						}
					}
				}
			}
			o := linear(att, p+"self_attn.out_proj", d, d)
			for i := range x {
				x[i] += o[i]
			}
			f := linear(layerNorm(x, p+"layer_norm2"), p+"mlp.fc1", d, c.HiddenDim)
			for i, a := range f {
				f[i] = a / (1 + math.Exp(-1.702*a))
			}
			o = linear(f, p+"mlp.fc2", c.HiddenDim, d)
			for i := range x {
				x[i] += o[i]
			}
		}
		h := layerNorm(x, "final_layer_norm")
		if weights != nil {
			ws := weights[k : k+n]
			before := meanF64(h)
			for i := range n {
				for j := range d {
					h[i*d+j] *= float64(ws[i])
				}
			}
			if after := meanF64(h); after != 0 {
				for i := range h {
					h[i] *= before / after
				}
			}
		}
		all = append(all, h...)
	}
	return all
}

func meanF64(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// compare returns the NMSE Σ(got-want)²/Σwant² and the largest |got-want|.
func compare(got []float32, want []float64) (nmse, maxAbs float64) {
	var num, den float64
	for i, w := range want {
		e := float64(got[i]) - w
		num += e * e
		den += w * w
		maxAbs = max(maxAbs, math.Abs(e))
	}
	return num / den, maxAbs
}

func randomIDs(rng *rand.Rand, windows, vocab int) []int32 {
	ids := make([]int32, windows*77)
	for i := range ids {
		ids[i] = int32(rng.IntN(vocab))
	}
	return ids
}

// TestEncodeReference checks Encode against the float64 reference with F32
// and F16 weights, clip skip, emphasis weights and several windows.
func TestEncodeReference(t *testing.T) {
	p := compute.NewPool(2)
	defer p.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	emph := func(windows int) []float32 {
		w := make([]float32, windows*77)
		for i := range w {
			w[i] = 1
			if i%77 > 0 && rng.IntN(3) == 0 {
				w[i] = []float32{1.1, 1.21, 0.909090877, 1.5, 0.5}[rng.IntN(5)]
			}
		}
		return w
	}
	tests := []struct {
		name     string
		dt       tensor.DType
		windows  int
		clipSkip int
		weights  bool
		exact    bool
		maxNMSE  float64
	}{
		{"f32 exact gelu", tensor.F32, 1, 0, false, true, 1e-10},
		{"f16 exact gelu", tensor.F16, 1, 0, false, true, 1e-10},
		{"f16 gelu table", tensor.F16, 1, 0, false, false, 1e-6},
		{"f32 clip skip 2", tensor.F32, 1, 2, false, true, 1e-10},
		{"f32 clip skip 3 (one block)", tensor.F32, 1, 3, false, true, 1e-10},
		{"f16 emphasis, 3 windows", tensor.F16, 3, 0, true, true, 1e-10},
		{"f16 emphasis, clip skip 2, gelu table", tensor.F16, 2, 2, true, false, 1e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, vals := randomWeights(tiny, tt.dt, 1)
			e, err := bind(src, tiny)
			if err != nil {
				t.Fatal(err)
			}
			ids := randomIDs(rng, tt.windows, tiny.VocabSize)
			var weights []float32
			if tt.weights {
				weights = emph(tt.windows)
			}
			got, err := e.Encode(context.Background(), p, ids, weights, Options{ClipSkip: tt.clipSkip, ExactGELU: tt.exact})
			if err != nil {
				t.Fatal(err)
			}
			skip := max(tt.clipSkip, 1)
			nmse, maxAbs := compare(got, reference(tiny, vals, ids, weights, skip))
			t.Logf("NMSE %.3g, max abs %.3g", nmse, maxAbs)
			if nmse > tt.maxNMSE {
				t.Errorf("NMSE %.3g against the reference, want ≤ %.3g", nmse, tt.maxNMSE)
			}
			// The reference with one block more or less, or without the
			// weights, is far off: the comparison can tell.
			other := reference(tiny, vals, ids, nil, skip%tiny.NumLayers+1)
			if n, _ := compare(got, other); n < 1e-3 {
				t.Errorf("NMSE %.3g against a reference with another clip skip: the test cannot see a wrong layer count", n)
			}
		})
	}
}

// TestEmphasisMean checks that emphasis keeps each window's mean and
// scales its rows relative to each other.
func TestEmphasisMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	h := make([]float32, 77*8)
	for i := range h {
		h[i] = float32(rng.NormFloat64()) + 0.3
	}
	w := make([]float32, 77)
	for i := range w {
		w[i] = 1
	}
	w[3] = 1.5
	orig := append([]float32(nil), h...)
	before := mean(h)
	applyWeights(h, w, 8)
	if after := mean(h); math.Abs(float64(after-before)) > 1e-6*math.Abs(float64(before)) {
		t.Errorf("mean %v → %v", before, after)
	}
	r0, r3 := h[0]/orig[0], h[3*8]/orig[3*8]
	if math.Abs(float64(r3/r0)-1.5) > 1e-5 {
		t.Errorf("row 3 / row 0 scaled %v, want 1.5", r3/r0)
	}
	copy(h, orig)
	for i := range w {
		w[i] = 1
	}
	applyWeights(h, w, 8)
	for i := range h {
		if h[i] != orig[i] {
			t.Fatal("weights of 1 changed the window")
		}
	}
}

// TestGELUTable checks the f16 table against quickGELU32 rounded to f16
// at every f16 input, and a few values of the function itself.
func TestGELUTable(t *testing.T) {
	tb := geluTable()
	for h := range 1 << 16 {
		x := kernel.FP16ToFP32(uint16(h))
		want := kernel.FP16ToFP32(kernel.FP32ToFP16(quickGELU32(x)))
		if got := tb[h]; got != want && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
			t.Fatalf("table[%#04x] = %v, want %v", h, got, want)
		}
	}
	for _, c := range []struct{ x, want float64 }{{0, 0}, {1, 0.8457957659}, {-1, -0.1542042341}, {3, 2.9819286903}} {
		if got := float64(quickGELU32(float32(c.x))); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("quickGELU(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestBindErrors checks that binding names the tensor and the shapes, and
// that a position_ids tensor is tolerated.
func TestBindErrors(t *testing.T) {
	src, _ := randomWeights(tiny, tensor.F16, 2)
	src.Tensors["embeddings.position_ids"] = &checkpoint.Tensor{Name: "embeddings.position_ids", DType: tensor.I64, Shape: []int{1, 77}, Data: make([]byte, 8*77)}
	if _, err := bind(src, tiny); err != nil {
		t.Fatalf("with position_ids: %v", err)
	}
	missing, _ := randomWeights(tiny, tensor.F16, 2)
	delete(missing.Tensors, "encoder.layers.1.mlp.fc2.weight")
	_, err := bind(missing, tiny)
	if !errors.Is(err, checkpoint.ErrMissing) || !strings.Contains(err.Error(), `"encoder.layers.1.mlp.fc2.weight"`) {
		t.Errorf("missing tensor: %v", err)
	}
	shaped, _ := randomWeights(tiny, tensor.F16, 2)
	shaped.Tensors["final_layer_norm.bias"].Shape = []int{32, 2}
	_, err = bind(shaped, tiny)
	if !errors.Is(err, checkpoint.ErrShape) || !strings.Contains(err.Error(), "has shape [32 2], want [64]") {
		t.Errorf("wrong shape: %v", err)
	}
}

// TestEncodeErrors checks the encode-stage errors of bad input.
func TestEncodeErrors(t *testing.T) {
	src, _ := randomWeights(tiny, tensor.F16, 2)
	e, err := bind(src, tiny)
	if err != nil {
		t.Fatal(err)
	}
	p := compute.NewPool(1)
	defer p.Close()
	ids := make([]int32, 77)
	bad := append([]int32(nil), ids...)
	bad[5] = 1000
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		ids     []int32
		weights []float32
		opts    Options
		want    string
	}{
		{"partial window", context.Background(), ids[:70], nil, Options{}, "70 token ids are not whole windows of 77"},
		{"no ids", context.Background(), nil, nil, Options{}, "0 token ids"},
		{"weights", context.Background(), ids, make([]float32, 3), Options{}, "3 weights for 77 token ids"},
		{"id", context.Background(), bad, nil, Options{}, "token 5 is id 1000, outside the vocabulary (0..999)"},
		{"clip skip", context.Background(), ids, nil, Options{ClipSkip: 4}, "clip skip 4: the text encoder has 3 layers"},
		{"cancelled", cancelled, ids, nil, Options{}, "window 0: layer 0: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Encode(tt.ctx, p, tt.ids, tt.weights, tt.opts)
			var ee *Error
			if !errors.As(err, &ee) || ee.Stage() != "encode" || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Encode: %v, want an encode-stage error containing %q", err, tt.want)
			}
		})
	}
	if _, err := e.Encode(context.Background(), p, ids, nil, Options{ClipSkip: -1}); err != nil {
		t.Errorf("clip skip -1 (sd.cpp's default): %v", err)
	}
	if _, err := e.Encode(cancelled, p, ids, nil, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v does not wrap context.Canceled", err)
	}
}

// TestEncodeAllocs checks that the layers allocate nothing: one window
// and sixteen (48 more blocks) allocate about the same, the per-call
// buffers and the output (a pool of compute's may refill now and then).
func TestEncodeAllocs(t *testing.T) {
	src, _ := randomWeights(tiny, tensor.F16, 2)
	e, err := bind(src, tiny)
	if err != nil {
		t.Fatal(err)
	}
	p := compute.NewPool(1)
	defer p.Close()
	one, many := make([]int32, 77), make([]int32, 16*77)
	ctx := context.Background()
	a1 := testing.AllocsPerRun(10, func() { e.Encode(ctx, p, one, nil, Options{}) })
	a16 := testing.AllocsPerRun(10, func() { e.Encode(ctx, p, many, nil, Options{}) })
	if a16 > a1+4 || a1 > 24 {
		t.Errorf("allocations: %v for one window, %v for sixteen", a1, a16)
	}
}
