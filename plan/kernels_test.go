package plan

import (
	"math"
	"strings"
	"testing"
)

// kernelDevice is a CPU with measured kernels at 1 and 2 threads.
func kernelDevice() *Device {
	d := cpuDevice(64 * gib)
	d.Name = "this machine"
	rates := func(scale float64) map[string]float64 {
		return map[string]float64{"F32": 40e9 * scale, "F16": 30e9 * scale, "Q8_0": 25e9 * scale, "Q4_0": 15e9 * scale,
			"Q4_K": 12e9 * scale, "Q6_K": 10e9 * scale}
	}
	rows := map[string]float64{"Q4_K": 2e-9, "Q6_K": 3e-9}
	d.Kernels = []Kernels{
		{Threads: 1, Bandwidth: 20e9, MatMul: rates(1), MatMulRowS: rows, CallS: 1e-6, AttnKVBytesPerS: 5e9, AttnElemsPerS: 2e9, AttnCallS: 3e-6, VecElemsPerS: 1e9, Source: "test"},
		{Threads: 2, Bandwidth: 30e9, MatMul: rates(2), CallS: 4e-6, AttnElemsPerS: 4e9, AttnCallS: 8e-6, VecElemsPerS: 1e9, Source: "test"},
	}
	return d
}

// TestMeasuredDecode checks the decode model against the sum it states:
// every multiplied matrix read from DRAM and consumed by its kernel plus
// its call cost, and per layer the KV read, the attention and the vector
// ops.
func TestMeasuredDecode(t *testing.T) {
	f := synthetic(t, Llama32_1B)
	for _, tc := range []struct {
		name    string
		opts    Options
		threads int // kernels entry used; 0: the roofline model
	}{
		{"default threads", Options{Tokens: 33}, 2},
		{"one thread", Options{Tokens: 33, Threads: 1}, 1},
		{"two threads long context", Options{Ctx: 4096, Threads: 2}, 2},
		{"three threads, not measured", Options{Tokens: 33, Threads: 3}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ForModel(f, tc.opts, kernelDevice())
			if err != nil {
				t.Fatal(err)
			}
			sp := &p.Speed
			if tc.threads == 0 {
				if sp.DecodeMemoryS != 0 || sp.Threads != 0 || !strings.Contains(sp.Basis, "of it") {
					t.Errorf("unmeasured thread count used kernels: %+v", sp)
				}
				return
			}
			k := kernelDevice().KernelsFor(tc.threads)
			s := p.Model
			var want, mem, kern float64
			for _, m := range s.mats {
				if m.layer == -1 && !s.Tied || m.layer == -3 {
					continue
				}
				b, ty := float64(m.size), m.typ.String()
				c := b/k.MatMul[ty] + float64(m.rows)*k.MatMulRowS[ty]
				mem += b / k.Bandwidth
				kern += c
				if tc.threads == 1 {
					want += b/k.Bandwidth + c/2 + k.CallS // half the kernel time hides under the reads
				} else {
					want += b/k.Bandwidth + c + k.CallS
				}
			}
			pos := sp.AtPosition + 1
			kvRate := k.AttnKVBytesPerS // the 2-thread entry has none: the stream's bandwidth stands in
			if kvRate == 0 {
				kvRate = k.Bandwidth
			}
			kv := float64(p.Memory.KVBytesPerTok) * float64(pos) / kvRate
			attn := float64(s.Layers*s.NumHeads*s.HeadDim*pos) / k.AttnElemsPerS
			vec := float64(s.Layers) * (4*2048 + 2048 + 512 + 2*8192 + 2*512) / k.VecElemsPerS
			want += kv + attn + vec + float64(s.Layers)*k.AttnCallS
			if math.Abs(1/sp.DecodeTokensPerS/want-1) > 1e-9 {
				t.Errorf("decode %.6f s per token, want %.6f", 1/sp.DecodeTokensPerS, want)
			}
			if math.Abs(sp.DecodeMemoryS/(mem+kv)-1) > 1e-9 || math.Abs(sp.DecodeKernelS/(kern+attn)-1) > 1e-9 || sp.Threads != tc.threads {
				t.Errorf("parts %+v, want memory %g kernel %g", sp, mem+kv, kern+attn)
			}
			wantLimit := "compute"
			if mem+kv >= kern+attn {
				wantLimit = "memory bandwidth"
			}
			if sp.DecodeLimit != wantLimit || !strings.HasPrefix(sp.Basis, "generation: ") {
				t.Errorf("limit %q (want %q), basis %q", sp.DecodeLimit, wantLimit, sp.Basis)
			}
		})
	}
}

// TestMeasuredDecodeLimits: fast kernels leave DRAM as the limit, slow ones
// the kernels; an unprobed format counts at the slowest probed rate; a GPU
// plan does not use the CPU's kernels.
func TestMeasuredDecodeLimits(t *testing.T) {
	f := synthetic(t, Llama32_1B)
	plan := func(d *Device) *Plan {
		t.Helper()
		p, err := ForModel(f, Options{Tokens: 16}, d)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	fast := kernelDevice()
	for k := range fast.Kernels[1].MatMul {
		fast.Kernels[1].MatMul[k] = 1e15
	}
	if p := plan(fast); p.Speed.DecodeLimit != "memory bandwidth" || p.Speed.DecodeKernelS > 0.01*p.Speed.DecodeMemoryS {
		t.Errorf("fast kernels: %+v", p.Speed)
	}
	slow := kernelDevice()
	for k := range slow.Kernels[1].MatMul {
		slow.Kernels[1].MatMul[k] = 1e8
	}
	if p := plan(slow); p.Speed.DecodeLimit != "compute" {
		t.Errorf("slow kernels: %+v", p.Speed)
	}
	// Q4_K_M holds Q4_K and Q6_K; without the Q6_K figure it counts at the
	// slowest rate measured (here Q6_K's own 20 GB/s is replaced by 0.5).
	d := kernelDevice()
	delete(d.Kernels[1].MatMul, "Q6_K")
	d.Kernels[1].MatMul["BF16"] = 0.5e9
	if a, b := plan(kernelDevice()), plan(d); b.Speed.DecodeKernelS <= a.Speed.DecodeKernelS {
		t.Errorf("unprobed Q6_K: kernel time %g, with the figure %g", b.Speed.DecodeKernelS, a.Speed.DecodeKernelS)
	}
	g, err := ParseDevice("rtx4090")
	if err != nil {
		t.Fatal(err)
	}
	g.Kernels = kernelDevice().Kernels
	if p := plan(g); p.Speed.DecodeMemoryS != 0 {
		t.Errorf("GPU plan used CPU kernels: %+v", p.Speed)
	}
	// Incomplete figures are not used.
	bad := kernelDevice()
	bad.Kernels[1].Bandwidth = 0
	if bad.KernelsFor(2) != nil || bad.KernelsFor(0) != nil {
		t.Error("kernels without a bandwidth used")
	}
}

// TestMeasuredPrefill checks the prefill model against the sum it states:
// per batch, the longer of the weights' DRAM read and the kernels'
// arithmetic at their batch rates (the output matrix for the last row
// only), plus call costs and per token the attention over its positions
// and the vector ops; and that kernels without batch rates keep the
// roofline model.
func TestMeasuredPrefill(t *testing.T) {
	f := synthetic(t, Llama32_1B) // Q4_K_M: Q4_K and Q6_K matrices
	d := kernelDevice()
	k := &d.Kernels[1]
	k.Prefill = map[string]float64{"Q4_K": 400e9, "Q6_K": 300e9}
	const n = 100
	p, err := ForModel(f, Options{Prompt: n, Tokens: n + 10}, d)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Model
	var mem, kern, fixed float64
	for _, m := range s.mats {
		if m.layer == -1 && !s.Tied || m.layer == -3 {
			continue
		}
		rows := float64(n)
		if m.layer < 0 {
			rows = 1
		}
		mem += float64(m.size) / k.Bandwidth
		kern += 2 * float64(m.elems) * rows / k.Prefill[m.typ.String()]
		fixed += k.CallS
	}
	qDim, kvDim := s.NumHeads*s.HeadDim, s.NumKVHeads*s.HeadDim
	perLayer := float64(qDim)*n*(n+1)/2/k.AttnElemsPerS + k.AttnCallS + n*LayerVectorElems(s.Dim, s.HiddenDim, qDim, kvDim)/k.VecElemsPerS
	fixed += float64(s.Layers) * perLayer
	want := n / (max(mem, kern) + fixed)
	if got := p.Speed.PrefillTokensPerS; math.Abs(got/want-1) > 1e-9 {
		t.Errorf("prefill %g tok/s, want %g (memory %g s, kernels %g s, fixed %g s)", got, want, mem, kern, fixed)
	}
	if kern > mem && p.Speed.PrefillLimit != "compute" || !strings.Contains(p.Speed.Basis, "a batch of rows: Q4_K 400 GOP/s") {
		t.Errorf("limit %q, basis %q", p.Speed.PrefillLimit, p.Speed.Basis)
	}
	// A type without a batch rate: the roofline model, as before.
	delete(k.Prefill, "Q6_K")
	q, err := ForModel(f, Options{Prompt: n, Tokens: n + 10}, d)
	if err != nil {
		t.Fatal(err)
	}
	if q.Speed.PrefillTokensPerS == p.Speed.PrefillTokensPerS || !strings.Contains(q.Speed.Basis, "prefill: CPU") {
		t.Errorf("without every rate: prefill %g, basis %q", q.Speed.PrefillTokensPerS, q.Speed.Basis)
	}
}

// TestMeasuredDecodeQ8KV: with --kv q8_0 each layer's attention takes the
// probed Q8_0 rate over the cache's bytes (its arithmetic included), once
// per four query heads of a group; an F16 cache ignores that rate, and
// without it the F16 model stands in.
func TestMeasuredDecodeQ8KV(t *testing.T) {
	f := synthetic(t, Llama32_1B)
	step := func(kv string, q8Rate float64) (float64, *Plan) {
		t.Helper()
		d := kernelDevice()
		d.Kernels[1].AttnQ8KVBytesPerS = q8Rate
		p, err := ForModel(f, Options{Ctx: 4096, Threads: 2, KV: kv}, d)
		if err != nil {
			t.Fatal(err)
		}
		return 1 / p.Speed.DecodeTokensPerS, p
	}
	slow, p := step("q8_0", 1e9)
	fast, _ := step("q8_0", 1e12)
	kvBytes := float64(p.Memory.KVBytesPerTok) * float64(p.Speed.AtPosition+1) // all layers; groups of 4: one pass
	if want := kvBytes * (1/1e9 - 1/1e12); math.Abs((slow-fast)/want-1) > 1e-6 {
		t.Errorf("q8_0 rate 1e9 vs 1e12 B/s: %.6f s per token apart, want %.6f", slow-fast, want)
	}
	if unmeasured, _ := step("q8_0", 0); unmeasured == slow || unmeasured == fast {
		t.Errorf("an unmeasured q8_0 rate was used: %.6f s per token", unmeasured)
	}
	a, _ := step("f16", 1e9)
	b, _ := step("f16", 1e12)
	if a != b {
		t.Errorf("an F16 cache's plan depends on the q8_0 rate: %.6f vs %.6f s per token", a, b)
	}
}
