package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/model/internal/fake"
	"github.com/glassbox-ai/glassbox/tensor"
)

func TestRoute(t *testing.T) {
	for _, tc := range []struct {
		scores []float32
		k      int
		pick   []int32
	}{
		{[]float32{0.1, 2, -1, 1.5}, 2, []int32{1, 3}},
		{[]float32{0.1, 2, -1, 1.5}, 1, []int32{1}},
		{[]float32{3, 3, 3, 1}, 2, []int32{0, 1}}, // equals: the lower index first
		{[]float32{-5, -2, -9}, 3, []int32{1, 0, 2}},
	} {
		pick, w := make([]int32, tc.k), make([]float32, tc.k)
		Route(tc.scores, pick, w, true)
		if !slices.Equal(pick, tc.pick) {
			t.Errorf("Route(%v, %d) picks %v, want %v", tc.scores, tc.k, pick, tc.pick)
		}
		// The weights are the softmax over all scores, renormalized over
		// the picked ones.
		var all, sel float64
		for _, s := range tc.scores {
			all += math.Exp(float64(s))
		}
		for _, i := range tc.pick {
			sel += math.Exp(float64(tc.scores[i])) / all
		}
		for r, i := range tc.pick {
			want := math.Exp(float64(tc.scores[i])) / all / sel
			if math.Abs(float64(w[r])-want) > 1e-6 {
				t.Errorf("Route(%v, %d): weight %d = %g, want %g", tc.scores, tc.k, r, w[r], want)
			}
		}
		// Not renormalized: the softmax probabilities as they are.
		Route(tc.scores, pick, w, false)
		for r, i := range tc.pick {
			if want := math.Exp(float64(tc.scores[i])) / all; math.Abs(float64(w[r])-want) > 1e-6 {
				t.Errorf("Route(%v, %d, no renorm): weight %d = %g, want %g", tc.scores, tc.k, r, w[r], want)
			}
		}
	}
}

// f32Matrix is an F32 matrix of random values in ±scale.
func f32Matrix(t *testing.T, rng *rand.Rand, rows, cols int, scale float64) (compute.Matrix, [][]float64) {
	t.Helper()
	data := make([]byte, 4*rows*cols)
	ref := make([][]float64, rows)
	for r := range rows {
		ref[r] = make([]float64, cols)
		for c := range cols {
			v := float32((2*rng.Float64() - 1) * scale)
			ref[r][c] = float64(v)
			binary.LittleEndian.PutUint32(data[4*(r*cols+c):], math.Float32bits(v))
		}
	}
	m, err := compute.NewMatrix(tensor.F32, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m, ref
}

// TestMoE checks Decoder.MoE over a batch of rows, routed to different
// experts, against the mixture computed in float64 from its definition:
// Mixtral's (top k renormalized) and Qwen2-MoE's (top k as they are, and
// a shared expert gated by a sigmoid).
func TestMoE(t *testing.T) {
	for _, qwen2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("qwen2moe=%v", qwen2), func(t *testing.T) { testMoE(t, qwen2) })
	}
}

// swiglu64 is Down(silu(Gate·x) ⊙ Up·x) in float64.
func swiglu64(g, u, d [][]float64, x []float32) []float64 {
	h := make([]float64, len(g))
	for j := range g {
		var a, b float64
		for i := range x {
			a += g[j][i] * float64(x[i])
			b += u[j][i] * float64(x[i])
		}
		h[j] = a / (1 + math.Exp(-a)) * b
	}
	y := make([]float64, len(d))
	for o := range d {
		for j := range h {
			y[o] += d[o][j] * h[j]
		}
	}
	return y
}

func testMoE(t *testing.T, qwen2 bool) {
	const dim, hid, ne, k, n = 32, 48, 6, 2, 7
	c := &Config{Arch: "test", Dim: dim, NumLayers: 1, NumHeads: 2, NumKVHeads: 2, HeadDim: 16, HiddenDim: 2 * hid, RopeDim: 16,
		RopeBase: 10000, NormEps: 1e-5, CtxLen: 16, Experts: ne, ExpertsUsed: k, ExpertHiddenDim: hid}
	const shHid = 100 // wider than two experts: the buffers take the widest
	if qwen2 {
		c.ExpertProbs, c.ExpertSharedHiddenDim = true, shHid
	}
	d, err := NewDecoder(c, SessionOptions{CtxLen: 16, Batch: n, Threads: 2}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	e := &Experts{}
	router, rref := f32Matrix(t, rng, ne, dim, 1)
	e.Router = router
	gref, uref, dref := make([][][]float64, ne), make([][][]float64, ne), make([][][]float64, ne)
	for x := range ne {
		var m compute.Matrix
		m, gref[x] = f32Matrix(t, rng, hid, dim, 0.3)
		e.Gate = append(e.Gate, m)
		m, uref[x] = f32Matrix(t, rng, hid, dim, 0.3)
		e.Up = append(e.Up, m)
		m, dref[x] = f32Matrix(t, rng, dim, hid, 0.3)
		e.Down = append(e.Down, m)
	}
	var sg, su, sd [][]float64
	var sgate []float64
	if qwen2 {
		e.Shared = &FFN{}
		e.Shared.Gate, sg = f32Matrix(t, rng, shHid, dim, 0.3)
		e.Shared.Up, su = f32Matrix(t, rng, shHid, dim, 0.3)
		e.Shared.Down, sd = f32Matrix(t, rng, dim, shHid, 0.3)
		for range dim {
			v := float32(rng.NormFloat64() * 0.3)
			e.SharedGate, sgate = append(e.SharedGate, v), append(sgate, float64(v))
		}
	}
	xb := make([]float32, n*dim)
	for i := range xb {
		xb[i] = float32(2*rng.Float64() - 1)
	}
	out := make([]float32, n*dim)
	d.MoE(e, out, xb, n)

	used := map[int]bool{}
	for tk := range n {
		x := xb[tk*dim : (tk+1)*dim]
		scores := make([]float64, ne)
		for ex := range ne {
			for i := range dim {
				scores[ex] += rref[ex][i] * float64(x[i])
			}
		}
		order := make([]int, ne)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return -cmpF(scores[a], scores[b]) })
		var sum float64 // over the chosen, or over all for Qwen2-MoE
		for r, ex := range order {
			if r < k || qwen2 {
				sum += math.Exp(scores[ex] - scores[order[0]])
			}
		}
		want := make([]float64, dim)
		for _, ex := range order[:k] {
			used[ex] = true
			w := math.Exp(scores[ex]-scores[order[0]]) / sum
			for o, y := range swiglu64(gref[ex], uref[ex], dref[ex], x) {
				want[o] += w * y
			}
		}
		if qwen2 {
			var g float64
			for i := range dim {
				g += sgate[i] * float64(x[i])
			}
			for o, y := range swiglu64(sg, su, sd, x) {
				want[o] += y / (1 + math.Exp(-g))
			}
		}
		for o := range dim {
			if got := float64(out[tk*dim+o]); math.Abs(got-want[o]) > 1e-4*(1+math.Abs(want[o])) {
				t.Fatalf("row %d, value %d: %g, want %g", tk, o, got, want[o])
			}
		}
	}
	// One token alone (generation's path: its experts' gate and up in one
	// loop) gives what the batch gave it.
	one := make([]float32, dim)
	for tk := range n {
		d.MoE(e, one, xb[tk*dim:(tk+1)*dim], 1)
		for o := range dim {
			if a, b := float64(one[o]), float64(out[tk*dim+o]); math.Abs(a-b) > 1e-6*(1+math.Abs(b)) {
				t.Fatalf("row %d alone, value %d: %g, in the batch %g", tk, o, a, b)
			}
		}
	}
	if len(used) < 4 {
		t.Errorf("the rows used %d of %d experts; the test should route to most", len(used), ne)
	}
	// A session of batch 1 has no room for a token's two experts side by
	// side: it takes the general path, with the same result.
	d1, err := NewDecoder(c, SessionOptions{CtxLen: 16, Batch: 1, Threads: 1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	d1.MoE(e, one, xb[:dim], 1)
	for o := range dim {
		if a, b := float64(one[o]), float64(out[o]); math.Abs(a-b) > 1e-6*(1+math.Abs(b)) {
			t.Fatalf("batch 1, value %d: %g, want %g", o, a, b)
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestReadConfigExperts: an architecture that runs no mixture of experts
// refuses a file with experts, naming the ones that do.
func TestReadConfigExperts(t *testing.T) {
	s := &fake.Spec{Meta: map[string]any{
		"general.architecture": "qwen2", "qwen2.embedding_length": uint32(8), "qwen2.block_count": uint32(1),
		"qwen2.attention.head_count": uint32(2), "qwen2.feed_forward_length": uint32(16), "qwen2.context_length": uint32(32),
		"qwen2.attention.layer_norm_rms_epsilon": float32(1e-6), "qwen2.expert_count": uint32(4), "qwen2.expert_used_count": uint32(2),
		"qwen2.expert_feed_forward_length": uint32(12)},
		Shapes: map[string][]int64{"token_embd.weight": {10, 8}}}
	f, err := s.File()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfig(f, "qwen2"); err == nil || !strings.Contains(err.Error(), "mixture-of-experts files (expert_count 4) are not supported for this architecture (supported: "+MoEArchs+")") {
		t.Errorf("ReadConfig: %v", err)
	}
	c, err := ReadConfigMoE(f, "qwen2")
	if err != nil || c.Experts != 4 || c.ExpertsUsed != 2 || c.ExpertHiddenDim != 12 || c.BufferHiddenDim() != 12 {
		t.Errorf("ReadConfigMoE: %+v, %v", c, err)
	}
}
