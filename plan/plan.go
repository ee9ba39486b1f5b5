package plan

import (
	"fmt"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Options are the job settings that change memory and speed. The zero
// value plans one sequence with the default context, batch and F16 KV cache.
type Options struct {
	Ctx      int    `json:"ctx"`      // context length; 0: min(model's context_length, DefaultCtx)
	Batch    int    `json:"batch"`    // prefill batch; 0: DefaultBatch
	Parallel int    `json:"parallel"` // sequences decoded together; 0: 1
	KV       string `json:"kv"`       // KV cache type "f16" (default), "q8_0" or "f32"
	// Tokens is how many tokens the job will hold (prompt + generated); 0
	// plans for a full context, the worst case admission must assume.
	Tokens int `json:"tokens,omitempty"`
	// Prompt is the prompt's length in tokens, when known: prefill then
	// touches only min(Batch, Prompt) rows of the activation buffers. 0
	// assumes full batches.
	Prompt int `json:"prompt,omitempty"`
	// Threads is how many worker threads the job runs on (0: the engine's
	// default, the physical cores): the measured kernel speeds depend on it.
	Threads int `json:"threads,omitempty"`
	// DraftBytes is a draft model held beside this one for speculative
	// decoding (its own plan's ModelBytes): counted in the memory, not in
	// the speed.
	DraftBytes int64 `json:"draft_bytes,omitempty"`
}

// Defaults applied to a zero Options.
const (
	DefaultCtx   = 4096
	DefaultBatch = 512
)

// Plan is the answer for one model, job settings and device.
type Plan struct {
	Model        *Shape        `json:"model"`
	Options      Options       `json:"options"`
	Device       *Device       `json:"device"`
	Memory       Memory        `json:"memory"`
	Placement    Placement     `json:"placement"`
	Speed        Speed         `json:"speed"`
	Fits         bool          `json:"fits"`
	BudgetBytes  int64         `json:"budget_bytes,omitempty"` // the memory budget held to (ApplyBudget); 0: none
	OverBudget   bool          `json:"over_budget,omitempty"`  // fits the device but not the budget
	Verdict      string        `json:"verdict"`
	Warnings     []string      `json:"warnings,omitempty"`
	Notes        []string      `json:"notes,omitempty"` // what the plan assumes that glassbox itself cannot do yet
	Alternatives []Alternative `json:"alternatives,omitempty"`

	// raw holds the predictions before calibration, for Observe.
	raw struct {
		total           int64
		prefill, decode float64
		threads         int // the decode figure's thread count (0: not known)
		speedModel      int // SpeedModel or SpeedModelRoofline
	}
}

// Memory is the predicted peak resident memory of the job, by component.
// TotalBytes is what admission compares against the budget.
type Memory struct {
	TotalBytes int64 `json:"total_bytes"`

	WeightsBytes   int64   `json:"weights_bytes"` // blocks + output + norms, resident once touched
	LayerBytes     []int64 `json:"layer_bytes"`   // per block
	OutputBytes    int64   `json:"output_bytes"`
	OtherBytes     int64   `json:"other_bytes"`
	EmbeddingBytes int64   `json:"embedding_bytes"` // resident part of token_embd
	EmbeddingTable int64   `json:"embedding_table_bytes"`
	// LayoutBytes is what the x16 copies of the weights add over the file
	// (Q4_K and Q5_K tiles unpack their 6-bit sub-block scales: 64 bytes
	// per 16 rows × 256 columns, +2.8 % and +2.3 %; Q3_K's the same 64
	// bytes, +3.6 %; IQ4_XS 32, +1.5 %, with AVX-512 VNNI) on CPUs that get
	// them (AVX2 with FMA and F16C); the other types' tiles are the file's
	// bytes.
	LayoutBytes   int64 `json:"layout_bytes"`
	KVCacheBytes  int64 `json:"kv_cache_bytes"`
	KVBytesPerTok int64 `json:"kv_bytes_per_token"` // all layers, K and V, one sequence
	ComputeBytes  int64 `json:"compute_bytes"`
	OverheadBytes int64 `json:"overhead_bytes"` // runtime + parsed header, tokenizer, copied vectors
	RuntimeBytes  int64 `json:"runtime_bytes"`  // of which the process itself, shared by every model it holds
	// GCSlackBytes is garbage the Go collector lets pile up between
	// collections (per-token allocations of text, events, sampling).
	GCSlackBytes int64 `json:"gc_slack_bytes"`
	// DraftBytes is Options.DraftBytes: a draft model's weights, cache and
	// buffers beside this model's.
	DraftBytes int64 `json:"draft_bytes,omitempty"`

	RAMBytes  int64 `json:"ram_bytes"`  // part in RAM
	VRAMBytes int64 `json:"vram_bytes"` // part in GPU memory
}

// Runtime overhead constants, measured on glassbox itself (peak RSS of
// 'glassbox run' on the shared models, see docs/BENCHMARKS.md) and refined
// by calibration:
//   - baseOverhead: the Go runtime, program text, goroutine stacks and
//     pools of a glassbox process that has loaded nothing (10.2 MiB for
//     'glassbox plan --profiles');
//   - the header is mapped, then parsed into Go strings and slices (about
//     twice its size), and the tokenizer indexes every vocabulary entry;
//   - every generated token leaves a few KiB of garbage (text, events,
//     sampler scratch: 2-8 KiB per token on the shared models with
//     CGO_ENABLED=0) that the collector lets accumulate up to the larger
//     of its 4 MiB minimum heap and the live heap (GOGC=100), of which the
//     KV cache and activations are no part (they are mapped, not heap).
const (
	baseOverhead    = 10 * mib
	headerOverheadX = 3
	vocabEntryBytes = 96
	garbagePerToken = 5 * kib
	jobRuntime      = 4 * mib // what a job adds to a bare process: the journal (SQLite, page cache bounded at 256 KiB: 2.1–2.7 MiB on a fresh journal, up to 3.5 on 15 MB), job manager, worker pool, engine and tokenizer code; fitted to runs of the shared tiny models (2026-11-30: run peak − planned components 3.6–5.3 MiB with 512 KiB here; 3.2–4.2 MiB once the KV cache and activations left Go's heap, docs/BENCHMARKS.md session 13)
	gcMinHeap       = 4 * mib
)

// ErrSettings marks a plan error caused by the job's settings rather than by
// the model's header: the job cannot run as asked (a runner fails it in the
// plan stage instead of running it unplanned; a server answers 400).
var ErrSettings = pipeline.ErrSettings

// ForModel plans a job for the model whose header f holds, reading no
// tensor data.
func ForModel(f *gguf.File, opts Options, dev *Device) (*Plan, error) {
	s, err := ReadShape(f)
	if err != nil {
		return nil, err
	}
	return ForShape(s, opts, dev)
}

// ForShape plans a job for a model shape (ForModel without the file).
func ForShape(s *Shape, opts Options, dev *Device) (*Plan, error) {
	p, err := plan(s, opts, dev)
	if err != nil {
		return nil, err
	}
	p.Alternatives = alternatives(p)
	return p, nil
}

func plan(s *Shape, opts Options, dev *Device) (*Plan, error) {
	if dev == nil {
		return nil, fmt.Errorf("plan: no device")
	}
	opts, kvType, err := opts.resolve(s)
	if err != nil {
		return nil, err
	}
	p := &Plan{Model: s, Options: opts, Device: dev}
	if err := p.memory(kvType); err != nil {
		return nil, err
	}
	p.place()
	p.speed()
	p.verdict()
	return p, nil
}

func (o Options) resolve(s *Shape) (Options, tensor.DType, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("plan: %w: "+format, append([]any{ErrSettings}, args...)...)
	}
	if o.Ctx < 0 || o.Batch < 0 || o.Parallel < 0 || o.Tokens < 0 || o.Threads < 0 {
		return o, 0, bad("negative setting (ctx %d, batch %d, parallel %d, tokens %d, threads %d)", o.Ctx, o.Batch, o.Parallel, o.Tokens, o.Threads)
	}
	if o.Threads > 4096 {
		return o, 0, bad("--threads %d is out of range (max 4096)", o.Threads)
	}
	if o.Ctx == 0 {
		o.Ctx = DefaultCtx
		if s.CtxTrain > 0 {
			o.Ctx = min(o.Ctx, s.CtxTrain)
		}
	}
	if o.Ctx > 1<<24 {
		return o, 0, bad("--ctx %d is beyond any model (max %d)", o.Ctx, 1<<24)
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	o.Batch = min(o.Batch, o.Ctx)
	if o.Parallel == 0 {
		o.Parallel = 1
	}
	if o.Parallel > 4096 {
		return o, 0, bad("--parallel %d is out of range (max 4096)", o.Parallel)
	}
	if o.Prompt < 0 || (o.Tokens > 0 && o.Prompt > o.Tokens) {
		return o, 0, bad("prompt of %d tokens does not fit the %d tokens planned", o.Prompt, o.Tokens)
	}
	if o.Tokens > o.Ctx {
		return o, 0, bad("%d tokens do not fit a context of %d (raise --ctx)", o.Tokens, o.Ctx)
	}
	if o.KV == "" {
		o.KV = "f16"
	}
	var kv tensor.DType
	switch strings.ToLower(o.KV) {
	case "f16":
		kv = tensor.F16
	case "f32":
		kv = tensor.F32
	case "q8_0":
		kv = tensor.Q8_0
	default:
		return o, 0, bad("--kv %q: want f16, q8_0 or f32", o.KV)
	}
	o.KV = strings.ToLower(o.KV)
	if kv == tensor.Q8_0 && s.HeadDim%32 != 0 {
		// The engine's q8_0 cache rounds each head on its own
		// (compute.KVTypeFits).
		return o, 0, bad("--kv q8_0 needs head dimensions in multiples of 32 (this model's heads have %d)", s.HeadDim)
	}
	return o, kv, nil
}

// tokens is how many tokens each sequence holds at the job's peak.
func (p *Plan) tokens() int {
	if p.Options.Tokens > 0 {
		return p.Options.Tokens
	}
	return p.Options.Ctx
}

func (p *Plan) memory(kvType tensor.DType) error {
	s, o, m := p.Model, p.Options, &p.Memory
	m.LayerBytes = append([]int64(nil), s.LayerBytes...)
	for _, b := range s.LayerBytes {
		m.WeightsBytes += b
	}
	m.OutputBytes, m.OtherBytes = s.OutputBytes, s.OtherBytes
	m.WeightsBytes += s.OutputBytes + s.OtherBytes
	m.EmbeddingTable = s.EmbeddingBytes
	m.EmbeddingBytes = s.EmbeddingBytes
	if !s.Tied {
		// Lookups read their rows from the file (compute.Matrix.ReadRowsFrom):
		// the table stays in the page cache, not in the process.
		m.EmbeddingBytes = 0
	}
	if s.Layers > 0 {
		row, err := kvType.RowBytes(int64(s.NumKVHeads * s.HeadDim))
		if err != nil {
			return fmt.Errorf("plan: KV cache: %w", err)
		}
		m.KVBytesPerTok = 2 * row * int64(s.Layers)
		m.KVCacheBytes = m.KVBytesPerTok * int64(p.tokens()) * int64(o.Parallel)
	}
	m.ComputeBytes = computeArena(s, o)
	// Norm weights and biases are copied to float32 at load.
	base := int64(baseOverhead)
	if p.Device.RuntimeBytes > 0 {
		base = p.Device.RuntimeBytes + jobRuntime
	}
	m.RuntimeBytes = base
	m.OverheadBytes = base + headerOverheadX*s.HeaderSize + vocabEntryBytes*int64(s.VocabSize) + 4*s.vecElems
	// The KV cache and the activation rows live outside the Go heap
	// (compute.LazyFloats), so the collector's goal follows the parsed
	// header, tokenizer and vectors only.
	live := m.OverheadBytes - base
	m.GCSlackBytes = min(int64(p.tokens()*o.Parallel)*garbagePerToken, max(gcMinHeap, live))
	if p.Device.x16() {
		m.LayoutBytes = s.x16Extra(p.Device.hasFeature("avx512_vnni"))
	}
	m.TotalBytes = m.WeightsBytes + m.EmbeddingBytes + m.LayoutBytes + m.KVCacheBytes + m.ComputeBytes + m.OverheadBytes + m.GCSlackBytes
	p.raw.total = m.TotalBytes
	if c := p.Device.Calibration; c != nil && c.MemoryFactor > 0 {
		// History says what the components miss; book it as overhead so
		// the components still add up to the total.
		corr := int64(float64(m.TotalBytes)*c.MemoryFactor) - m.TotalBytes
		m.OverheadBytes += corr
		m.TotalBytes += corr
	}
	m.DraftBytes = max(o.DraftBytes, 0) // planned, and calibrated, on its own
	m.TotalBytes += m.DraftBytes
	return nil
}

// ModelBytes is the part of the peak that belongs to this model and job
// rather than to the process: what a server holding several models should
// count per resident model (TotalBytes less the runtime).
func (m *Memory) ModelBytes() int64 { return m.TotalBytes - m.RuntimeBytes }

// computeArena is the activation memory of one batch, as the engine
// allocates it (model/llama's Session, float32): per batch row the residual
// stream, a normed copy and a sublayer output (dim each), Q and the
// attention output (qDim each), K and V (kvDim each), the two FFN vectors
// (hiddenDim each), and the int8-quantized copy of the widest input that
// MatMul makes (34 bytes per 32 values); plus one attention-score buffer of
// the context per worker and the logits of the last position. With
// Parallel > 1 the sequences share one batcher (engine.Batcher): its work
// session holds a prompt chunk and one row per sequence, and each
// sequence's own session one row, so the rows are batch + 2·parallel, not
// batch × parallel (at --parallel 4 the 1B model's arena was planned at
// 234 MiB for ~60).
func computeArena(s *Shape, o Options) int64 {
	if s.Layers == 0 {
		return 0
	}
	rows := o.Batch
	if o.Prompt > 0 {
		rows = min(rows, o.Prompt) // untouched rows of a fresh allocation are never resident
	}
	b := int64(rows)
	if o.Parallel > 1 {
		b += 2 * int64(o.Parallel)
	}
	dim, hid := int64(s.Dim), int64(s.HiddenDim)
	qDim, kvDim := int64(s.NumHeads*s.HeadDim), int64(s.NumKVHeads*s.HeadDim)
	perRow := 4*(3*dim+2*qDim+2*kvDim+2*hid) + max(dim, hid, qDim)*34/32
	return b*perRow + 4*int64(o.Ctx)*scoreBuffers + 4*int64(s.VocabSize)*int64(o.Parallel)
}

// scoreBuffers is how many per-worker attention-score buffers to expect
// (sync.Pool keeps about one per thread).
const scoreBuffers = 16
