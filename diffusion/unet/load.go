package unet

import (
	"encoding/binary"
	"unsafe"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/tensor"
)

// binder binds the UNet's tensors by their CompVis names, counting bytes
// and collecting the ResBlocks.
type binder struct {
	*checkpoint.Binder
	evicter checkpoint.Evicter // the source, if its data are a mapped file's
	path    string
	bytes   int64
	res     []*resBlock
}

func (b *binder) fail(name string, err error) {
	b.Fail(&checkpoint.Error{Path: b.path, Tensor: name, Err: err})
}

// vector binds a 1-D tensor as float32.
func (b *binder) vector(name string, n int) []float32 {
	v := b.Float32(name, n)
	b.bytes += 4 * int64(len(v))
	return v
}

// matrix binds a (rows, cols) weight as a Matrix over the source's bytes.
func (b *binder) matrix(name string, rows, cols int) compute.Matrix {
	t := b.Raw(name, rows, cols)
	if t == nil {
		return compute.Matrix{}
	}
	m, err := compute.NewMatrix(t.DType, rows, cols, t.Data)
	if err != nil {
		b.fail(name, err)
		return compute.Matrix{}
	}
	b.bytes += int64(len(t.Data))
	return m
}

// linear binds prefix.weight (out, in) and, when bias is set, prefix.bias,
// for the one-row products of the time embedding (compute.MatMul).
func (b *binder) linear(prefix string, out, in int, bias bool) (compute.Matrix, []float32) {
	m := b.matrix(prefix+".weight", out, in)
	if !bias {
		return m, nil
	}
	return m, b.vector(prefix+".bias", out)
}

// conv binds prefix.weight (cout, cin, k, k) and prefix.bias (cout) as a
// packed convolution with binary16 weights (F32 or BF16 files rounded to
// nearest, as stable-diffusion.cpp stores every convolution kernel in F16).
func (b *binder) conv(prefix string, cout, cin, k, stride int) *conv.Conv {
	t, w := b.halves(prefix+".weight", cout, cin, k, k)
	bias := b.Float32(prefix+".bias", cout)
	if w == nil || bias == nil {
		return nil
	}
	c, err := conv.NewConvF16(w, bias, cout, cin, k, stride)
	if err != nil {
		b.fail(prefix+".weight", err)
		return nil
	}
	b.evict(t)
	b.bytes += c.Bytes()
	return c
}

// evict drops the file's pages of t, which a kernel now holds a copy of,
// from the resident set (checkpoint.Evicter; without it they stay: the
// process would hold the convolutions twice, 1 GB more).
func (b *binder) evict(t *checkpoint.Tensor) {
	if b.evicter != nil && t != nil {
		b.evicter.Evict(t.Data)
	}
}

// halves returns the tensor called name as binary16 values: F16 data
// viewed in place (NewConvF16 copies it into its blocks, so a load makes
// no second 1 GB of garbage), other types converted (checkpoint.Float16s).
func (b *binder) halves(name string, shape ...int) (*checkpoint.Tensor, []uint16) {
	t := b.Raw(name, shape...)
	if t == nil {
		return nil, nil
	}
	if n := t.Numel(); littleEndian && t.DType == tensor.F16 && len(t.Data) == 2*n && n > 0 && uintptr(unsafe.Pointer(&t.Data[0]))%2 == 0 {
		return t, unsafe.Slice((*uint16)(unsafe.Pointer(&t.Data[0])), n)
	}
	v, err := checkpoint.Float16s(t)
	if err != nil {
		b.fail(name, err)
		return nil, nil
	}
	return t, v
}

// littleEndian reports whether the host's byte order is the files' (so a
// file's F16 bytes are its uint16 values).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// upConv binds an Upsample's 3×3 convolution (folded into the upsampling,
// its combined weights kept as binary16).
func (b *binder) upConv(prefix string, cout, cin int) *conv.UpConv {
	t := b.Raw(prefix+".weight", cout, cin, 3, 3)
	w := b.Float32(prefix+".weight", cout, cin, 3, 3)
	bias := b.Float32(prefix+".bias", cout)
	if w == nil || bias == nil {
		return nil
	}
	c, err := conv.NewUpConvF16(w, bias, cout, cin)
	if err != nil {
		b.fail(prefix+".weight", err)
		return nil
	}
	b.evict(t)
	b.bytes += c.Bytes()
	return c
}

// resBlock binds a ResBlock of cin → cout channels under prefix.
func (b *binder) resBlock(prefix string, cin, cout int) *resBlock {
	rb := &resBlock{cin: cin, cout: cout, e: make([]float32, cout)}
	rb.inNormW, rb.inNormB = b.vector(prefix+"in_layers.0.weight", cin), b.vector(prefix+"in_layers.0.bias", cin)
	rb.inConv = b.conv(prefix+"in_layers.2", cout, cin, 3, 1)
	rb.emb, rb.embB = b.linear(prefix+"emb_layers.1", cout, timeDim, true)
	rb.outNormW, rb.outNormB = b.vector(prefix+"out_layers.0.weight", cout), b.vector(prefix+"out_layers.0.bias", cout)
	rb.outConv = b.conv(prefix+"out_layers.3", cout, cout, 3, 1)
	if cin != cout {
		rb.skip = b.conv(prefix+"skip_connection", cout, cin, 1, 1)
	}
	b.res = append(b.res, rb)
	return rb
}

// transformer binds a SpatialTransformer of dim channels under prefix.
func (b *binder) transformer(prefix string, dim int) *transformer {
	t := &transformer{dim: dim}
	t.normW, t.normB = b.vector(prefix+"norm.weight", dim), b.vector(prefix+"norm.bias", dim)
	t.projIn = b.rows(prefix+"proj_in", dim, dim, true, true)
	p := prefix + "transformer_blocks.0."
	t.norm1W, t.norm1B = b.vector(p+"norm1.weight", dim), b.vector(p+"norm1.bias", dim)
	t.q1 = b.rows(p+"attn1.to_q", dim, dim, false, false)
	t.k1 = b.rows(p+"attn1.to_k", dim, dim, false, false)
	t.v1 = b.rows(p+"attn1.to_v", dim, dim, false, false)
	t.o1 = b.rows(p+"attn1.to_out.0", dim, dim, true, false)
	t.norm2W, t.norm2B = b.vector(p+"norm2.weight", dim), b.vector(p+"norm2.bias", dim)
	t.q2 = b.rows(p+"attn2.to_q", dim, dim, false, false)
	t.k2 = b.rows(p+"attn2.to_k", dim, ctxDim, false, false)
	t.v2 = b.rows(p+"attn2.to_v", dim, ctxDim, false, false)
	t.o2 = b.rows(p+"attn2.to_out.0", dim, dim, true, false)
	t.norm3W, t.norm3B = b.vector(p+"norm3.weight", dim), b.vector(p+"norm3.bias", dim)
	t.ff1 = b.rows(p+"ff.net.0.proj", 8*dim, dim, true, false)
	t.ff2 = b.rows(p+"ff.net.2", dim, 4*dim, true, false)
	t.projOut = b.rows(prefix+"proj_out", dim, dim, true, true)
	return t
}

// rows binds a linear layer prefix.weight (out, in) — (out, in, 1, 1) when
// conv1 is set — and, when bias is set, prefix.bias, as a 1×1 convolution
// with binary16 weights for conv.Conv.Rows (F32 and BF16 files rounded to
// nearest), the file's pages then dropped like the convolutions'.
func (b *binder) rows(prefix string, out, in int, bias, conv1 bool) *conv.Conv {
	shape := []int{out, in}
	if conv1 {
		shape = append(shape, 1, 1)
	}
	t, w := b.halves(prefix+".weight", shape...)
	var bv []float32
	if bias {
		bv = b.Float32(prefix+".bias", out)
	}
	if w == nil || (bias && bv == nil) {
		return nil
	}
	c, err := conv.NewConvF16(w, bv, out, in, 1, 1)
	if err != nil {
		b.fail(prefix+".weight", err)
		return nil
	}
	b.evict(t)
	b.bytes += c.Bytes()
	return c
}
