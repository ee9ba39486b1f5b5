// Package kprobe measures how fast glassbox's own kernels run on this
// machine, for the planner's decode and prefill models: the rate at which
// compute.MatMul with one activation row (token generation) consumes
// weight bytes of each format when the weights sit in cache (the compute
// ceiling, which DRAM bandwidth can only lower), its rate in operations
// with a prompt batch of PrefillRows rows, the fixed cost of a MatMul call
// and of a worker-pool round trip, the rate of the attention kernel and of
// the per-layer vector ops. The roofline (compute/roofline) says what the
// hardware could do; this says what the code does. Results are cached per
// machine, thread count, kernel set and build beside the roofline.
//
// Imports: compute, compute/roofline, kernel, tensor, internal/home and the
// standard library.
package kprobe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Version changes whenever what the probe measures, or how, changes: a
// cached result of another version is measured again.
const Version = 4 // 4: MXFP4 probed

// Result is one probe at one thread count.
type Result struct {
	Machine    string    `json:"machine"`
	KernelImpl string    `json:"kernel_impl"` // kernel.Active() when measured
	Build      string    `json:"build"`       // probe version and the binary's build (see buildID)
	Threads    int       `json:"threads"`
	Measured   time.Time `json:"measured"`
	Seconds    float64   `json:"seconds"` // how long the probe took

	Formats []Format `json:"formats"`
	// CallSeconds is what a one-row MatMul costs besides its work
	// (quantizing the activations, handing the rows to the workers,
	// waiting for the last): the time of one of 64 rows of 256 Q8_0
	// weights.
	CallSeconds float64 `json:"matmul_call_s"`
	// Attention for one query over F16 KV caches larger than the cache
	// hierarchy (see probeAttention): AttnKVBytesPerS is the rate of its
	// reads of K and V, AttnElemsPerS of its arithmetic in (query heads ×
	// positions × headDim) per second, AttnCallSeconds what a call costs
	// besides.
	AttnKVBytesPerS float64 `json:"attention_kv_bytes_per_s"`
	AttnElemsPerS   float64 `json:"attention_elems_per_s"`
	AttnCallSeconds float64 `json:"attention_call_s"`
	// AttnQ8KVBytesPerS is the rate the same attention goes through Q8_0
	// caches (--kv q8_0) in KV bytes per second, groups of four query
	// heads, its arithmetic included: the Q8_0 loops take four heads at a
	// time whatever the group, so their time follows the bytes.
	AttnQ8KVBytesPerS float64 `json:"attention_q8_kv_bytes_per_s"`
	// VecElemsPerS is the speed of a decoder layer's vector ops (norms,
	// residual adds, RoPE, SiLU and gating, KV store), in elements of
	// VectorElems per second.
	VecElemsPerS float64 `json:"vector_elems_per_s"`
}

// Format is the one-row MatMul speed for one weight type.
type Format struct {
	Type       string  `json:"type"`
	BytesPerS  float64 `json:"bytes_per_s"` // weight bytes consumed per second, weights in cache, call and row costs excluded
	RowSeconds float64 `json:"row_s"`       // per output row, besides its bytes
	// PrefillOpsPerS is the MatMul rate with PrefillRows activation rows
	// (a prompt batch), in multiply-adds × 2 per second, the weights in
	// cache and laid out as the engine binds them.
	PrefillOpsPerS float64 `json:"prefill_ops_per_s"`
	Rows           int     `json:"rows"` // the probed matrix: Rows × Cols
	Cols           int     `json:"cols"`
}

// Rate returns the MatMul rate of dtype name (false when not probed).
func (r *Result) Rate(name string) (float64, bool) {
	for _, f := range r.Formats {
		if f.Type == name {
			return f.BytesPerS, f.BytesPerS > 0
		}
	}
	return 0, false
}

// Types are the weight formats probed: the float types and the quantized
// formats llama.cpp's common files use (MXFP4: gpt-oss's experts).
var Types = []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q8_0, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS, tensor.MXFP4}

// Options tunes a probe; the zero value is the default.
type Options struct {
	// MatrixBytes is the size of each probed weight matrix (default
	// DefaultMatrixBytes): small enough to stay in cache between calls,
	// large enough that a call's fixed cost is a small part of its time.
	MatrixBytes int
	// Batch is how long one timed batch of calls runs (default 2 ms); the
	// fastest of Batches batches (default 9) counts, so a busy machine's
	// interruptions are not measured as kernel time.
	Batch   time.Duration
	Batches int
	Types   []tensor.DType // default Types
}

// DefaultMatrixBytes is 1 MiB: within a core's L2 or the shared L3 of
// current x86 and ARM server and desktop parts.
const DefaultMatrixBytes = 1 << 20

// The shapes the probe times. probeCols is a common model width (and a
// multiple of every block size); the attention and layer shapes are a 1B
// Llama's (32 query heads, 8 KV heads of 64, 2048 wide, 8192 hidden).
const (
	probeCols   = 2048
	attnHeads   = 32
	attnKVHeads = 8
	attnHeadDim = 64
	attnLen     = 1024
	PrefillRows = 128 // activation rows of the prefill timing (the pp128)
	attnCaches  = 32  // × 2 MiB of K and V
	layerDim    = 2048
	layerHidden = 8192
)

// VectorElems is the element count the vector rate is measured in for one
// decoder layer of a model: two RMSNorms and two residual adds over dim,
// RoPE over the query and key, SiLU and the gate product over hiddenDim,
// and the key and value rows stored.
func VectorElems(dim, hiddenDim, qDim, kvDim int) float64 {
	return float64(4*dim + qDim + kvDim + 2*hiddenDim + 2*kvDim)
}

// Probe measures the kernels with threads workers (<= 0: physical cores).
func Probe(threads int, opt Options) (Result, error) {
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	if opt.MatrixBytes <= 0 {
		opt.MatrixBytes = DefaultMatrixBytes
	}
	if opt.Batch <= 0 {
		opt.Batch = 2 * time.Millisecond
	}
	if opt.Batches <= 0 {
		opt.Batches = 9
	}
	if opt.Types == nil {
		opt.Types = Types
	}
	start := time.Now()
	res := Result{Machine: roofline.Machine(), KernelImpl: kernel.Active(), Build: buildID(), Threads: threads, Measured: start.UTC()}
	pool := compute.NewPool(threads)
	defer pool.Close()
	rng := rand.New(rand.NewPCG(7, uint64(threads)))
	tm := timer{batch: opt.Batch, batches: opt.Batches}

	// The call cost: a MatMul with too little work to matter but enough
	// rows (4 tiles) to be handed to the workers, as every real one is.
	tiny, err := randomMatrix(rng, tensor.Q8_0, 4*16, 256)
	if err != nil {
		return res, err
	}
	tiny = forDecode(tiny)
	x := randomFloats(rng, probeCols)
	out := make([]float32, tiny.Rows)
	res.CallSeconds = tm.best(func() { compute.MatMul(pool, out, tiny, x, 1) })
	for _, dt := range opt.Types {
		f, err := probeFormat(pool, rng, tm, dt, opt.MatrixBytes, x, res.CallSeconds)
		if err != nil {
			return res, err
		}
		res.Formats = append(res.Formats, f)
	}

	res.AttnKVBytesPerS, res.AttnElemsPerS, res.AttnCallSeconds = probeAttention(pool, rng, tm)
	res.AttnQ8KVBytesPerS = probeAttentionQ8(pool, rng, tm)
	res.VecElemsPerS = probeVectors(rng, tm)
	res.Seconds = time.Since(start).Seconds()
	for _, v := range []float64{res.CallSeconds, res.AttnKVBytesPerS, res.AttnElemsPerS, res.AttnQ8KVBytesPerS, res.VecElemsPerS} {
		if !(v > 0) || math.IsInf(v, 0) {
			return res, fmt.Errorf("kprobe: implausible measurement %+v", res)
		}
	}
	return res, nil
}

// probeFormat times one-row MatMuls of dt on two matrices: A, about
// matrixBytes of rows of probeCols weights, and C, A's bytes in rows a
// quarter as long (four times as many). With time = call + bytes ÷ rate +
// rows × perRow, C less A gives perRow (what each output row costs
// besides its bytes: starting the row, summing the lanes), and A less the
// call and row costs gives the rate, the kernel's speed with the weights
// in cache. Large matrices keep a busy machine's noise small beside the
// work (a fit through a small matrix amplified it).
func probeFormat(pool *compute.Pool, rng *rand.Rand, tm timer, dt tensor.DType, matrixBytes int, x []float32, call float64) (Format, error) {
	rb, err := dt.RowBytes(probeCols)
	if err != nil {
		return Format{}, fmt.Errorf("kprobe: %s: %w", dt, err)
	}
	rows := max(128, matrixBytes/int(rb)/16*16)
	a, err := randomMatrix(rng, dt, rows, probeCols)
	if err != nil {
		return Format{}, err
	}
	c, err := randomMatrix(rng, dt, 4*rows, probeCols/4)
	if err != nil {
		return Format{}, err
	}
	a, c = forDecode(a), forDecode(c)
	out := make([]float32, 4*rows)
	ta := tm.best(func() { compute.MatMul(pool, out, a, x, 1) })
	tc := tm.best(func() { compute.MatMul(pool, out, c, x[:probeCols/4], 1) })
	ra := float64(rows)
	perRow := max(0, (tc-ta)/(3*ra))
	// The call and row costs are never more than half of A's time (a
	// busy moment in the short timings must not make the kernel look
	// infinitely fast).
	work := max(ta-call-perRow*ra, 0.5*ta)
	// Prefill: A against a batch of rows, bound as the engine binds it (the
	// x16 tiles, or the GEMM kernels' repacked copy made on first use).
	if !a.ForDecoding() {
		a = compute.PackOnFirstUse(a)
	}
	xs := randomFloats(rng, PrefillRows*probeCols)
	outs := make([]float32, PrefillRows*rows)
	compute.MatMul(pool, outs, a, xs, PrefillRows) // the repacking, if any, is loading
	tp := tm.best(func() { compute.MatMul(pool, outs, a, xs, PrefillRows) })
	return Format{Type: dt.String(), BytesPerS: float64(len(a.Data)) / work, RowSeconds: perRow, Rows: rows, Cols: probeCols,
		PrefillOpsPerS: 2 * float64(rows) * probeCols * PrefillRows / tp}, nil
}

// forDecode builds a probed matrix as the engine binds weights (model's
// Binder): rearranged into the x16 layout for the formats that have x16
// kernels on this CPU, copied now, unless GLASSBOX_X16=0; so that the probe
// measures what runs. (Repacking for the GEMM kernels only serves batches
// of rows, never one.)
func forDecode(m compute.Matrix) compute.Matrix {
	if x16Off() {
		return m
	}
	if m = compute.ForDecode(m, nil); m.ForDecoding() {
		m.CopyX16()
	}
	return m
}

func x16Off() bool { return os.Getenv("GLASSBOX_X16") == "0" }

// probeAttention times one query at the last of attnLen positions over
// attnCaches layers' F16 caches (attnCaches × 2 MiB, more than a last-level
// cache holds, as a long context is), cycling through them as a decode step
// does, with one query head per KV head and with four (grouped-query
// attention). With time = KV bytes ÷ kvRate + elements ÷ rate (elements =
// query heads × positions × headDim), the two give both: kvRate is how
// fast attention's strided reads of the cache go (slower than a stream),
// rate its arithmetic. call is the time of a call over 16 positions (what
// a call costs besides).
func probeAttention(pool *compute.Pool, rng *rand.Rand, tm timer) (kvRate, rate, call float64) {
	attend, _ := attentionOver(pool, rng, tensor.F16)
	t1 := tm.best(attend(attnKVHeads, attnLen-1))
	t4 := tm.best(attend(attnHeads, attnLen-1))
	call = tm.best(attend(attnHeads, 15))
	kv := attnKVHeads * attnHeadDim
	kvBytes := float64(2 * attnLen * kv * 2)
	e1 := float64(attnKVHeads * attnLen * attnHeadDim)
	g := float64(attnHeads / attnKVHeads)
	// t4 - t1 is the arithmetic of (g-1)·e1 more elements over the same
	// bytes; a busy moment can make it look free, so the arithmetic is
	// given at least a tenth of t4.
	rate = (g - 1) * e1 / max(t4-t1, 0.1*t4)
	mem := max(t1-e1/rate, 0.1*t1)
	return kvBytes / mem, rate, call
}

// probeAttentionQ8 times probeAttention's grouped query over Q8_0 caches
// of the same shape and returns their KV bytes per second.
func probeAttentionQ8(pool *compute.Pool, rng *rand.Rand, tm timer) float64 {
	attend, bytes := attentionOver(pool, rng, tensor.Q8_0)
	return float64(bytes) / tm.best(attend(attnHeads, attnLen-1))
}

// attentionOver fills attnCaches layers' caches of type dt and returns a
// step of one query of heads heads at position pos over the next cache
// (cycling through them, as a decode step goes through its layers) and
// the bytes of one cache.
func attentionOver(pool *compute.Pool, rng *rand.Rand, dt tensor.DType) (attend func(heads, pos int) func(), cacheBytes int64) {
	kv := attnKVHeads * attnHeadDim
	rows := make([][]float32, 8)
	for i := range rows {
		rows[i] = randomFloats(rng, kv)
	}
	caches := make([]*compute.KVCache, attnCaches)
	for i := range caches {
		caches[i] = compute.NewKVCache(dt, attnLen, attnKVHeads, attnHeadDim)
		for pos := range attnLen {
			caches[i].Store(pos, rows[pos%8], rows[(pos+i)%8])
		}
	}
	q := randomFloats(rng, attnHeads*attnHeadDim)
	out := make([]float32, len(q))
	scale := float32(1 / math.Sqrt(attnHeadDim))
	next := 0
	return func(heads, pos int) func() {
		return func() {
			compute.Attention(pool, out, q, 1, pos, caches[next], heads, compute.Attn{Scale: scale})
			next = (next + 1) % len(caches)
		}
	}, caches[0].Bytes()
}

// probeVectors times the vector ops of one decoder layer of the reference
// shape (what model/llama does around its matrix products at one token) on
// the calling goroutine, as the engine runs them.
func probeVectors(rng *rand.Rand, tm timer) float64 {
	dim, hid := layerDim, layerHidden
	qDim, kvDim := attnHeads*attnHeadDim, attnKVHeads*attnHeadDim
	x, xb, norm := randomFloats(rng, dim), make([]float32, dim), randomFloats(rng, dim)
	q, k, v := randomFloats(rng, qDim), randomFloats(rng, kvDim), randomFloats(rng, kvDim)
	hb, hb2 := randomFloats(rng, hid), randomFloats(rng, hid)
	c := compute.NewKVCache(tensor.F16, 4, attnKVHeads, attnHeadDim)
	layer := func() {
		compute.RMSNorm(xb, x, norm, 1e-5)
		compute.RoPE(q, attnHeads, attnHeadDim, attnHeadDim, 3, 10000, false, nil)
		compute.RoPE(k, attnKVHeads, attnHeadDim, attnHeadDim, 3, 10000, false, nil)
		c.Store(3, k, v)
		compute.Add(x, x, xb)
		compute.RMSNorm(xb, x, norm, 1e-5)
		copy(hb, hb2) // keep SiLU's input in range from call to call
		compute.SiLU(hb)
		compute.Mul(hb, hb, hb2)
		compute.Add(x, x, xb)
		compute.Scale(x, 0.5)
	}
	return VectorElems(dim, hid, qDim, kvDim) / tm.best(layer)
}

// timer runs a function in batches of about batch and returns the
// fastest batch's seconds per call.
type timer struct {
	batch   time.Duration
	batches int
}

func (tm timer) best(fn func()) float64 {
	fn() // warm caches and pools
	n := 1
	for {
		t0 := time.Now()
		for range n {
			fn()
		}
		if el := time.Since(t0); el >= tm.batch/4 || n >= 1<<24 {
			n = max(1, int(float64(n)*float64(tm.batch)/float64(max(el, time.Microsecond))))
			break
		}
		n *= 4
	}
	best := math.Inf(1)
	for range tm.batches {
		t0 := time.Now()
		for range n {
			fn()
		}
		best = min(best, time.Since(t0).Seconds()/float64(n))
	}
	return best
}

// randomMatrix returns a rows × cols matrix of dt holding random weights
// (quantized by the reference quantizers, so every block is well formed).
func randomMatrix(rng *rand.Rand, dt tensor.DType, rows, cols int) (compute.Matrix, error) {
	rb, err := dt.RowBytes(int64(cols))
	if err != nil {
		return compute.Matrix{}, fmt.Errorf("kprobe: %s: %w", dt, err)
	}
	data := make([]byte, int(rb)*rows)
	row := make([]float32, cols)
	// Distinct rows for the first few; the rest repeat them (the kernels'
	// speed does not depend on the values, and the reference quantizers
	// are too slow to fill a megabyte quickly).
	distinct := min(rows, 16)
	for r := range distinct {
		for i := range row {
			row[i] = float32(rng.NormFloat64())
		}
		if err := kernel.Quantize(dt, row, data[r*int(rb):(r+1)*int(rb)]); err != nil {
			return compute.Matrix{}, fmt.Errorf("kprobe: %w", err)
		}
	}
	for off := distinct * int(rb); off < len(data); off += copy(data[off:], data[:distinct*int(rb)]) {
	}
	m, err := compute.NewMatrix(dt, rows, cols, data)
	if err != nil {
		return compute.Matrix{}, fmt.Errorf("kprobe: %w", err)
	}
	return m, nil
}

func randomFloats(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}
