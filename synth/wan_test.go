package synth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
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

// TestUMT5TinyFile: the written file is byte for byte the spec's (size and
// sha256 from README §1), and each tensor's data matches its recorded
// name, shape and hash.
func TestUMT5TinyFile(t *testing.T) {
	var b bytes.Buffer
	if err := WriteWan(context.Background(), &b, "umt5-tiny", 4001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	const want = "b52eb1a9c6605e7c5793712f24617baac1f80d5828e11ad4f060fddabed2846e"
	if got := hex.EncodeToString(sum[:]); got != want || b.Len() != 397560 {
		t.Errorf("file: %d bytes sha256 %s, want 397,560 bytes %s", b.Len(), got, want)
	}
	raw, err := os.ReadFile(shared.Path(t, "golden/wan/weights/umt5-tiny-s4001-F32.tensors.json"))
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
	ts := UMT5Tensors(UMT5Tiny)
	if len(ts) != len(spec.Tensors) {
		t.Fatalf("%d tensors, spec has %d", len(ts), len(spec.Tensors))
	}
	for k, st := range spec.Tensors {
		if ts[k].Name != st.Name || len(ts[k].Shape) != len(st.Shape) {
			t.Fatalf("tensor %d: %s %v, spec %s %v", k, ts[k].Name, ts[k].Shape, st.Name, st.Shape)
		}
		n := 1
		for i, d := range st.Shape {
			if ts[k].Shape[i] != d {
				t.Fatalf("tensor %d %s: shape %v, spec %v", k, st.Name, ts[k].Shape, st.Shape)
			}
			n *= d
		}
		x := make([]float32, n)
		wanFill(x, 4001, k, ts[k], 0)
		data := make([]byte, 4*n)
		for i, v := range x {
			u := math.Float32bits(v)
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != st.SHA256 {
			t.Errorf("tensor %d %s: data sha256 differs", k, st.Name)
		}
	}
}
