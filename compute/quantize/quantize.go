// Package quantize rewrites a GGUF model with its weight matrices in
// another format, as llama-quantize does for its plain types: every 2-D
// tensor whose name ends in "weight" and every 3-D stack of expert
// matrices (blk.N.ffn_*_exps.weight) is converted (row by row: dequantize
// to F32, quantize with kernel.Quantize); an MoE router
// (ffn_gate_inp.weight), 1-D tensors (norms, biases) and everything else
// are copied unchanged, metadata is copied and general.file_type /
// general.quantization_version are set. One mixed type of llama-quantize's
// is written too: MXFP4_MOE, the expert stacks in MXFP4 and every other
// matrix in Q8_0 (Mix).
//
// Rows whose length is not a multiple of the target's block size fall back
// to a format that fits (K-quants to a 32-block legacy format, then F16),
// and the report names each fallback.
//
// Imports: gguf, tensor, kernel, compute and the standard library.
package quantize

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Options configure a conversion.
type Options struct {
	Type tensor.DType  // target weight format
	Mix  *Mix          // if set, the formats by kind of matrix instead of Type
	Pool *compute.Pool // nil: one thread
}

// Mix is one of llama-quantize's file types that give the expert stacks
// one format and the other matrices another.
type Mix struct {
	Name     string       // llama-quantize's name of the file type
	FileType uint32       // its general.file_type (enum llama_ftype)
	Experts  tensor.DType // the stacks of expert matrices (…_exps.weight)
	Others   tensor.DType // every other matrix, the output and token embedding included
}

// Mixes are the mixed types File writes: MXFP4_MOE as llama-quantize
// makes it (src/llama-quant.cpp: experts MXFP4, everything else Q8_0).
var Mixes = []Mix{{Name: "MXFP4_MOE", FileType: 38, Experts: tensor.MXFP4, Others: tensor.Q8_0}}

// TensorReport describes what happened to one tensor.
type TensorReport struct {
	Name     string       `json:"name"`
	Shape    []int64      `json:"shape"`
	From     tensor.DType `json:"-"`
	To       tensor.DType `json:"-"`
	FromName string       `json:"from"`
	ToName   string       `json:"to"`
	Bytes    int64        `json:"bytes"`
	NRMSE    float64      `json:"nrmse"`          // ‖new − old‖/‖old‖ over the tensor (0 when copied)
	Note     string       `json:"note,omitempty"` // why it was kept or fell back
}

// Report summarises a conversion.
type Report struct {
	Type     string         `json:"type"`
	FileType uint32         `json:"file_type"`
	InBytes  int64          `json:"in_tensor_bytes"`
	OutBytes int64          `json:"out_tensor_bytes"`
	Tensors  []TensorReport `json:"tensors"`
}

// llama.cpp's llama_ftype values for the plain types (general.file_type).
var fileTypes = map[tensor.DType]uint32{
	tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q8_0: 7, tensor.Q5_0: 8,
	tensor.Q5_1: 9, tensor.Q2_K: 10, tensor.Q3_K: 11 /* Q3_K_S */, tensor.Q4_K: 14, /* Q4_K_S */
	tensor.Q5_K: 16 /* Q5_K_S */, tensor.Q6_K: 18, tensor.IQ4_NL: 25, tensor.IQ4_XS: 30, tensor.BF16: 32,
	tensor.MXFP4: 38, // MXFP4_MOE, the only llama_ftype whose default type is MXFP4
}

// FileType returns the general.file_type value for a model quantized to dt.
func FileType(dt tensor.DType) (uint32, error) {
	ft, ok := fileTypes[dt]
	if !ok {
		return 0, fmt.Errorf("quantize: %s is not a weight format glassbox can write (use one of %s)", dt, TypeNames())
	}
	return ft, nil
}

// TypeNames lists the accepted target types, the mixes last.
func TypeNames() string {
	var names []string
	for _, t := range tensor.DTypes() {
		if _, ok := fileTypes[t]; ok {
			names = append(names, t.String())
		}
	}
	for _, m := range Mixes {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// Parse parses a target type name, case-insensitively: a weight format
// (ParseType) or a mix's name.
func Parse(s string) (Options, error) {
	for i, m := range Mixes {
		if strings.EqualFold(s, m.Name) {
			return Options{Mix: &Mixes[i]}, nil
		}
	}
	dt, err := ParseType(s)
	return Options{Type: dt}, err
}

// ParseType parses a target type name, case-insensitively.
func ParseType(s string) (tensor.DType, error) {
	dt, ok := tensor.ParseDType(strings.ToUpper(s))
	if !ok {
		return 0, fmt.Errorf("quantize: unknown type %q (use one of %s)", s, TypeNames())
	}
	if _, err := FileType(dt); err != nil {
		return 0, err
	}
	return dt, nil
}

// fallback is the type tried when a row does not fit dt's blocks.
var fallback = map[tensor.DType]tensor.DType{
	tensor.Q2_K: tensor.Q4_0, tensor.Q3_K: tensor.Q4_0, tensor.Q4_K: tensor.Q5_0,
	tensor.Q5_K: tensor.Q5_1, tensor.Q6_K: tensor.Q8_0,
	tensor.Q4_0: tensor.F16, tensor.Q4_1: tensor.F16, tensor.Q5_0: tensor.F16,
	tensor.Q5_1: tensor.F16, tensor.Q8_0: tensor.F16,
	tensor.IQ4_XS: tensor.IQ4_NL, tensor.IQ4_NL: tensor.F16, // as llama-quantize
	tensor.MXFP4: tensor.F16,
}

// isExperts reports whether ti is a stack of expert matrices.
func isExperts(ti *gguf.TensorInfo) bool {
	return len(ti.Shape) == 3 && strings.HasSuffix(ti.Name, "_exps.weight")
}

// want is the format opt asks for ti (a weight matrix or expert stack).
func (opt *Options) want(ti *gguf.TensorInfo) tensor.DType {
	switch {
	case opt.Mix == nil:
		return opt.Type
	case isExperts(ti):
		return opt.Mix.Experts
	}
	return opt.Mix.Others
}

// target picks the type for one tensor and says why it differs from want.
func target(ti *gguf.TensorInfo, opt *Options) (tensor.DType, string) {
	if len(ti.Shape) != 2 && !isExperts(ti) || !strings.HasSuffix(ti.Name, "weight") {
		return ti.Type, "kept: not a 2-D weight matrix or a stack of experts"
	}
	if strings.HasSuffix(ti.Name, "ffn_gate_inp.weight") {
		return ti.Type, "kept: an MoE router (as llama-quantize)"
	}
	if !kernel.Supported(ti.Type) {
		return ti.Type, fmt.Sprintf("kept: cannot read %s", ti.Type)
	}
	cols := ti.Shape[len(ti.Shape)-1]
	want := opt.want(ti)
	dt := want
	for cols%int64(dt.BlockSize()) != 0 {
		next, ok := fallback[dt]
		if !ok {
			return ti.Type, "kept: no format fits its rows"
		}
		dt = next
	}
	if dt != want {
		return dt, fmt.Sprintf("rows of %d are not a multiple of %s's block %d: fell back to %s", cols, want, want.BlockSize(), dt)
	}
	return dt, ""
}

// File converts in to opt.Type (or opt.Mix) and writes the new GGUF to w.
func File(ctx context.Context, in *gguf.File, w io.Writer, opt Options) (*Report, error) {
	rep := &Report{Type: opt.Type.String()}
	quantized := opt.Type.BlockSize() > 1
	if opt.Mix != nil {
		rep.Type, rep.FileType, quantized = opt.Mix.Name, opt.Mix.FileType, true
	} else {
		ft, err := FileType(opt.Type)
		if err != nil {
			return nil, err
		}
		rep.FileType = ft
	}
	var meta gguf.Metadata
	for _, kv := range in.Meta.KVs {
		if err := meta.Set(kv.Key, kv.Value.Any()); err != nil {
			return nil, fmt.Errorf("quantize: copy metadata %q: %w", kv.Key, err)
		}
	}
	if err := meta.Set("general.file_type", rep.FileType); err != nil {
		return nil, err
	}
	if quantized {
		if err := meta.Set("general.quantization_version", uint32(2)); err != nil {
			return nil, err
		}
	}
	out := make([]gguf.WriteTensor, len(in.Tensors))
	rep.Tensors = make([]TensorReport, len(in.Tensors))
	for i := range in.Tensors {
		ti := &in.Tensors[i]
		dt, note := target(ti, &opt)
		tr := &rep.Tensors[i]
		*tr = TensorReport{Name: ti.Name, Shape: ti.Shape, From: ti.Type, To: dt,
			FromName: ti.Type.String(), ToName: dt.String(), Note: note}
		wt := gguf.WriteTensor{Name: ti.Name, Shape: ti.Shape, Type: dt}
		src := in.Data(ti)
		rep.InBytes += int64(len(src))
		if dt == ti.Type {
			wt.Data = src
		} else {
			wt.Fill = func(w io.Writer) error { return convert(ctx, opt.Pool, w, src, ti, dt, tr) }
		}
		size, err := wt.Size()
		if err != nil {
			return nil, fmt.Errorf("quantize: %w", err)
		}
		tr.Bytes = size
		rep.OutBytes += size
		out[i] = wt
	}
	if err := gguf.Write(w, &meta, out); err != nil {
		return nil, fmt.Errorf("quantize: write: %w", err)
	}
	return rep, nil
}

// convert streams one matrix (or stack of them: its rows one after
// another): batches of rows are dequantized and requantized on the pool,
// then written in order.
func convert(ctx context.Context, p *compute.Pool, w io.Writer, src []byte, ti *gguf.TensorInfo, dt tensor.DType, tr *TensorReport) error {
	rows, cols := 1, int(ti.Shape[len(ti.Shape)-1])
	for _, d := range ti.Shape[:len(ti.Shape)-1] {
		rows *= int(d)
	}
	inRB, err := ti.Type.RowBytes(int64(cols))
	if err != nil {
		return err
	}
	outRB, err := dt.RowBytes(int64(cols))
	if err != nil {
		return err
	}
	const batch = 256
	buf := make([]byte, batch*int(outRB))
	threads := p.Threads()
	scratch := make([][]float32, 2*threads)
	for i := range scratch {
		scratch[i] = make([]float32, cols)
	}
	errs := make([]error, threads)
	num := make([]float64, threads)
	den := make([]float64, threads)
	for r0 := 0; r0 < rows; r0 += batch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("quantize %s: %w", ti.Name, err)
		}
		nr := min(batch, rows-r0)
		p.For(threads, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				x, y := scratch[2*t], scratch[2*t+1]
				for r := r0 + t*nr/threads; r < r0+(t+1)*nr/threads; r++ {
					in := src[r*int(inRB) : (r+1)*int(inRB)]
					o := buf[(r-r0)*int(outRB) : (r-r0+1)*int(outRB)]
					if err := kernel.Dequantize(ti.Type, in, x); err != nil {
						errs[t] = err
						return
					}
					if err := kernel.Quantize(dt, x, o); err != nil {
						errs[t] = err
						return
					}
					if err := kernel.Dequantize(dt, o, y); err != nil {
						errs[t] = err
						return
					}
					for c := range x {
						d := float64(y[c]) - float64(x[c])
						num[t] += d * d
						den[t] += float64(x[c]) * float64(x[c])
					}
				}
			}
		})
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("quantize %s: %w", ti.Name, err)
			}
		}
		if _, err := w.Write(buf[:nr*int(outRB)]); err != nil {
			return err
		}
	}
	var n, d float64
	for t := range threads {
		n += num[t]
		d += den[t]
	}
	if d > 0 {
		tr.NRMSE = math.Sqrt(n / d)
	}
	return nil
}
