package synth

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Std is the default standard deviation of the random weights (and the
// one of the noise around 1 in the norm weights).
const Std = 0.02

// Options describe one synthetic model.
type Options struct {
	Config
	Format string // a name from Formats, e.g. "Q4_K_M"
	Seed   uint64
	// WeightStd is the standard deviation of the matrices, embeddings,
	// biases and routers; 0 means Std. A larger one makes the outputs
	// less flat (a cross-check against another runtime then sees the
	// soft-caps, multipliers and windows); norm weights stay 1 + N(0, Std²).
	WeightStd float64
	// VocabFrom, if set, supplies the tokenizer: all its tokenizer.* keys
	// are copied and its token count becomes the vocabulary size.
	VocabFrom *gguf.File
	// Workers generate and quantize chunks in parallel; 0 means
	// GOMAXPROCS. The output does not depend on it.
	Workers int
	// Progress, if set, is called after each chunk with the bytes of
	// tensor data written so far and the total.
	Progress func(done, total int64)
}

// Tensor describes one tensor of the model (for listings and tests).
type Tensor struct {
	Name  string
	Shape []int64 // outermost first
	Type  tensor.DType
	role  string // attn_q, ..., norm, bias, router, embd, output
	layer int    // block index, -1 outside blocks
	index uint64 // position in the file: the seed stream
}

// Tensors lists the tensors of o's model in file order with their dtypes:
// norms, biases and routers are F32, the other matrices (experts and
// fused matrices too) take the format's type for their role.
func (o Options) Tensors() ([]Tensor, error) {
	f, err := lookupFormat(o.Format)
	if err != nil {
		return nil, err
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	ts := o.Config.layout()
	for i := range ts {
		t := &ts[i]
		switch {
		case t.role == "norm" || t.role == "bias" || t.role == "router":
			t.Type = tensor.F32
		case f.ftype == ftypeMXFP4MoE && strings.HasSuffix(t.Name, "_exps.weight"):
			t.Type = tensor.MXFP4
		default:
			t.Type = f.types(o.Config, t.role, t.layer)
		}
		if row := t.Shape[len(t.Shape)-1]; row%int64(t.Type.BlockSize()) != 0 {
			return nil, fmt.Errorf("synth: %s: rows of %d elements do not fit %s blocks of %d (choose dimensions that are multiples of %d)",
				t.Name, row, t.Type, t.Type.BlockSize(), t.Type.BlockSize())
		}
	}
	return ts, nil
}

// metadata returns the metadata for o, with the tokenizer; it sets
// o.VocabSize when the vocabulary comes from a file.
func (o *Options) metadata() (*gguf.Metadata, error) {
	f, err := lookupFormat(o.Format)
	if err != nil {
		return nil, err
	}
	m := &gguf.Metadata{}
	if o.VocabFrom != nil {
		n, err := copyTokenizer(m, o.VocabFrom)
		if err != nil {
			return nil, err
		}
		o.VocabSize = n
	} else if err := setSyntheticTokenizer(m, o.VocabSize); err != nil {
		return nil, err
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	c := o.Config
	arch := c.arch()
	kv := []entry{
		{"general.architecture", arch},
		{"general.name", c.Name},
		{"general.description", fmt.Sprintf("random weights written by glassbox synth (format %s, seed %d): output is gibberish by design", o.Format, o.Seed)},
		{"general.file_type", f.ftype},
	}
	// The common keys, then the family's, as converters write them.
	for _, e := range append([]entry{
		{"context_length", uint32(c.CtxLen)},
		{"embedding_length", uint32(c.Dim)},
		{"block_count", uint32(c.Layers)},
		{"feed_forward_length", uint32(c.ffnLength())},
		{"attention.head_count", uint32(c.NumHeads)},
		{"attention.head_count_kv", uint32(c.NumKVHeads)},
		{"rope.dimension_count", uint32(c.HeadDim())},
		{"rope.freq_base", c.ropeBase()},
		{"attention.layer_norm_rms_epsilon", c.normEps()},
		{"vocab_size", uint32(c.VocabSize)},
	}, c.archKeys()...) {
		kv = append(kv, entry{arch + "." + e.k, e.v})
	}
	if f.ftype != 0 && f.ftype != 1 && f.ftype != 32 {
		kv = append(kv, entry{"general.quantization_version", uint32(2)})
	}
	// The general/<arch> keys go first, as converters write them.
	head := &gguf.Metadata{}
	for _, e := range kv {
		if err := head.Set(e.k, e.v); err != nil {
			return nil, err
		}
	}
	for _, e := range m.KVs {
		if err := head.Set(e.Key, e.Value.Any()); err != nil {
			return nil, err
		}
	}
	return head, nil
}

// Write writes the model described by o to w as GGUF v3.
func Write(ctx context.Context, w io.Writer, o Options) error {
	if !(o.WeightStd >= 0) || math.IsInf(o.WeightStd, 0) {
		return fmt.Errorf("synth: weight std %v must be a positive number (or 0: %v)", o.WeightStd, Std)
	}
	meta, err := o.metadata()
	if err != nil {
		return err
	}
	ts, err := o.Tensors()
	if err != nil {
		return err
	}
	var total int64
	for _, t := range ts {
		n, err := t.Type.RowBytes(elements(t.Shape))
		if err != nil {
			return err
		}
		total += n
	}
	g := &generator{ctx: ctx, seed: o.Seed, std: o.WeightStd, workers: o.Workers, total: total, progress: o.Progress}
	if g.std == 0 {
		g.std = Std
	}
	if g.workers <= 0 {
		g.workers = runtime.GOMAXPROCS(0)
	}
	wts := make([]gguf.WriteTensor, len(ts))
	for i, t := range ts {
		wts[i] = gguf.WriteTensor{Name: t.Name, Shape: t.Shape, Type: t.Type, Fill: func(w io.Writer) error { return g.fill(w, t) }}
	}
	return gguf.Write(w, meta, wts)
}

// WriteFile writes the model to path through a temporary file in the same
// folder, renamed into place only when complete: an interrupted or failed
// run leaves no partial model behind.
func WriteFile(ctx context.Context, path string, o Options) error {
	return writeAtomic(path, func(w io.Writer) error { return Write(ctx, w, o) })
}

// writeAtomic writes path through write, renamed into place only when
// complete (internal/atomicfile).
func writeAtomic(path string, write func(io.Writer) error) error {
	if _, err := atomicfile.Write(path, 0o644, write); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

func elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// chunkElems is the target chunk size: whole rows, about 1M values.
const chunkElems = 1 << 20

// generator produces tensor data chunk by chunk: chunk k of tensor t is
// drawn from PCG(seed, t.index<<32 | k), so the bytes do not depend on
// the number of workers or on the order in which chunks finish.
type generator struct {
	ctx      context.Context
	seed     uint64
	std      float64 // of every tensor but the norms
	workers  int
	total    int64
	done     int64
	progress func(done, total int64)
	xs       [][]float32 // per-worker chunk buffers, reused across tensors
	bs       [][]byte
}

func (g *generator) fill(w io.Writer, t Tensor) error {
	rowLen := t.Shape[len(t.Shape)-1]
	rows := elements(t.Shape) / rowLen
	rowsPer := max(1, chunkElems/rowLen)
	nChunks := (rows + rowsPer - 1) / rowsPer
	rowBytes, err := t.Type.RowBytes(rowLen)
	if err != nil {
		return err
	}
	if g.xs == nil {
		g.xs, g.bs = make([][]float32, g.workers), make([][]byte, g.workers)
	}
	type result struct {
		buf []byte
		err error
	}
	// Work on batches of `workers` chunks at a time, written in order.
	for first := int64(0); first < nChunks; first += int64(g.workers) {
		if err := g.ctx.Err(); err != nil {
			return err
		}
		n := min(int64(g.workers), nChunks-first)
		res := make([]result, n)
		var wg sync.WaitGroup
		for j := int64(0); j < n; j++ {
			wg.Add(1)
			go func(j int64) {
				defer wg.Done()
				k := first + j
				r0 := k * rowsPer
				r1 := min(rows, r0+rowsPer)
				x := grow(&g.xs[j], (r1-r0)*rowLen)
				std, mean := g.std, float32(0)
				if t.role == "norm" {
					std, mean = Std, 1
				}
				newNoise(g.seed, t.index<<32|uint64(k), std).fill(x, mean)
				buf := grow(&g.bs[j], (r1-r0)*rowBytes)
				res[j] = result{buf, kernel.Quantize(t.Type, x, buf)}
			}(j)
		}
		wg.Wait()
		for _, r := range res {
			if r.err != nil {
				return r.err
			}
			if _, err := w.Write(r.buf); err != nil {
				return err
			}
			g.done += int64(len(r.buf))
		}
		if g.progress != nil {
			g.progress(g.done, g.total)
		}
	}
	return nil
}

// grow returns (*buf)[:n], reallocating only when the capacity is short.
func grow[T any](buf *[]T, n int64) []T {
	if int64(cap(*buf)) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}
