package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestWanSpecExample: the README's worked example (§1).
func TestWanSpecExample(t *testing.T) {
	if z := wanSplitmix(0x3e9); z != 0x533e00f7f3c606d4 {
		t.Fatalf("splitmix64(0x3e9) = %#x", z)
	}
	if r := wanUniform(1001, 0, 0); r != -0.34967041015625 {
		t.Fatalf("r = %v", r)
	}
	pe := WanTensor{"patch_embedding.weight", []int{128, 16, 1, 2, 2}}
	x := make([]float32, 3)
	wanFill(x, 1001, 0, pe, 0)
	for i, want := range []uint32{0xbd9b0bad, 0x3e4037e5, 0x3d384330} {
		if got := math.Float32bits(x[i]); got != want {
			t.Errorf("element %d: %#x, want %#x", i, got, want)
		}
	}
	for _, c := range []struct {
		k    int
		name string
		want uint32
	}{
		{21, "blocks.0.self_attn.norm_q.weight", 0x4002e47b},
		{23, "blocks.0.norm3.weight", 0x3f4484fa},
		{12, "blocks.0.modulation", 0xbe14a1c6},
	} {
		v := make([]float32, 1)
		wanFill(v, 1001, c.k, WanTensor{c.name, []int{128}}, 0)
		if got := math.Float32bits(v[0]); got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, got, c.want)
		}
	}
}

// TestWanFiles: each written file is byte for byte the spec's (size and
// sha256 from README §1), and each tensor's data matches its recorded name,
// shape and hash.
func TestWanFiles(t *testing.T) {
	for _, c := range []struct {
		kind, spec string
		seed       uint64
		tensors    []WanTensor
		size       int
		sha256     string
	}{
		{"umt5-tiny", "umt5-tiny-s4001-F32", 4001, UMT5Tensors(UMT5Tiny), 397560, "b52eb1a9c6605e7c5793712f24617baac1f80d5828e11ad4f060fddabed2846e"},
		{"dit-tiny", "wan-dit-tiny-s1001-F32", 1001, DiTTensors(DiTTiny), 2363392, "cdaebe3dfe3952d626a68cda20d22c601231dc069976f1d40c19f365e7e7510c"},
	} {
		t.Run(c.kind, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteWan(context.Background(), &b, c.kind, c.seed, tensor.F32); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b.Bytes())
			if got := hex.EncodeToString(sum[:]); got != c.sha256 || b.Len() != c.size {
				t.Errorf("file: %d bytes sha256 %s, want %d bytes %s", b.Len(), got, c.size, c.sha256)
			}
			checkTensors(t, c.spec, c.seed, c.tensors, tensor.F32, nil)
		})
	}
}

// TestWanDiT1_3B: the 1.3B layout is the spec's tensor for tensor (names
// and shapes of all 825), and the data of the first tensor of every rule,
// the whole first block and the head match their recorded F16 hashes; then
// the whole 2.8 GB file streams through sha256 (about 6 s of CPU; skipped
// with -short).
func TestWanDiT1_3B(t *testing.T) {
	ts := DiTTensors(DiT1_3B)
	seen := map[wanRule]bool{}
	checkTensors(t, "wan-dit-1.3b-s3001-F16", 3001, ts, tensor.F16, func(k int, name string) bool {
		r := wanRuleOf(name)
		first := !seen[r]
		seen[r] = true
		return first || strings.HasPrefix(name, "blocks.0.") || strings.HasPrefix(name, "head.") || (k > 12 && k < 40 && r != wanWeight)
	})
	if testing.Short() {
		t.Skip("-short: the whole file's sha256 is not checked")
	}
	h := sha256.New()
	cw := &countWriter{w: h}
	if err := WriteWan(context.Background(), cw, "dit-1.3b", 3001, tensor.F16); err != nil {
		t.Fatal(err)
	}
	const want = "437b7f4201c7ba071a7ac78849cd566294efedcbacaf2cc0e251309d44d616f2"
	if got := hex.EncodeToString(h.Sum(nil)); got != want || cw.n != 2838076536 {
		t.Errorf("file: %d bytes sha256 %s, want 2,838,076,536 bytes %s", cw.n, got, want)
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return c.w.Write(b) }

// checkTensors compares a layout with the spec's weights/<file>.tensors.json
// (every name and shape) and the data hashes of the tensors pick selects
// (nil: all).
func checkTensors(t *testing.T, file string, seed uint64, ts []WanTensor, dt tensor.DType, pick func(k int, name string) bool) {
	t.Helper()
	raw, err := os.ReadFile(shared.Path(t, "golden/wan/weights/"+file+".tensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Tensors []struct {
			Name   string `json:"name"`
			Shape  []int  `json:"shape"`
			SHA256 string `json:"sha256"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if len(ts) != len(spec.Tensors) {
		t.Fatalf("%d tensors, spec has %d", len(ts), len(spec.Tensors))
	}
	checked := 0
	for k, st := range spec.Tensors {
		if ts[k].Name != st.Name || !slices.Equal(ts[k].Shape, st.Shape) {
			t.Fatalf("tensor %d: %s %v, spec %s %v", k, ts[k].Name, ts[k].Shape, st.Name, st.Shape)
		}
		if pick != nil && !pick(k, st.Name) {
			continue
		}
		n := 1
		for _, d := range st.Shape {
			n *= d
		}
		x := make([]float32, n)
		wanFill(x, seed, k, ts[k], 0)
		var data []byte
		if dt == tensor.F16 {
			data = make([]byte, 2*n)
			kernel.FP32sToFP16(data, x)
		} else {
			data = make([]byte, 4*n)
			for i, v := range x {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
			}
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != st.SHA256 {
			t.Errorf("tensor %d %s: data sha256 differs", k, st.Name)
		}
		checked++
	}
	t.Logf("%s: %d tensors' names and shapes, %d tensors' data", file, len(ts), checked)
}

// TestCheckWanFile: the written file passes; a truncated one, another
// seed or dtype, and a changed element near a tensor's end fail.
func TestCheckWanFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/dit-tiny.safetensors"
	if err := WriteWanFile(context.Background(), path, "dit-tiny", 1001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	if err := CheckWanFile(path, "dit-tiny", 1001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	if size, _ := WanSize("dit-1.3b", 3001, tensor.F16); size != 2838076536 {
		t.Errorf("dit-1.3b F16: %d bytes, want 2,838,076,536", size)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipped := slices.Clone(good)
	flipped[len(flipped)-3] ^= 1 // head.head.bias, its last element
	for _, c := range []struct {
		name string
		data []byte
		seed uint64
		dt   tensor.DType
		want string
	}{
		{"truncated", good[:len(good)-4], 1001, tensor.F32, "bytes"},
		{"seed", good, 1002, tensor.F32, "header"},
		{"dtype", good, 1001, tensor.F16, "bytes"},
		{"element", flipped, 1001, tensor.F32, "head.head.bias: elements"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := dir + "/" + c.name
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := CheckWanFile(p, "dit-tiny", c.seed, c.dt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// TestWanUMT5XXL: the umt5-xxl layout (Wan's names, umt5_xxl's shapes), its
// header as written (F16 and F32), and elements of every rule computed
// here from the spec's formulas alone, without generating the 11 GB file:
// the writer is stopped after the header and the first elements.
func TestWanUMT5XXL(t *testing.T) {
	ts := UMT5Tensors(UMT5XXL)
	if len(ts) != 242 {
		t.Fatalf("%d tensors, want 242", len(ts))
	}
	var params int64
	for _, wt := range ts {
		params += wanNumel(wt)
	}
	if params != 5_680_910_336 {
		t.Fatalf("%d parameters, want 5,680,910,336", params)
	}
	for _, c := range []struct {
		k     int
		name  string
		shape []int
	}{
		{0, "token_embedding.weight", []int{256384, 4096}},
		{1, "blocks.0.norm1.weight", []int{4096}},
		{2, "blocks.0.attn.q.weight", []int{4096, 4096}},
		{5, "blocks.0.attn.o.weight", []int{4096, 4096}},
		{6, "blocks.0.norm2.weight", []int{4096}},
		{7, "blocks.0.ffn.gate.0.weight", []int{10240, 4096}},
		{8, "blocks.0.ffn.fc1.weight", []int{10240, 4096}},
		{9, "blocks.0.ffn.fc2.weight", []int{4096, 10240}},
		{10, "blocks.0.pos_embedding.embedding.weight", []int{32, 64}},
		{231, "blocks.23.norm1.weight", []int{4096}},
		{240, "blocks.23.pos_embedding.embedding.weight", []int{32, 64}},
		{241, "norm.weight", []int{4096}},
	} {
		if ts[c.k].Name != c.name || !slices.Equal(ts[c.k].Shape, c.shape) {
			t.Errorf("tensor %d: %s %v, want %s %v", c.k, ts[c.k].Name, ts[c.k].Shape, c.name, c.shape)
		}
	}

	// The values: the spec's formulas, written out here.
	splitmix := func(x uint64) uint64 {
		x += 0x9E3779B97F4A7C15
		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
		x = (x ^ (x >> 27)) * 0x94D049BB133111EB
		return x ^ (x >> 31)
	}
	r := func(seed uint64, k int, i int64) float64 {
		return (float64(splitmix(seed+uint64(k)<<40+uint64(i))>>40) - 8388608) / 8388608
	}
	const seed = 5001
	for _, c := range []struct {
		k    int
		i    int64
		want func(r float64) float32
	}{
		{0, 0, func(r float64) float32 { return float32(r * math.Sqrt(3)) }}, // embedding
		{0, 256384*4096 - 1, func(r float64) float32 { return float32(r * math.Sqrt(3)) }},
		{1, 17, func(r float64) float32 { return float32(1 + r/4) }},                                   // norm_weight
		{2, 4096*4096 - 1, func(r float64) float32 { return float32(r * math.Sqrt(3) / 64) }},          // weight, fan_in 4096
		{9, 123456, func(r float64) float32 { return float32(r * (math.Sqrt(3) / math.Sqrt(10240))) }}, // fan_in 10240
		{7, 5, func(r float64) float32 { return float32(r * (math.Sqrt(3) / math.Sqrt(4096))) }},
		{10, 2047, func(r float64) float32 { return float32(r * math.Sqrt(3)) }}, // embedding
		{240, 0, func(r float64) float32 { return float32(r * math.Sqrt(3)) }},
		{241, 4095, func(r float64) float32 { return float32(1 + r/4) }},
	} {
		got := make([]float32, 1)
		wanFill(got, seed, c.k, ts[c.k], c.i)
		if want := c.want(r(seed, c.k, c.i)); got[0] != want {
			t.Errorf("%s[%d]: %v, want %v", ts[c.k].Name, c.i, got[0], want)
		}
	}

	// The file as WriteWan streams it: the header, then token_embedding's
	// first elements.
	for _, dt := range []tensor.DType{tensor.F16, tensor.F32} {
		w := &prefixWriter{limit: 1 << 20}
		if err := WriteWan(context.Background(), w, "umt5-xxl", seed, dt); err != errPrefixFull {
			t.Fatalf("%s: WriteWan: %v", dt, err)
		}
		b := w.buf.Bytes()
		n := int(binary.LittleEndian.Uint64(b))
		if (8+n)%8 != 0 {
			t.Errorf("%s: header of %d bytes does not end on a multiple of 8", dt, n)
		}
		var hdr map[string]json.RawMessage
		if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
			t.Fatalf("%s: header: %v", dt, err)
		}
		if m := string(hdr["__metadata__"]); m != `{"spec":"glassbox-wan-init-v1","kind":"umt5-xxl","seed":"5001"}` {
			t.Errorf("%s: metadata %s", dt, m)
		}
		if len(hdr) != 1+len(ts) {
			t.Errorf("%s: %d header entries, want %d", dt, len(hdr), 1+len(ts))
		}
		es := int64(dt.TypeSize())
		var off int64
		for _, wt := range ts {
			var e struct {
				DType   string  `json:"dtype"`
				Shape   []int   `json:"shape"`
				Offsets []int64 `json:"data_offsets"`
			}
			if err := json.Unmarshal(hdr[wt.Name], &e); err != nil {
				t.Fatalf("%s: %s: %v", dt, wt.Name, err)
			}
			end := off + wanNumel(wt)*es
			if e.DType != dt.String() || !slices.Equal(e.Shape, wt.Shape) || !slices.Equal(e.Offsets, []int64{off, end}) {
				t.Fatalf("%s: %s: %+v, want %s %v [%d %d]", dt, wt.Name, e, dt, wt.Shape, off, end)
			}
			off = end
		}
		if size, _ := WanSize("umt5-xxl", seed, dt); size != int64(8+n)+off || size != int64(8+n)+params*es {
			t.Errorf("%s: WanSize %d, header and data %d", dt, size, int64(8+n)+off)
		}
		data := b[8+n:]
		for i := range int64(3) {
			want := float32(r(seed, 0, i) * math.Sqrt(3))
			var got float32
			if dt == tensor.F16 {
				got = kernel.FP16ToFP32(binary.LittleEndian.Uint16(data[2*i:]))
				want = kernel.FP16ToFP32(kernel.FP32ToFP16(want))
			} else {
				got = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
			if got != want {
				t.Errorf("%s: token_embedding.weight[%d] = %v, want %v", dt, i, got, want)
			}
		}
	}
}

var errPrefixFull = errors.New("prefix full")

// prefixWriter keeps the first limit bytes written, then fails.
type prefixWriter struct {
	buf   bytes.Buffer
	limit int
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if room := p.limit - p.buf.Len(); len(b) > room {
		p.buf.Write(b[:room])
		return room, errPrefixFull
	}
	return p.buf.Write(b)
}
