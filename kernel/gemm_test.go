package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestGemm checks the generic GEMM kernel against the dot products it must
// equal, and every implementation against the generic kernel, over padded
// panels and odd block counts, with stale data in reused buffers.
func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, impl := range Impls() {
		for wt, gemm := range impl.Gemm {
			t.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(t *testing.T) {
				var wp WPack
				var ap APack
				shapes := [][3]int{{16, 32, 5}, {32, 96, 16}, {16, 256, 21}}
				if wt.BlockSize() == 256 {
					shapes = [][3]int{{16, 256, 5}, {32, 512, 16}, {16, 768, 21}}
				}
				for _, shape := range shapes {
					rows, cols, n := shape[0], shape[1], shape[2]
					w := quantized(t, wt, randNormal(r, rows*cols, 1))
					rowBytes := len(w) / rows
					x := randNormal(r, n*cols, 1)
					if err := ap.Reset(wt, n, cols); err != nil {
						t.Fatal(err)
					}
					for i := range ap.Data {
						ap.Data[i] = 0xee
					}
					if err := ap.Reset(wt, n, cols); err != nil {
						t.Fatal(err)
					}
					ap.PackRows(x, 0, n/2)
					ap.PackRows(x, n/2, n)
					vt, _ := VecDotType(wt)
					xq := quantized(t, vt, x)
					xrb := len(xq) / n
					for r0 := 0; r0 < rows; r0 += GemmRows {
						if err := wp.Pack(wt, w, rowBytes, r0, cols); err != nil {
							t.Fatal(err)
						}
						for pn := range ap.Panels() {
							var got, want [256]float32
							got[0] = 99
							gemm(&wp, &ap, pn, &got)
							gemmGeneric(&wp, &ap, pn, &want)
							for i := range 16 {
								if 16*pn+i >= n {
									continue
								}
								for k := range 16 {
									ref := Generic.Q[wt](cols, w[(r0+k)*rowBytes:], xq[(16*pn+i)*xrb:])
									tol := 1e-5 * (1 + math.Abs(float64(ref))) * math.Sqrt(float64(cols))
									if d := math.Abs(float64(want[i*16+k] - ref)); d > tol {
										t.Fatalf("%dx%d: generic [%d][%d] = %g, dot = %g", rows, cols, i, k, want[i*16+k], ref)
									}
									if d := math.Abs(float64(got[i*16+k] - want[i*16+k])); d > tol {
										t.Fatalf("%dx%d panel %d rows %d: [%d][%d] = %g, generic %g", rows, cols, pn, r0, i, k, got[i*16+k], want[i*16+k])
									}
								}
							}
						}
					}
				}
			})
		}
	}
}

func TestGemmPackErrors(t *testing.T) {
	var a APack
	var w WPack
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Q2_K activations", a.Reset(tensor.Q2_K, 4, 256)},
		{"40 columns", a.Reset(tensor.Q8_0, 4, 40)},
		{"K-quant 128 columns", a.Reset(tensor.Q4_K, 4, 128)},
		{"Q2_K weights", w.Pack(tensor.Q2_K, make([]byte, 16*84), 84, 0, 256)},
		{"too few rows", w.Pack(tensor.Q8_0, make([]byte, 15*34), 34, 0, 32)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// BenchmarkGemm: one thread, one 16×16 tile over 4096 columns (repacked
// weights and activations in L2); GOPS per wall-second and per
// CPU-second, with the single-thread int8 peak measured alongside.
func BenchmarkGemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const cols = 4096
	for _, impl := range Impls()[1:] { // the generic twins are far too slow to time here
		for wt, gemm := range impl.Gemm {
			b.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(b *testing.B) {
				w := quantized(b, wt, randNormal(r, 16*cols, 1))
				var wp WPack
				var ap APack
				if err := wp.Pack(wt, w, len(w)/16, 0, cols); err != nil {
					b.Fatal(err)
				}
				if err := ap.Reset(wt, 16, cols); err != nil {
					b.Fatal(err)
				}
				ap.PackRows(randNormal(r, 16*cols, 1), 0, 16)
				var t [256]float32
				for b.Loop() {
					gemm(&wp, &ap, 0, &t)
				}
				ops := 2 * 256 * cols
				b.ReportMetric(float64(ops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOPS")
				b.ReportMetric(float64(ops)*cpuRate(repsFor(b, 0.2), func() { gemm(&wp, &ap, 0, &t) })/1e9, "cpuGOPS")
				run, pops, _ := PeakInt8()
				b.ReportMetric(float64(pops)*(1<<16)*cpuRate(200, func() { run(1 << 16) })/1e9, "cpuPeakGOPS")
			})
		}
	}
}

// BenchmarkGemmPack: repacking 16 weight rows of 4096 columns (done once
// per tile per matrix multiplication).
func BenchmarkGemmPack(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, wt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		w := quantized(b, wt, randNormal(r, 16*4096, 1))
		var wp WPack
		b.Run(wt.String(), func(b *testing.B) {
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				if err := wp.Pack(wt, w, len(w)/16, 0, 4096); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestWPackMatchesGeneric: the fast repacking writes exactly the generic
// layout.
func TestWPackMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, wt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K} {
		for _, cols := range []int{256, 768, 4096} {
			rows := 35
			w := quantized(t, wt, randNormal(r, rows*cols, 1))
			rb := len(w) / rows
			for _, r0 := range []int{0, 19} {
				var fast, slow WPack
				if err := fast.Pack(wt, w, rb, r0, cols); err != nil {
					t.Fatal(err)
				}
				l := gemmLayouts[wt]
				slow.Type, slow.Units, slow.Data = wt, cols/l.unit, make([]byte, cols/l.unit*l.wRec)
				slow.packGeneric(w, rb, r0)
				for i := range slow.Data {
					if fast.Data[i] != slow.Data[i] {
						t.Fatalf("%s cols %d rows %d: byte %d differs", wt, cols, r0, i)
					}
				}
			}
		}
	}
}
