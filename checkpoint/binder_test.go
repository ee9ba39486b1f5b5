package checkpoint

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

func f32Tensor(name string, shape []int, v ...float32) *Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &Tensor{Name: name, DType: tensor.F32, Shape: shape, Data: b}
}

func f16Tensor(name string, shape []int, v ...float32) *Tensor {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], kernel.FP32ToFP16(x))
	}
	return &Tensor{Name: name, DType: tensor.F16, Shape: shape, Data: b}
}

func TestBinder(t *testing.T) {
	m := &Map{Label: "test.safetensors", Tensors: map[string]*Tensor{
		"a.weight": f32Tensor("a.weight", []int{2, 2}, 1, 2, 3, 4),
		"a.bias":   f16Tensor("a.bias", []int{2}, 0.5, -1.5),
		"vae.x":    f32Tensor("vae.x", []int{1}, 7),
		"a.bf16":   {Name: "a.bf16", DType: tensor.BF16, Shape: []int{2}, Data: []byte{0xc0, 0x3f, 0x80, 0xbe}},
		"bad":      {Name: "bad", DType: tensor.I64, Shape: []int{1}, Data: make([]byte, 8)},
	}}
	tests := []struct {
		name    string
		bind    func(b *Binder) any
		want    []float32
		wantErr string
		errIs   error
	}{
		{"f32", func(b *Binder) any { return b.Float32("a.weight", 2, 2) }, []float32{1, 2, 3, 4}, "", nil},
		{"f16 widened", func(b *Binder) any { return b.Float32("a.bias", 2) }, []float32{0.5, -1.5}, "", nil},
		{"bf16 widened", func(b *Binder) any { return b.Float32("a.bf16", 2) }, []float32{1.5, -0.25}, "", nil},
		{"missing", func(b *Binder) any { return b.Float32("a.nope", 2) }, nil, `tensor "a.nope": missing`, ErrMissing},
		{"shape", func(b *Binder) any { return b.Float32("a.weight", 4) }, nil, "has shape [2 2], want [4]", ErrShape},
		{"dtype", func(b *Binder) any { return b.Float32("bad", 1) }, nil, "unsupported element type I64", ErrDType},
		{"sub", func(b *Binder) any { return NewBinder(Sub(m, "vae.")).Float32("x", 1) }, []float32{7}, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBinder(m)
			got := tc.bind(b)
			if tc.wantErr != "" {
				if b.Err() == nil || !strings.Contains(b.Err().Error(), tc.wantErr) || !errors.Is(b.Err(), tc.errIs) {
					t.Fatalf("err = %v, want %q", b.Err(), tc.wantErr)
				}
				if !strings.Contains(b.Err().Error(), "test.safetensors") {
					t.Errorf("error %q does not name the file", b.Err())
				}
				return
			}
			if b.Err() != nil {
				t.Fatal(b.Err())
			}
			v := got.([]float32)
			if len(v) != len(tc.want) {
				t.Fatalf("got %v, want %v", v, tc.want)
			}
			for i := range v {
				if v[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", v, tc.want)
				}
			}
		})
	}
	b := NewBinder(m)
	b.Float32("a.weight", 2, 2)
	if got := strings.Join(b.Unused(), ","); got != "a.bf16,a.bias,bad,vae.x" {
		t.Errorf("Unused = %s", got)
	}
	h := b.Float16("a.bias", 2)
	if kernel.FP16ToFP32(h[1]) != -1.5 {
		t.Errorf("Float16 = %v", h)
	}
}

// evictMap is a Map that records what a loader evicts.
type evictMap struct {
	*Map
	evicted []string
}

func (m *evictMap) Evict(b []byte) {
	for name, t := range m.Tensors {
		if len(t.Data) > 0 && len(b) > 0 && &t.Data[0] == &b[0] && len(t.Data) == len(b) {
			m.evicted = append(m.evicted, name)
		}
	}
}

// TestBinderEvicts: the copying binds drop the file pages of what they
// copied; Raw, which hands out the file's own bytes, does not, and a
// failed bind evicts nothing.
func TestBinderEvicts(t *testing.T) {
	tests := []struct {
		name string
		bind func(b *Binder)
		want []string
	}{
		{"Float32", func(b *Binder) { b.Float32("w", 2) }, []string{"w"}},
		{"Float16", func(b *Binder) { b.Float16("w", 2) }, []string{"w"}},
		{"Raw keeps its pages", func(b *Binder) { b.Raw("w", 2) }, nil},
		{"wrong shape", func(b *Binder) { b.Float32("w", 3) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &evictMap{Map: &Map{Label: "m.safetensors", Tensors: map[string]*Tensor{"w": f32Tensor("w", []int{2}, 1, 2)}}}
			tc.bind(NewBinder(m))
			if strings.Join(m.evicted, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("evicted %v, want %v", m.evicted, tc.want)
			}
		})
	}
}
