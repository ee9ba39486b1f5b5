package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
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
