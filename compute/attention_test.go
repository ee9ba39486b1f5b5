package compute

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// naiveAttention is the float64 reference over unrounded k, v.
func naiveAttention(q, k, v []float32, n, start, numHeads, numKVHeads, headDim int, scale float64, window int) []float64 {
	return naiveCapped(q, k, v, n, start, numHeads, numKVHeads, headDim, scale, window, 0, nil)
}

// naiveCapped is naiveAttention with scores soft-capped at softcap (0: off)
// and, when sinks is set, each head's sink logit in its softmax's sum.
func naiveCapped(q, k, v []float32, n, start, numHeads, numKVHeads, headDim int, scale float64, window int, softcap float64, sinks []float32) []float64 {
	out := make([]float64, n*numHeads*headDim)
	kvDim := numKVHeads * headDim
	for i := range n {
		pos := start + i
		for h := range numHeads {
			kvh := h / (numHeads / numKVHeads)
			var ws []float64
			var mx = math.Inf(-1)
			for p := 0; p <= pos; p++ {
				s := math.Inf(-1)
				if window <= 0 || p > pos-window {
					s = 0
					for d := range headDim {
						s += float64(q[(i*numHeads+h)*headDim+d]) * float64(k[p*kvDim+kvh*headDim+d])
					}
					s *= scale
					if softcap > 0 {
						s = softcap * math.Tanh(s/softcap)
					}
				}
				ws = append(ws, s)
				mx = max(mx, s)
			}
			var sum float64
			if sinks != nil {
				mx = max(mx, float64(sinks[h]))
				sum = math.Exp(float64(sinks[h]) - mx)
			}
			for p := range ws {
				ws[p] = math.Exp(ws[p] - mx)
				sum += ws[p]
			}
			for p := range ws {
				for d := range headDim {
					out[(i*numHeads+h)*headDim+d] += ws[p] / sum * float64(v[p*kvDim+kvh*headDim+d])
				}
			}
		}
	}
	return out
}

func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	// ctxLen is not a whole number of F16 key blocks (16 positions).
	const numKVHeads, ctxLen = 2, 40
	pool := NewPool(2)
	defer pool.Close()
	for _, tc := range []struct {
		name     string
		dt       tensor.DType
		numHeads int // 4: groups of 2 query heads (one at a time); 8: of 4 (four at once)
		n, start int
		window   int
		softcap  float64
		tol      float64
		headDim  int  // 0: 16
		sinks    bool // a sink logit per head
	}{
		{"f32 prefill", tensor.F32, 4, 12, 0, 0, 0, 1e-5, 0, false},
		{"f32 decode", tensor.F32, 4, 1, 30, 0, 0, 1e-5, 0, false},
		{"f16 chunk", tensor.F16, 4, 9, 20, 0, 0, 3e-3, 0, false},
		{"f16 chunk, groups of 4", tensor.F16, 8, 9, 20, 0, 0, 3e-3, 0, false},
		{"f32 window", tensor.F32, 4, 10, 25, 8, 0, 1e-5, 0, false},
		{"f16 window", tensor.F16, 4, 1, 39, 5, 0, 3e-3, 0, false},
		{"f16 window chunk, groups of 4", tensor.F16, 8, 10, 25, 8, 0, 3e-3, 0, false},
		// Scores of q ~ 4·N(0,1) reach ±16·√headDim·scale = ±16: a cap of
		// 2 flattens them, so a missing or misplaced cap shows.
		{"f32 softcap", tensor.F32, 4, 6, 20, 0, 2, 1e-5, 0, false},
		{"f16 softcap window", tensor.F16, 4, 1, 39, 7, 2, 3e-3, 0, false},
		// Q8_0 rounds q, k and v to 8 bits per 32 dimensions: int8 row dots
		// for the scores, the four-head value loop (64 dimensions: the
		// assembly; 32: the generic twin) with a group's heads padded to four.
		{"q8_0 decode, groups of 4", tensor.Q8_0, 8, 1, 30, 0, 0, 0.03, 64, false},
		{"q8_0 prefill, groups of 2", tensor.Q8_0, 4, 12, 0, 0, 0, 0.03, 64, false},
		{"q8_0 window chunk, groups of 4", tensor.Q8_0, 8, 10, 25, 8, 0, 0.03, 32, false},
		{"q8_0 softcap, groups of 2", tensor.Q8_0, 4, 6, 20, 0, 2, 0.03, 64, false},
		// Sinks of 3 + N(0,1) take a large share of each head's weight.
		{"f32 sinks window", tensor.F32, 4, 10, 25, 8, 0, 1e-5, 0, true},
		{"f16 sinks, groups of 2", tensor.F16, 4, 1, 39, 0, 0, 3e-3, 0, true},
		{"f16 sinks window chunk, groups of 4", tensor.F16, 8, 10, 25, 8, 0, 3e-3, 0, true},
		{"q8_0 sinks, groups of 4 padded", tensor.Q8_0, 6, 3, 30, 0, 0, 0.03, 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			numHeads, headDim := tc.numHeads, tc.headDim
			if headDim == 0 {
				headDim = 16
			}
			total := tc.start + tc.n
			kvDim := numKVHeads * headDim
			k, v := randNormal(r, total*kvDim, 1), randNormal(r, total*kvDim, 1)
			c := NewKVCache(tc.dt, ctxLen, numKVHeads, headDim)
			for p := range total {
				c.Store(p, k[p*kvDim:], v[p*kvDim:])
			}
			keyPositions := ctxLen // F16 and Q8_0 keys: whole blocks of 16 positions
			if tc.dt == tensor.F16 || tc.dt == tensor.Q8_0 {
				keyPositions = (ctxLen + 15) / 16 * 16
			}
			if hb, _ := tc.dt.RowBytes(int64(headDim)); c.Bytes() != int64(ctxLen+keyPositions)*numKVHeads*hb {
				t.Errorf("Bytes() = %d, want %d", c.Bytes(), int64(ctxLen+keyPositions)*numKVHeads*hb)
			}
			sd := 1.0
			if tc.softcap > 0 {
				sd = 4
			}
			q := randNormal(r, tc.n*numHeads*headDim, sd)
			out := make([]float32, len(q)+1)
			out[len(q)] = 7
			scale := 1 / math.Sqrt(float64(headDim))
			var sinks []float32
			if tc.sinks {
				sinks = randNormal(r, numHeads, 1)
				for h := range sinks {
					sinks[h] += 3
				}
			}
			Attention(pool, out, q, tc.n, tc.start, c, numHeads, Attn{Scale: float32(scale), Window: tc.window, Softcap: float32(tc.softcap), Sinks: sinks})
			want := naiveCapped(q, k, v, tc.n, tc.start, numHeads, numKVHeads, headDim, scale, tc.window, tc.softcap, sinks)
			if tc.sinks {
				// The sinks must matter: attention without them is far off.
				un := naiveCapped(q, k, v, tc.n, tc.start, numHeads, numKVHeads, headDim, scale, tc.window, tc.softcap, nil)
				d := 0.0
				for i := range un {
					d = max(d, math.Abs(un[i]-want[i]))
				}
				if d < 0.1 {
					t.Fatalf("the sinks change the reference by only %g: the case tests nothing", d)
				}
			}
			if tc.softcap > 0 {
				// The cap must matter here: uncapped attention is far off.
				un := naiveAttention(q, k, v, tc.n, tc.start, numHeads, numKVHeads, headDim, scale, tc.window)
				d := 0.0
				for i := range un {
					d = max(d, math.Abs(un[i]-want[i]))
				}
				if d < 0.05 {
					t.Fatalf("the soft-cap changes the reference by only %g: the case tests nothing", d)
				}
			}
			worst := 0.0
			for i := range want {
				worst = max(worst, math.Abs(float64(out[i])-want[i]))
				if math.Abs(float64(out[i])-want[i]) > tc.tol {
					t.Fatalf("out[%d] = %g, want %g", i, out[i], want[i])
				}
			}
			t.Logf("largest error %.2g", worst)
			if out[len(q)] != 7 {
				t.Fatal("wrote past the output")
			}
		})
	}
}

func TestAttentionAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	r := rand.New(rand.NewPCG(6, 6))
	p := NewPool(2)
	defer p.Close()
	c := NewKVCache(tensor.F16, 64, 2, 64)
	for pos := range 40 {
		c.Store(pos, randNormal(r, 128, 1), randNormal(r, 128, 1))
	}
	q, out := randNormal(r, 4*64, 1), make([]float32, 4*64)
	Attention(p, out, q, 1, 39, c, 4, Attn{Scale: 0.125})
	if a := testing.AllocsPerRun(50, func() { Attention(p, out, q, 1, 39, c, 4, Attn{Scale: 0.125}) }); a >= 1 {
		t.Errorf("%.1f allocations per decode step", a)
	}
}

// TestAttentionGroups: grouped-query attention with groups of 4 and 8
// (whose heads read the keys four at a time), 6 (four, then two one at a
// time) and 1 matches the naive reference, and gives the same bits on 1, 2
// and 3 threads.
func TestAttentionGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	const headDim, ctxLen = 64, 80
	for _, g := range []struct{ heads, kvHeads, n, start int }{{8, 2, 1, 70}, {16, 2, 5, 30}, {12, 3, 3, 50}, {12, 2, 4, 40}, {6, 6, 2, 20}} {
		kvDim := g.kvHeads * headDim
		total := g.start + g.n
		k, v := randNormal(r, total*kvDim, 1), randNormal(r, total*kvDim, 1)
		c := NewKVCache(tensor.F16, ctxLen, g.kvHeads, headDim)
		for p := range total {
			c.Store(p, k[p*kvDim:], v[p*kvDim:])
		}
		q := randNormal(r, g.n*g.heads*headDim, 1)
		scale := 1 / math.Sqrt(headDim)
		want := naiveAttention(q, k, v, g.n, g.start, g.heads, g.kvHeads, headDim, scale, 0)
		var first []float32
		for _, threads := range []int{1, 2, 3} {
			p := NewPool(threads)
			out := make([]float32, len(q))
			Attention(p, out, q, g.n, g.start, c, g.heads, Attn{Scale: float32(scale)})
			p.Close()
			for i := range want {
				if math.Abs(float64(out[i])-want[i]) > 3e-3 {
					t.Fatalf("%d heads over %d, %d threads: out[%d] = %g, want %g", g.heads, g.kvHeads, threads, i, out[i], want[i])
				}
			}
			if first == nil {
				first = out
				continue
			}
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(first[i]) {
					t.Fatalf("%d heads over %d: %d threads give out[%d] = %g, 1 thread %g", g.heads, g.kvHeads, threads, i, out[i], first[i])
				}
			}
		}
	}
}
