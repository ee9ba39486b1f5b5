package synth

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Std is the standard deviation of the random matrices (and of the noise
// around 1 in the norm weights).
const Std = 0.02

// Options describe one synthetic model.
type Options struct {
	Config
	Format string // a name from Formats, e.g. "Q4_K_M"
	Seed   uint64
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
	role  string  // attn_q, ..., norm, embd, output
	layer int     // block index, -1 outside blocks
	index uint64  // position in the file: the seed stream
	mean  float32 // 1 for norms, 0 for matrices
}

// Tensors lists the tensors of o's model in file order with their dtypes.
func (o Options) Tensors() ([]Tensor, error) {
	f, err := lookupFormat(o.Format)
	if err != nil {
		return nil, err
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	c := o.Config
	d, kv, ff, v := int64(c.Dim), int64(c.HeadDim()*c.NumKVHeads), int64(c.HiddenDim), int64(c.VocabSize)
	var ts []Tensor
	add := func(name, role string, layer int, shape ...int64) {
		t := Tensor{Name: name, Shape: shape, role: role, layer: layer, index: uint64(len(ts))}
		switch role {
		case "norm":
			t.Type, t.mean = tensor.F32, 1
		case "router":
			t.Type = tensor.F32
		default:
			t.Type = f.types(c, role, layer)
		}
		ts = append(ts, t)
	}
	add("token_embd.weight", "embd", -1, v, d)
	for i := 0; i < c.Layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		add(b+"attn_norm.weight", "norm", i, d)
		add(b+"attn_q.weight", "attn_q", i, d, d)
		add(b+"attn_k.weight", "attn_k", i, kv, d)
		add(b+"attn_v.weight", "attn_v", i, kv, d)
		add(b+"attn_output.weight", "attn_output", i, d, d)
		add(b+"ffn_norm.weight", "norm", i, d)
		if e := int64(c.Experts); e > 0 {
			// The router stays F32, as llama-quantize leaves it; the
			// experts take the types of the dense matrices they replace.
			add(b+"ffn_gate_inp.weight", "router", i, e, d)
			add(b+"ffn_gate_exps.weight", "ffn_gate", i, e, ff, d)
			add(b+"ffn_up_exps.weight", "ffn_up", i, e, ff, d)
			add(b+"ffn_down_exps.weight", "ffn_down", i, e, d, ff)
			continue
		}
		add(b+"ffn_gate.weight", "ffn_gate", i, ff, d)
		add(b+"ffn_up.weight", "ffn_up", i, ff, d)
		add(b+"ffn_down.weight", "ffn_down", i, d, ff)
	}
	add("output_norm.weight", "norm", -1, d)
	add("output.weight", "output", -1, v, d)
	for _, t := range ts {
		if row := t.Shape[len(t.Shape)-1]; row%int64(t.Type.BlockSize()) != 0 {
			return nil, fmt.Errorf("synth: %s: rows of %d elements do not fit %s blocks of %d (choose dimensions that are multiples of %d)",
				t.Name, row, t.Type, t.Type.BlockSize(), t.Type.BlockSize())
		}
	}
	return ts, nil
}

// metadata returns the llama metadata for o, with the tokenizer; it sets
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
	kv := []struct {
		k string
		v any
	}{
		{"general.architecture", "llama"},
		{"general.name", c.Name},
		{"general.description", fmt.Sprintf("random weights written by glassbox synth (format %s, seed %d): output is gibberish by design", o.Format, o.Seed)},
		{"general.file_type", f.ftype},
		{"llama.context_length", uint32(c.CtxLen)},
		{"llama.embedding_length", uint32(c.Dim)},
		{"llama.block_count", uint32(c.Layers)},
		{"llama.feed_forward_length", uint32(c.HiddenDim)},
		{"llama.attention.head_count", uint32(c.NumHeads)},
		{"llama.attention.head_count_kv", uint32(c.NumKVHeads)},
		{"llama.rope.dimension_count", uint32(c.HeadDim())},
		{"llama.rope.freq_base", c.RopeBase},
		{"llama.attention.layer_norm_rms_epsilon", c.NormEps},
		{"llama.vocab_size", uint32(c.VocabSize)},
	}
	if c.Experts > 0 {
		kv = append(kv, struct {
			k string
			v any
		}{"llama.expert_count", uint32(c.Experts)}, struct {
			k string
			v any
		}{"llama.expert_used_count", uint32(c.ExpertsUsed)})
	}
	if f.ftype != 0 && f.ftype != 1 && f.ftype != 32 {
		kv = append(kv, struct {
			k string
			v any
		}{"general.quantization_version", uint32(2)})
	}
	// The general/llama keys go first, as converters write them.
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
	g := &generator{ctx: ctx, seed: o.Seed, workers: o.Workers, total: total, progress: o.Progress}
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
func WriteFile(ctx context.Context, path string, o Options) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.partial")
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = Write(ctx, tmp, o); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes 0600; a model is shared read-only
		return fmt.Errorf("synth: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
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
				newNoise(g.seed, t.index<<32|uint64(k), Std).fill(x, t.mean)
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
