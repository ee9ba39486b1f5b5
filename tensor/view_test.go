package tensor

import (
	"encoding/binary"
	"math"
	"testing"
)

func f32data(n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(i)))
	}
	return b
}

func TestViewFiveDims(t *testing.T) {
	shape := Shape{2, 3, 2, 2, 4} // e.g. (batch, frames, h, w, channels)
	v, err := NewView(F32, shape, f32data(shape.Elements()))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Contiguous() || v.Strides[0] != 3*2*2*4*4 {
		t.Fatalf("strides %v", v.Strides)
	}
	// Element [1][2][1][0][3] = 1*48 + 2*16 + 1*8 + 0*4 + 3 = 91.
	x := v
	for _, i := range []int{1, 2, 1, 0} {
		if x, err = x.Index(i); err != nil {
			t.Fatal(err)
		}
	}
	f, err := x.Float32s()
	if err != nil || f[3] != 91 {
		t.Fatalf("element = %v, %v", f, err)
	}
	p, err := v.Permute(1, 0, 2, 3, 4)
	if err != nil || p.Contiguous() || !p.Shape.Equal(Shape{3, 2, 2, 2, 4}) {
		t.Fatalf("permute: %v %v", p.Shape, err)
	}
	if p, err = p.Index(2); err == nil {
		p, err = p.Index(1) // original [1][2]
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(p.Data)); got != 1*48+2*16 {
		t.Fatalf("permuted [2][1] starts with %g, want %d", got, 1*48+2*16)
	}
	if _, err := v.Reshape(Shape{6, 16}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Permute(1, 0, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	s, err := v.Slice(1, 1, 3)
	if err != nil || s.Contiguous() {
		t.Fatalf("slice: %v", err)
	}
	if _, err := s.Reshape(Shape{32}); err == nil {
		t.Error("reshape of non-contiguous view: no error")
	}
}

func TestViewQuantized(t *testing.T) {
	v, err := NewView(Q4_0, Shape{3, 64}, make([]byte, 3*2*18))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := v.Slice(1, 32, 64); err != nil || len(s.Data) != 3*36-18 {
		t.Fatalf("block slice: %v", err)
	}
	for _, tc := range []struct {
		name string
		fn   func() error
	}{
		{"split block", func() error { _, err := v.Slice(1, 16, 64); return err }},
		{"short data", func() error { _, err := NewView(Q4_0, Shape{3, 64}, make([]byte, 100)); return err }},
		{"partial block", func() error { _, err := NewView(Q4_0, Shape{3, 40}, make([]byte, 100)); return err }},
		{"index range", func() error { _, err := v.Index(3); return err }},
		{"permute inner", func() error { _, err := v.Permute(1, 0); return err }},
		{"float32s of q4", func() error { _, err := v.Float32s(); return err }},
		{"reshape count", func() error { _, err := v.Reshape(Shape{2, 64}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); err == nil {
				t.Fatal("no error")
			} else {
				t.Log(err)
			}
		})
	}
}

func TestArena(t *testing.T) {
	a := NewArena(10)
	x := a.Floats(8)
	x[0] = 5
	y := a.Floats(8) // overflows this pass
	if len(y) != 8 || a.Peak() != 16 {
		t.Fatalf("peak %d", a.Peak())
	}
	a.Reset()
	if a.Cap() != 16 {
		t.Fatalf("cap after reset %d", a.Cap())
	}
	allocs := testing.AllocsPerRun(100, func() {
		a.Reset()
		p, q := a.Floats(8), a.Floats(8)
		if p[0] != 0 || q[7] != 0 {
			t.Fatal("not zeroed")
		}
		p[0] = 1
	})
	if allocs != 0 {
		t.Fatalf("%g allocations per pass after warm-up", allocs)
	}
}
