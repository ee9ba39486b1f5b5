package sample

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestExp(t *testing.T) {
	xs := []float64{0, 1, -1, 0.5, -0.5, 1e-10, -1e-10, 10, -10, -50.25, -700, -740, -745, 700, 709.7, 88.7, -0.34657359, 0.34657359}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		xs = append(xs, r.Float64()*1400-700)
	}
	for _, x := range xs {
		got, want := expf64(x), math.Exp(x)
		tol := 2e-15
		if want < 1e-300 {
			tol = 1e-12 // subnormal range: fewer significant bits
		}
		if d := math.Abs(got-want) / want; d > tol {
			t.Errorf("expf64(%v) = %v, math.Exp = %v (rel err %.3g)", x, got, want, d)
		}
	}
	for _, c := range []struct{ x, want float64 }{
		{math.Inf(-1), 0}, {-800, 0}, {800, math.Inf(1)}, {math.Inf(1), math.Inf(1)},
	} {
		if got := expf64(c.x); got != c.want {
			t.Errorf("expf64(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := expf64(math.NaN()); !math.IsNaN(got) {
		t.Errorf("expf64(NaN) = %v, want NaN", got)
	}
}

func TestGreedy(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name    string
		p       Params
		logits  []float32
		history []int
		want    int
	}{
		{"argmax", Params{}, []float32{0.1, 3, -2, 2.9}, nil, 1},
		{"lowest id wins ties", Params{}, []float32{1, 5, 5, 5}, nil, 1},
		{"negative logits", Params{}, []float32{-3, -1, -2}, nil, 1},
		{"NaN is -Inf", Params{}, []float32{nan, -100, nan}, nil, 1},
		{"all NaN gives id 0", Params{}, []float32{nan, nan}, nil, 0},
		{"+Inf wins", Params{}, []float32{1, inf, 2}, nil, 1},
		{"single token", Params{}, []float32{-7}, nil, 0},
		{"empty logits", Params{}, nil, nil, -1},
		{"negative temperature is greedy", Params{Temperature: -1}, []float32{0, 1, 0}, nil, 1},
		{"top-k ignored when greedy", Params{TopK: 1}, []float32{0, 1, 2}, nil, 2},
		{"repeat penalty demotes", Params{RepeatPenalty: 2, PenaltyLastN: 64}, []float32{1, 3, 2}, []int{1}, 2},
		{"window 0 disables penalties", Params{RepeatPenalty: 2}, []float32{1, 3, 2}, []int{1}, 1},
		{"repeat penalty on negative multiplies", Params{RepeatPenalty: 2, PenaltyLastN: -1}, []float32{-1, -0.6, -0.8}, []int{1}, 2},
		{"penalty window excludes old ids", Params{RepeatPenalty: 10, PenaltyLastN: 2}, []float32{1, 3, 2}, []int{1, 0, 0}, 1},
		{"negative window is whole history", Params{RepeatPenalty: 10, PenaltyLastN: -1}, []float32{1, 3, 2}, []int{1, 0, 0}, 2},
		{"presence penalty", Params{PresencePenalty: 1.5, PenaltyLastN: 64}, []float32{0, 2, 1}, []int{1}, 2},
		{"frequency penalty counts", Params{FreqPenalty: 0.4, PenaltyLastN: 64}, []float32{0, 2, 1}, []int{1, 1, 1}, 2},
		{"frequency penalty too small", Params{FreqPenalty: 0.4, PenaltyLastN: 64}, []float32{0, 2, 1}, []int{1, 1}, 1},
		{"history out of range ignored", Params{RepeatPenalty: 5, PenaltyLastN: 64}, []float32{0, 2, 1}, []int{-1, 7, 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.p).Sample(tt.logits, tt.history); got != tt.want {
				t.Errorf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPenaltyValues(t *testing.T) {
	// llama.cpp's rule: divide positive logits, multiply non-positive ones,
	// then subtract count·freq + presence.
	p := Params{RepeatPenalty: 1.25, FreqPenalty: 0.5, PresencePenalty: 0.25, Temperature: 1, PenaltyLastN: 64}
	s := New(p)
	s.load([]float32{2, -2, 0, 5})
	s.penalize([]int{0, 1, 1, 2, 9})
	want := []float32{2/1.25 - 0.5 - 0.25, -2*1.25 - 1 - 0.25, 0 - 0.5 - 0.25, 5}
	for i, c := range s.cands {
		if c.logit != want[i] {
			t.Errorf("logit[%d] = %v, want %v", i, c.logit, want[i])
		}
	}
	// The counts scratch must be clean for the next call.
	for i, n := range s.counts {
		if n != 0 {
			t.Errorf("counts[%d] = %d after penalize, want 0", i, n)
		}
	}
}

// slowSurvivors is the specification of the filter chain: a full sort,
// then each filter exactly as llama.cpp states it, in float64.
func slowSurvivors(logits []float32, history []int, p Params) []int {
	p = p.normalized()
	l := make([]float64, len(logits))
	for i, x := range logits {
		l[i] = float64(x)
	}
	if p.penalties() {
		win := history
		if p.PenaltyLastN > 0 && len(win) > p.PenaltyLastN {
			win = win[len(win)-p.PenaltyLastN:]
		}
		count := map[int]int{}
		for _, id := range win {
			count[id]++
		}
		for id, c := range count {
			if id < 0 || id >= len(l) {
				continue
			}
			x := float32(l[id])
			if x <= 0 {
				x *= p.RepeatPenalty
			} else {
				x /= p.RepeatPenalty
			}
			x -= float32(c)*p.FreqPenalty + p.PresencePenalty
			l[id] = float64(x)
		}
	}
	ids := make([]int, len(l))
	for i := range ids {
		ids[i] = i
	}
	slices.SortFunc(ids, func(a, b int) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return a - b
	})
	if p.TopK > 0 && p.TopK < len(ids) {
		ids = ids[:p.TopK]
	}
	if p.TopP < 1 {
		var total, cum float64
		for _, id := range ids {
			total += math.Exp(l[id] - l[ids[0]])
		}
		for i, id := range ids {
			cum += math.Exp(l[id] - l[ids[0]])
			if cum >= float64(p.TopP)*total {
				ids = ids[:i+1]
				break
			}
		}
	}
	if p.MinP > 0 {
		k := 0
		for _, id := range ids {
			if l[id] >= l[ids[0]]+math.Log(float64(p.MinP)) {
				ids[k] = id
				k++
			}
		}
		ids = ids[:k]
	}
	slices.Sort(ids)
	return ids
}

func TestFilterMatchesSlowTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	params := []Params{
		{TopK: 1}, {TopK: 5}, {TopK: 40}, {TopK: 100000},
		{TopP: 0.1}, {TopP: 0.5}, {TopP: 0.9}, {TopP: 0.99},
		{MinP: 0.05}, {MinP: 0.5}, {MinP: 1},
		{TopK: 40, TopP: 0.95, MinP: 0.05},
		{TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.3, FreqPenalty: 0.2, PresencePenalty: 0.1, PenaltyLastN: 64},
		{TopP: 0.7, MinP: 0.1, RepeatPenalty: 1.1, PenaltyLastN: 16},
		{TopP: 0.7, RepeatPenalty: 1.1, PenaltyLastN: -1},
		{TopK: 10, RepeatPenalty: 3}, // window 0: penalties off
	}
	for _, n := range []int{1, 2, 3, 17, 64, 65, 300, 5000} {
		for _, scale := range []float64{0.5, 3, 20} {
			for _, p := range params {
				p.Temperature = 1
				logits := make([]float32, n)
				for i := range logits {
					logits[i] = float32(r.NormFloat64() * scale)
				}
				hist := make([]int, r.IntN(100))
				for i := range hist {
					hist[i] = r.IntN(n + 5)
				}
				s := New(p)
				s.load(logits)
				if s.p.penalties() {
					s.penalize(hist)
				}
				var got []int
				for _, c := range s.filter() {
					got = append(got, int(c.id))
				}
				slices.Sort(got)
				want := slowSurvivors(logits, hist, p)
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d scale=%v %+v: survivors %v, want %v", n, scale, p, head(got), head(want))
				}
			}
		}
	}
}

func head(x []int) []int {
	if len(x) > 20 {
		return x[:20]
	}
	return x
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	run := func(seed uint64) []int {
		s := New(Params{Temperature: 1.5, TopP: 0.95, Seed: seed, RepeatPenalty: 1.1, PenaltyLastN: 64})
		var out []int
		for i := 0; i < 200; i++ {
			out = append(out, s.Sample(logits, out))
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different tokens")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave identical 200-token sequences")
	}
	// Pin the sequence: the sampler must give the same tokens on every
	// platform and Go release (PCG-DXSM and expf64 are fixed algorithms).
	want := pinnedSeq42
	if !slices.Equal(a[:len(want)], want) {
		t.Errorf("seed 42 sequence starts %v, want %v", a[:len(want)], want)
	}
	s := New(Params{Temperature: 1.5, TopP: 0.95, Seed: 1, RepeatPenalty: 1.1, PenaltyLastN: 64})
	s.Reseed(42)
	var again []int
	for i := 0; i < 200; i++ {
		again = append(again, s.Sample(logits, again))
	}
	if !slices.Equal(a, again) {
		t.Error("Reseed(42) did not restart the seed-42 sequence")
	}
}

// softmax64 returns softmax(l/T) in float64.
func softmax64(l []float32, T float64) []float64 {
	p := make([]float64, len(l))
	mx := math.Inf(-1)
	for _, x := range l {
		mx = max(mx, float64(x))
	}
	var sum float64
	for i, x := range l {
		p[i] = math.Exp((float64(x) - mx) / T)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// chiSquare returns Pearson's statistic of counts against probabilities.
func chiSquare(counts []int, p []float64, n int) float64 {
	var x float64
	for i, c := range counts {
		if p[i] == 0 {
			continue
		}
		e := p[i] * float64(n)
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

func TestDistribution(t *testing.T) {
	logits := []float32{2, 1.5, 1, 0.5, 0, -0.5, -1, -3}
	const draws = 40000
	// 99.9% quantile of chi-square with 7 degrees of freedom is 24.3; the
	// seed is fixed, so the test is deterministic, and a sampler with the
	// wrong temperature or cut-off is far above it (checked below).
	const limit = 24.3
	tests := []struct {
		name string
		p    Params
		want func() []float64
	}{
		{"T=1", Params{Temperature: 1}, func() []float64 { return softmax64(logits, 1) }},
		{"T=0.5", Params{Temperature: 0.5}, func() []float64 { return softmax64(logits, 0.5) }},
		{"T=2", Params{Temperature: 2}, func() []float64 { return softmax64(logits, 2) }},
		{"top-p 0.7", Params{Temperature: 1, TopP: 0.7}, func() []float64 {
			// Mass at T=1: 0.287, 0.174, 0.106, 0.064, ... → cumulative
			// reaches 0.7 at the 5th token (0.287+0.174+0.106+0.064 = 0.63).
			p := softmax64(logits, 1)
			var cum float64
			k := 0
			for cum < 0.7 {
				cum += p[k]
				k++
			}
			return softmax64(logits[:k], 1)
		}},
		{"top-p 0.7, T=2 (temperature after the cut)", Params{Temperature: 2, TopP: 0.7}, func() []float64 {
			p := softmax64(logits, 1)
			var cum float64
			k := 0
			for cum < 0.7 {
				cum += p[k]
				k++
			}
			return softmax64(logits[:k], 2)
		}},
		{"min-p 0.3", Params{Temperature: 1, MinP: 0.3}, func() []float64 {
			// Keeps logits ≥ 2 + ln 0.3 = 0.796: the first three.
			return softmax64(logits[:3], 1)
		}},
		{"top-k 2", Params{Temperature: 1, TopK: 2}, func() []float64 { return softmax64(logits[:2], 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Seed = 2026
			s := New(tt.p)
			counts := make([]int, len(logits))
			for i := 0; i < draws; i++ {
				counts[s.Sample(logits, nil)]++
			}
			want := tt.want()
			want = append(want, make([]float64, len(logits)-len(want))...)
			for i := range counts {
				if want[i] == 0 && counts[i] != 0 {
					t.Errorf("token %d was drawn %d times but is filtered out", i, counts[i])
				}
			}
			if x := chiSquare(counts, want, draws); x > limit {
				t.Errorf("chi-square %.1f > %.1f: counts %v, want probabilities %.4f", x, limit, counts, want)
			}
			// The test has power: the same counts are far from the T=1
			// distribution whenever the expected one differs from it.
			if tt.name != "T=1" {
				if x := chiSquare(counts, softmax64(logits, 1), draws); x < 10*limit {
					t.Errorf("chi-square against T=1 is only %.1f: the test cannot tell the settings apart", x)
				}
			}
		})
	}
}

func TestNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	hist := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for i, p := range []Params{{}, Defaults(1), {Temperature: 0.7, TopP: 0.9}, {Temperature: 1}, {}, {Temperature: 0.7, TopP: 0.9}} {
		if i < 4 {
			p.RepeatPenalty, p.PenaltyLastN = 1.1, 64
		}
		s := New(p)
		s.Sample(logits, hist) // warm-up
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits, hist) }); n != 0 {
			t.Errorf("%+v: %v allocations per Sample, want 0", p, n)
		}
	}
}

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name string
		p    Params
		ok   bool
	}{
		{"zero", Params{}, true},
		{"defaults", Defaults(0), true},
		{"negative temperature", Params{Temperature: -0.1}, false},
		{"NaN temperature", Params{Temperature: nan}, false},
		{"top-p above 1", Params{TopP: 1.5}, false},
		{"min-p negative", Params{MinP: -1}, false},
		{"negative top-k", Params{TopK: -3}, false},
		{"negative repeat penalty", Params{RepeatPenalty: -1}, false},
		{"NaN frequency penalty", Params{FreqPenalty: nan}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestSortTop: the kept prefix is the sorted best of c[from:], c[:from] is
// untouched and c stays a permutation, by the heap (k ≤ n/16) and by the
// quickselect, with many ties and with distinct logits.
func TestSortTop(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var buf sortBuf
	for _, n := range []int{1, 2, 5, 17, 100, 1000, 32000} {
		for _, k := range []int{1, 2, 10, 40, 64, 192, 768, 3000, n} {
			for _, from := range []int{0, 1, 64} {
				for _, levels := range []int{20, 1 << 30} {
					if from+k > n {
						continue
					}
					c := make([]cand, n)
					for i := range c {
						c[i] = cand{int32(i), float32(r.IntN(levels))}
					}
					r.Shuffle(n, func(i, j int) { c[i], c[j] = c[j], c[i] })
					orig := slices.Clone(c)
					want := slices.Clone(c[from:])
					slices.SortFunc(want, cmpCand)
					sortTop(c, from, from+k, &buf)
					if !slices.Equal(c[:from], orig[:from]) {
						t.Fatalf("n=%d k=%d from=%d: c[:from] changed", n, k, from)
					}
					if !slices.Equal(c[from:from+k], want[:k]) {
						t.Fatalf("n=%d k=%d from=%d: prefix %v, want %v", n, k, from, c[from:from+min(k, 8)], want[:min(k, 8)])
					}
					got := slices.Clone(c)
					slices.SortFunc(got, cmpCand)
					slices.SortFunc(orig, cmpCand)
					if !slices.Equal(got, orig) {
						t.Fatalf("n=%d k=%d from=%d: not a permutation", n, k, from)
					}
				}
			}
		}
	}
}

func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	for _, bc := range []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"defaults", Defaults(1)},
		{"top-p-only", Params{Temperature: 0.8, TopP: 0.95}},
		{"temperature-only", Params{Temperature: 0.8}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(bc.p)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits, nil)
			}
		})
	}
}

func TestLogSumExpAndTopIDs(t *testing.T) {
	inf := float32(math.Inf(-1))
	nan := float32(math.NaN())
	for _, tc := range []struct {
		logits []float32
		k      int
		top    []int
	}{
		{[]float32{1, 3, 2, 3}, 3, []int{1, 3, 2}}, // a tie: lower id first
		{[]float32{0.5}, 4, []int{0}},
		{[]float32{nan, -1, inf}, 3, []int{1, 0, 2}}, // NaN as −Inf, then lower id
		{[]float32{1000, 999, -1000}, 2, []int{0, 1}},
		{[]float32{2, 1}, 0, []int{}},
	} {
		if got := TopIDs(tc.logits, tc.k, nil); !slices.Equal(got, tc.top) {
			t.Errorf("TopIDs(%v, %d) = %v, want %v", tc.logits, tc.k, got, tc.top)
		}
		mx := float64(slices.MaxFunc(tc.logits, func(a, b float32) int {
			if a != a {
				return -1
			}
			if b != b {
				return 1
			}
			return cmp.Compare(a, b)
		}))
		var want float64
		for _, v := range tc.logits {
			if v == v {
				want += math.Exp(float64(v) - mx)
			}
		}
		want = mx + math.Log(want)
		if got := LogSumExp(tc.logits); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("LogSumExp(%v) = %v, want %v", tc.logits, got, want)
		}
	}
	if got := LogSumExp([]float32{inf, nan}); !math.IsInf(got, -1) {
		t.Errorf("LogSumExp of no finite logit = %v, want −Inf", got)
	}
	// Probabilities from it sum to 1.
	l := []float32{0.1, -2, 3.5, 3.5, 0}
	lse := LogSumExp(l)
	var sum float64
	for _, v := range l {
		sum += math.Exp(float64(v) - lse)
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("probabilities sum to %v", sum)
	}
}

// BenchmarkLogprobs: what a step with logprobs adds (engine's pick): a
// copy of the logits, LogSumExp and TopIDs of 5, over 32000 logits.
func BenchmarkLogprobs(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	cp := make([]float32, len(logits))
	var top []int
	var buf LogSumExpBuf
	for b.Loop() {
		copy(cp, logits)
		_ = buf.LogSumExp(cp)
		top = TopIDs(cp, 5, top)
	}
}

// TestLogitBias: the bias moves picks (greedy and drawn), bans with −100,
// and leaves the caller's logits as they were.
func TestLogitBias(t *testing.T) {
	logits := []float32{1, 3, 2, 0.5}
	orig := slices.Clone(logits)
	if got := New(Params{LogitBias: map[int]float32{1: -100}}).Sample(logits, nil); got != 2 {
		t.Errorf("greedy, token 1 banned: picked %d, want 2", got)
	}
	if got := New(Params{LogitBias: map[int]float32{3: 100}}).Sample(logits, nil); got != 3 {
		t.Errorf("greedy, token 3 forced: picked %d, want 3", got)
	}
	if got := New(Params{LogitBias: map[int]float32{0: 2.5, 9: 50}}).Sample(logits, nil); got != 0 {
		t.Errorf("greedy, token 0 raised to 3.5 (id 9 outside the vocabulary): picked %d, want 0", got)
	}
	s := New(Params{Temperature: 1, Seed: 7, LogitBias: map[int]float32{1: -100}})
	for range 2000 {
		if s.Sample(logits, nil) == 1 {
			t.Fatal("drew the banned token")
		}
	}
	if !slices.Equal(logits, orig) {
		t.Errorf("logits changed to %v", logits)
	}
	if err := (Params{LogitBias: map[int]float32{2: float32(math.Inf(1))}}).Validate(); err == nil {
		t.Error("an infinite bias was accepted")
	}
}
