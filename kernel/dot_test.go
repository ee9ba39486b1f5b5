package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// quantized returns x quantized to dt, with guard bytes after the data
// (the returned slice excludes them; its capacity includes them).
func quantized(t testing.TB, dt tensor.DType, x []float32) []byte {
	nb64, err := dt.RowBytes(int64(len(x)))
	if err != nil {
		t.Fatal(err)
	}
	nb := int(nb64)
	b := make([]byte, nb+64)
	for i := nb; i < len(b); i++ {
		b[i] = 0x5a
	}
	if err := Quantize(dt, x, b[:nb]); err != nil {
		t.Fatal(err)
	}
	return b[:nb]
}

func dequantized(t testing.TB, dt tensor.DType, b []byte, n int) []float32 {
	y := make([]float32, n)
	if err := Dequantize(dt, b, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// TestGenericDotIsExact checks the reference quantized dot products
// against a float64 dot of the dequantized operands: the integer block sums
// are exact, so only float rounding separates them.
func TestGenericDotIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for dt, dot := range Generic.Q {
		t.Run(dt.String(), func(t *testing.T) {
			vt, _ := VecDotType(dt)
			for _, blocks := range []int{1, 3, 16} {
				n := blocks * dt.BlockSize()
				w := quantized(t, dt, randNormal(r, n, 1))
				x := quantized(t, vt, randNormal(r, n, 1))
				wf, xf := dequantized(t, dt, w, n), dequantized(t, vt, x, n)
				var want, mag float64
				for i := range wf {
					want += float64(wf[i]) * float64(xf[i])
					mag += math.Abs(float64(wf[i]) * float64(xf[i]))
				}
				got := float64(dot(n, w, x))
				tol := 1e-5
				if vt == tensor.Q8_1 {
					tol = 2e-3 // Q8_1 carries d·Σq rounded to f16, as in ggml
				}
				if math.Abs(got-want) > tol*mag+1e-6 {
					t.Errorf("n=%d: dot %g, dequantized dot %g (Σ|terms| %g)", n, got, want, mag)
				}
			}
		})
	}
}

// TestImplsMatchGeneric runs every implementation usable on this CPU
// against the generic kernels over random data and odd sizes.
func TestImplsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, impl := range Impls() {
		for dt, dot := range impl.Q {
			ref := Generic.Q[dt]
			vt, _ := VecDotType(dt)
			t.Run(fmt.Sprintf("%s/%s", impl.Name, dt), func(t *testing.T) {
				for _, blocks := range []int{1, 2, 3, 5, 8, 17, 64} {
					n := blocks * dt.BlockSize()
					w := quantized(t, dt, randNormal(r, n, 1))
					x := quantized(t, vt, randNormal(r, n, 1))
					got, want := dot(n, w, x), ref(n, w, x)
					mag := float64(Generic.F[tensor.F32](f32bytes(absAll(dequantized(t, dt, w, n))), absAll(dequantized(t, vt, x, n))))
					if math.Abs(float64(got-want)) > 1e-5*mag+1e-6 {
						t.Errorf("n=%d: %s %g, generic %g", n, impl.Name, got, want)
					}
				}
			})
		}
		for dt, dot := range impl.F {
			ref := Generic.F[dt]
			t.Run(fmt.Sprintf("%s/%s", impl.Name, dt), func(t *testing.T) {
				for _, n := range []int{1, 3, 7, 8, 15, 16, 17, 31, 64, 100, 257, 1000} {
					w := quantized(t, dt, randNormal(r, n, 1))
					x := randNormal(r, n, 1)
					got, want := dot(w, x), ref(w, x)
					mag := float64(Generic.F[tensor.F32](f32bytes(absAll(dequantized(t, dt, w, n))), absAll(x)))
					if math.Abs(float64(got-want)) > 1e-5*mag+1e-6 {
						t.Errorf("n=%d: %s %g, generic %g", n, impl.Name, got, want)
					}
				}
			})
		}
	}
}

func absAll(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(math.Abs(float64(v)))
	}
	return y
}

func f32bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	if err := Quantize(tensor.F32, x, b); err != nil {
		panic(err)
	}
	return b
}

func TestVecDotTypes(t *testing.T) {
	for dt := range Generic.Q {
		vt, err := VecDotType(dt)
		if err != nil || vt.BlockSize() != dt.BlockSize() {
			t.Errorf("%s: vec-dot type %s, %v", dt, vt, err)
		}
	}
	if _, err := VecDotType(tensor.IQ2_XXS); err == nil {
		t.Error("IQ2_XXS: no error")
	}
	if _, err := QDotFor(tensor.F16); err == nil {
		t.Error("QDotFor(F16): no error")
	}
}

func TestAxpyF16(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	for _, n := range []int{0, 1, 15, 16, 17, 64, 100} {
		v := quantized(t, tensor.F16, randNormal(r, n, 1))
		o := randNormal(r, n+1, 1)
		want := append([]float32(nil), o...)
		axpyF16Generic(want[:n], v, 0.37)
		AxpyF16(o[:n], v, 0.37)
		for i := range o {
			if math.Abs(float64(o[i]-want[i])) > 1e-6*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("n=%d: o[%d] = %g, want %g", n, i, o[i], want[i])
			}
		}
	}
}

// TestRowsDot: every implementation's RowsDot equals its single-row dot.
func TestRowsDot(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, impl := range Impls() {
		for dt, q := range impl.Q {
			rows := impl.RowsFor(dt)
			vt, _ := VecDotType(dt)
			for _, blocks := range []int{1, 3, 5, 8, 13, 128} {
				n := blocks * dt.BlockSize()
				w := quantized(t, dt, randNormal(r, 7*n, 1))
				rb := len(w) / 7
				x := quantized(t, vt, randNormal(r, n, 1))
				out := make([]float32, 8)
				out[7] = 42
				rows(n, w, rb, x, out[:7])
				for k := range 7 {
					want := q(n, w[k*rb:], x)
					mag := float64(Generic.F[tensor.F32](f32bytes(absAll(dequantized(t, dt, w[k*rb:k*rb+rb], n))), absAll(dequantized(t, vt, x, n))))
					if math.Abs(float64(out[k]-want)) > 1e-5*mag+1e-6 {
						t.Fatalf("%s/%s n=%d row %d: %g, want %g", impl.Name, dt, n, k, out[k], want)
					}
				}
				if out[7] != 42 {
					t.Fatal("wrote past out")
				}
			}
		}
	}
}

// TestFRows: a run of rows gives each row the bits of the same
// implementation's FDot (added to out's value with add), with rows wider than the row (padding), lengths
// that are not a multiple of the vector width, and nothing written past
// out.
func TestFRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, impl := range Impls() {
		for dt, dot := range impl.F {
			frows := impl.FRowsFor(dt)
			ts := dt.TypeSize()
			for _, n := range []int{1, 64, 100, 256, 320, 2048, 2240} {
				for _, pad := range []int{0, 64} {
					const rows = 7
					rb := (n + pad) * ts
					w := make([]byte, rows*rb)
					for i := range w {
						w[i] = byte(r.Uint32())
					}
					if dt == tensor.F16 || dt == tensor.BF16 { // finite values only
						for i := 0; i < len(w); i += 2 {
							w[i+1] &= 0x3f
						}
					} else {
						copy(w, f32bytes(randNormal(r, len(w)/4, 1)))
					}
					x := randNormal(r, n, 1)
					for _, add := range []bool{false, true} {
						out := make([]float32, rows+1)
						base := randNormal(r, rows, 1)
						copy(out, base)
						out[rows] = 42
						frows(w, rb, x, out[:rows], add)
						for k := range rows {
							want := dot(w[k*rb:], x)
							if add {
								want = base[k] + want
							}
							if math.Float32bits(out[k]) != math.Float32bits(want) {
								t.Fatalf("%s/%s n=%d pad=%d add=%v row %d: %g, want %g", impl.Name, dt, n, pad, add, k, out[k], want)
							}
						}
						if out[rows] != 42 {
							t.Fatal("wrote past out")
						}
					}
				}
			}
		}
	}
}
