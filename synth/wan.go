package synth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Wan 2.1's random-weight files, spec glassbox-wan-init-v1
// (shared/golden/wan/README.md §1): element i of tensor k (state_dict
// order) is a splitmix64 function of seed + (k << 40) + i, scaled by a rule
// chosen from the tensor's name, rounded once to float32 (and to binary16
// for F16 files). The safetensors header is compact JSON with
// "__metadata__" (spec, kind, seed) first, then the tensors in order,
// padded with spaces to a multiple of 8 bytes.

// WanSpec is the spec's name, written in every file's metadata.
const WanSpec = "glassbox-wan-init-v1"

// WanTensor is one tensor of a Wan layout, in state_dict order.
type WanTensor struct {
	Name  string
	Shape []int
}

// wanSplitmix is splitmix64's output function (Steele, Lea & Flood 2014,
// "Fast splittable pseudorandom number generators").
func wanSplitmix(x uint64) uint64 {
	z := x + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// wanUniform is r in [-1, 1): the top 24 bits of the counter's hash.
func wanUniform(seed uint64, k int, i int64) float64 {
	m := wanSplitmix(seed+uint64(k)<<40+uint64(i)) >> 40
	return (float64(m) - (1 << 23)) / (1 << 23)
}

// wanRule is how a tensor's uniform values become weights.
type wanRule uint8

const (
	wanModulation wanRule = iota // r·√3/2
	wanQKNorm                    // 2 + r/2
	wanNormWeight                // 1 + r/4
	wanNormBias                  // r/4
	wanEmbedding                 // r·√3
	wanBias                      // r/8
	wanWeight                    // r·√3/√fan_in
)

// wanRuleOf is the spec's first matching rule for a tensor name.
func wanRuleOf(name string) wanRule {
	parts := strings.Split(name, ".")
	last := parts[len(parts)-1]
	prev := ""
	if len(parts) > 1 {
		prev = parts[len(parts)-2]
	}
	switch {
	case last == "modulation":
		return wanModulation
	case strings.HasSuffix(name, ".norm_q.weight") || strings.HasSuffix(name, ".norm_k.weight"):
		return wanQKNorm
	case last == "gamma" || (strings.HasPrefix(prev, "norm") && last == "weight"):
		return wanNormWeight
	case strings.HasPrefix(prev, "norm") && last == "bias":
		return wanNormBias
	case name == "token_embedding.weight" || strings.HasSuffix(name, "pos_embedding.embedding.weight"):
		return wanEmbedding
	case strings.HasSuffix(name, "bias"):
		return wanBias
	}
	return wanWeight
}

// wanFill sets x to elements i0.. of tensor k of the layout.
func wanFill(x []float32, seed uint64, k int, t WanTensor, i0 int64) {
	rule := wanRuleOf(t.Name)
	var s float64
	switch rule {
	case wanModulation:
		s = math.Sqrt(3) / 2
	case wanEmbedding:
		s = math.Sqrt(3)
	case wanWeight:
		fanIn := 1
		for _, d := range t.Shape[1:] {
			fanIn *= d
		}
		s = math.Sqrt(3) / math.Sqrt(float64(fanIn))
	}
	for j := range x {
		r := wanUniform(seed, k, i0+int64(j))
		switch rule {
		case wanQKNorm:
			x[j] = float32(2 + r/2)
		case wanNormWeight:
			x[j] = float32(1 + r/4)
		case wanNormBias:
			x[j] = float32(r / 4)
		case wanBias:
			x[j] = float32(r / 8)
		default:
			x[j] = float32(r * s)
		}
	}
}

// WanInput returns n values of the goldens' input generator x(seed, k):
// f32(r·√3), uniform with standard deviation 1 (README §3).
func WanInput(seed uint64, k int, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(wanUniform(seed, k, int64(i)) * math.Sqrt(3))
	}
	return x
}

// UMT5Config is the shape of Wan's umT5 text encoder (wan/modules/t5.py:
// T5Encoder with shared_pos=False: every block has its own relative
// position embedding).
type UMT5Config struct {
	VocabSize, Dim, DimAttn, DimFFN, NumHeads, NumLayers, NumBuckets int
}

// UMT5Tiny is the tiny umT5 of the Wan goldens (README §2).
var UMT5Tiny = UMT5Config{VocabSize: 256, Dim: 64, DimAttn: 64, DimFFN: 128, NumHeads: 4, NumLayers: 2, NumBuckets: 32}

// UMT5XXL is umt5_xxl, Wan 2.1's text encoder.
var UMT5XXL = UMT5Config{VocabSize: 256384, Dim: 4096, DimAttn: 4096, DimFFN: 10240, NumHeads: 64, NumLayers: 24, NumBuckets: 32}

// UMT5Tensors is the encoder's state_dict in order, with Wan's names.
func UMT5Tensors(c UMT5Config) []WanTensor {
	ts := []WanTensor{{"token_embedding.weight", []int{c.VocabSize, c.Dim}}}
	for l := range c.NumLayers {
		p := "blocks." + strconv.Itoa(l) + "."
		ts = append(ts,
			WanTensor{p + "norm1.weight", []int{c.Dim}},
			WanTensor{p + "attn.q.weight", []int{c.DimAttn, c.Dim}},
			WanTensor{p + "attn.k.weight", []int{c.DimAttn, c.Dim}},
			WanTensor{p + "attn.v.weight", []int{c.DimAttn, c.Dim}},
			WanTensor{p + "attn.o.weight", []int{c.Dim, c.DimAttn}},
			WanTensor{p + "norm2.weight", []int{c.Dim}},
			WanTensor{p + "ffn.gate.0.weight", []int{c.DimFFN, c.Dim}},
			WanTensor{p + "ffn.fc1.weight", []int{c.DimFFN, c.Dim}},
			WanTensor{p + "ffn.fc2.weight", []int{c.Dim, c.DimFFN}},
			WanTensor{p + "pos_embedding.embedding.weight", []int{c.NumBuckets, c.NumHeads}},
		)
	}
	return append(ts, WanTensor{"norm.weight", []int{c.Dim}})
}

// DiTConfig is the shape of Wan's text-to-video DiT (wan/modules/model.py:
// WanModel with model_type 't2v', patch (1, 2, 2)).
type DiTConfig struct {
	InDim, OutDim, Dim, FFNDim, FreqDim, TextDim, NumHeads, NumLayers int
}

// DiTTiny is the tiny DiT of the Wan goldens (README §2).
var DiTTiny = DiTConfig{InDim: 16, OutDim: 16, Dim: 128, FFNDim: 256, FreqDim: 256, TextDim: 64, NumHeads: 4, NumLayers: 2}

// DiT1_3B is Wan 2.1 T2V-1.3B (wan/configs/wan_t2v_1_3B.py).
var DiT1_3B = DiTConfig{InDim: 16, OutDim: 16, Dim: 1536, FFNDim: 8960, FreqDim: 256, TextDim: 4096, NumHeads: 12, NumLayers: 30}

// DiT14B is Wan 2.1 T2V-14B (wan/configs/wan_t2v_14B.py); no golden file
// uses it, its layout pins the loader.
var DiT14B = DiTConfig{InDim: 16, OutDim: 16, Dim: 5120, FFNDim: 13824, FreqDim: 256, TextDim: 4096, NumHeads: 40, NumLayers: 40}

// DiTTensors is the DiT's state_dict in order, with Wan's names: a
// module's own parameters (blocks.N.modulation) before its children's.
func DiTTensors(c DiTConfig) []WanTensor {
	d := c.Dim
	lin := func(name string, out, in int) []WanTensor {
		return []WanTensor{{name + ".weight", []int{out, in}}, {name + ".bias", []int{out}}}
	}
	ts := []WanTensor{{"patch_embedding.weight", []int{d, c.InDim, 1, 2, 2}}, {"patch_embedding.bias", []int{d}}}
	ts = append(ts, lin("text_embedding.0", d, c.TextDim)...)
	ts = append(ts, lin("text_embedding.2", d, d)...)
	ts = append(ts, lin("time_embedding.0", d, c.FreqDim)...)
	ts = append(ts, lin("time_embedding.2", d, d)...)
	ts = append(ts, lin("time_projection.1", 6*d, d)...)
	for l := range c.NumLayers {
		p := "blocks." + strconv.Itoa(l) + "."
		ts = append(ts, WanTensor{p + "modulation", []int{1, 6, d}})
		for _, attn := range []string{"self_attn", "cross_attn"} {
			for _, m := range []string{"q", "k", "v", "o"} {
				ts = append(ts, lin(p+attn+"."+m, d, d)...)
			}
			ts = append(ts, WanTensor{p + attn + ".norm_q.weight", []int{d}}, WanTensor{p + attn + ".norm_k.weight", []int{d}})
			if attn == "self_attn" {
				ts = append(ts, WanTensor{p + "norm3.weight", []int{d}}, WanTensor{p + "norm3.bias", []int{d}})
			}
		}
		ts = append(ts, lin(p+"ffn.0", c.FFNDim, d)...)
		ts = append(ts, lin(p+"ffn.2", d, c.FFNDim)...)
	}
	ts = append(ts, WanTensor{"head.modulation", []int{1, 2, d}})
	return append(ts, lin("head.head", 4*c.OutDim, d)...)
}

// WanKinds are the files WriteWan knows.
func WanKinds() []string { return []string{"dit-tiny", "dit-1.3b", "umt5-tiny", "umt5-xxl", "vae"} }

// WanVAETensors is Wan 2.1's causal 3-D VAE (wan/modules/vae.py:
// _video_vae: dim 96, z_dim 16, dim_mult [1, 2, 4, 4], 2 ResidualBlocks
// per stage, no attention scales, temporal downsampling [False, True,
// True]) in state_dict order: encoder, conv1, conv2, decoder.
func WanVAETensors() []WanTensor { return wanVAELayout() }

// wanLayout returns a kind's tensors.
func wanLayout(kind string) ([]WanTensor, error) {
	switch kind {
	case "dit-tiny":
		return DiTTensors(DiTTiny), nil
	case "dit-1.3b":
		return DiTTensors(DiT1_3B), nil
	case "umt5-tiny":
		return UMT5Tensors(UMT5Tiny), nil
	case "umt5-xxl":
		return UMT5Tensors(UMT5XXL), nil
	case "vae":
		return WanVAETensors(), nil
	}
	return nil, fmt.Errorf("synth: Wan kind %q (have %s)", kind, strings.Join(WanKinds(), ", "))
}

// wanHeader is the file's header: the length, then the JSON, padded.
func wanHeader(kind string, seed uint64, dt tensor.DType, ts []WanTensor) []byte {
	var js bytes.Buffer
	fmt.Fprintf(&js, `{"__metadata__":{"spec":%q,"kind":%q,"seed":"%d"}`, WanSpec, kind, seed)
	name := map[tensor.DType]string{tensor.F32: "F32", tensor.F16: "F16"}[dt]
	var off int64
	for _, t := range ts {
		n := int64(dt.TypeSize())
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			n *= int64(d)
			dims[i] = strconv.Itoa(d)
		}
		fmt.Fprintf(&js, `,%q:{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`, t.Name, name, strings.Join(dims, ","), off, off+n)
		off += n
	}
	js.WriteByte('}')
	for (8+js.Len())%8 != 0 {
		js.WriteByte(' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(js.Len()))
	return append(out, js.Bytes()...)
}

// WriteWan writes the random-weight Wan file of kind (WanKinds) with seed
// in F32 or F16, byte for byte as the spec gives it. The data streams in
// chunks: the 2.8 GB F16 1.3B file and the 11 GB F16 umt5-xxl need a few
// MiB of memory.
func WriteWan(ctx context.Context, w io.Writer, kind string, seed uint64, dt tensor.DType) error {
	if dt != tensor.F32 && dt != tensor.F16 {
		return fmt.Errorf("synth: Wan files are F32 or F16, not %s", dt)
	}
	ts, err := wanLayout(kind)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(wanHeader(kind, seed, dt, ts)); err != nil {
		return err
	}
	const chunk = 1 << 16
	x := make([]float32, chunk)
	buf := make([]byte, 4*chunk)
	for k, t := range ts {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(d)
		}
		for i0 := int64(0); i0 < n; i0 += chunk {
			m := int(min(chunk, n-i0))
			wanFill(x[:m], seed, k, t, i0)
			if _, err := bw.Write(wanEncode(buf, x[:m], dt)); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// wanEncode writes x into buf as little-endian F32 or F16 and returns the
// bytes written.
func wanEncode(buf []byte, x []float32, dt tensor.DType) []byte {
	if dt == tensor.F16 {
		b := buf[:2*len(x)]
		kernel.FP32sToFP16(b, x)
		return b
	}
	b := buf[:4*len(x)]
	for j, v := range x {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
	}
	return b
}

// WanSize returns the size in bytes of the file WriteWan writes for kind,
// seed (its header holds the seed's digits) and dt.
func WanSize(kind string, seed uint64, dt tensor.DType) (int64, error) {
	ts, err := wanLayout(kind)
	if err != nil {
		return 0, err
	}
	size := int64(len(wanHeader(kind, seed, dt, ts)))
	for _, t := range ts {
		size += wanNumel(t) * int64(dt.TypeSize())
	}
	return size, nil
}

func wanNumel(t WanTensor) int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// wanProbe is how many elements CheckWanFile compares at each end of
// every tensor.
const wanProbe = 256

// CheckWanFile reports whether the file at path is the one WriteWan writes
// for kind, seed and dt, without reading all of it: its size, its header
// byte for byte, and the first and last 256 elements of every tensor. A
// truncated file, another kind, seed or dtype, or moved tensors fail; a
// few flipped bytes inside a tensor would not (a full SHA-256 would).
func CheckWanFile(path, kind string, seed uint64, dt tensor.DType) error {
	ts, err := wanLayout(kind)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size, _ := WanSize(kind, seed, dt)
	if st.Size() != size {
		return fmt.Errorf("synth: %s: %d bytes, Wan %s (%s) has %d", path, st.Size(), kind, dt, size)
	}
	hdr := wanHeader(kind, seed, dt, ts)
	got := make([]byte, len(hdr))
	if _, err := io.ReadFull(f, got); err != nil {
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	if !bytes.Equal(got, hdr) {
		return fmt.Errorf("synth: %s: the header is not Wan %s's (seed %d, %s)", path, kind, seed, dt)
	}
	es := int64(dt.TypeSize())
	x, buf, have := make([]float32, wanProbe), make([]byte, 4*wanProbe), make([]byte, 4*wanProbe)
	off := int64(len(hdr))
	for k, t := range ts {
		n := wanNumel(t)
		for _, i0 := range []int64{0, max(0, n-wanProbe)} {
			m := min(wanProbe, n)
			wanFill(x[:m], seed, k, t, i0)
			want := wanEncode(buf, x[:m], dt)
			if _, err := f.ReadAt(have[:len(want)], off+i0*es); err != nil {
				return fmt.Errorf("synth: %s: tensor %s: %w", path, t.Name, err)
			}
			if !bytes.Equal(have[:len(want)], want) {
				return fmt.Errorf("synth: %s: tensor %s: elements %d..%d are not the spec's", path, t.Name, i0, i0+m-1)
			}
		}
		off += n * es
	}
	return nil
}

// WriteWanFile writes the file to path through a temporary file in the same
// folder, renamed into place only when complete.
func WriteWanFile(ctx context.Context, path, kind string, seed uint64, dt tensor.DType) error {
	return writeAtomic(path, func(w io.Writer) error { return WriteWan(ctx, w, kind, seed, dt) })
}
