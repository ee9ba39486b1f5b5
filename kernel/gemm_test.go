package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestTiles checks the generic tile against the dot products it must
// equal, and every tile implementation against the generic tile, over
// groups with padding rows and odd pair counts.
func TestTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, impl := range Impls() {
		for wt, tile := range impl.Tile {
			t.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(t *testing.T) {
				for _, shape := range [][3]int{{4, 64, 4}, {8, 192, 6}, {12, 320, 9}} {
					rows, cols, n := shape[0], shape[1], shape[2]
					w := quantized(t, wt, randNormal(r, rows*cols, 1))
					rowBytes := len(w) / rows
					x := randNormal(r, n*cols, 1)
					var a Q8Pack
					if err := a.Reset(wt, n, cols); err != nil {
						t.Fatal(err)
					}
					for i := range a.Data {
						a.Data[i] = 0xee // PackRows and Reset must overwrite all
					}
					if err := a.Reset(wt, n, cols); err != nil {
						t.Fatal(err)
					}
					a.PackRows(x, 0, n/2)
					a.PackRows(x, n/2, n)
					xq := quantized(t, tensor.Q8_0, x)
					xrb := len(xq) / n
					for g := range a.Groups() {
						for r0 := 0; r0 < rows; r0 += 4 {
							var got, want [16]float32
							tile(w, rowBytes, r0, &a, g, &got)
							tileGeneric(wt)(w, rowBytes, r0, &a, g, &want)
							for i := range 4 {
								if 4*g+i >= n {
									continue
								}
								for k := range 4 {
									ref := Generic.Q[wt](cols, w[(r0+k)*rowBytes:], xq[(4*g+i)*xrb:])
									tol := 1e-5 * (1 + math.Abs(float64(ref))) * math.Sqrt(float64(cols))
									if d := math.Abs(float64(want[i*4+k] - ref)); d > tol {
										t.Fatalf("%dx%d: generic tile [%d][%d] = %g, dot = %g", rows, cols, i, k, want[i*4+k], ref)
									}
									if d := math.Abs(float64(got[i*4+k] - want[i*4+k])); d > tol {
										t.Fatalf("%dx%d group %d rows %d: tile [%d][%d] = %g, generic %g", rows, cols, g, r0, i, k, got[i*4+k], want[i*4+k])
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

func TestPackErrors(t *testing.T) {
	var a Q8Pack
	if err := a.Reset(tensor.Q4_K, 4, 256); err == nil {
		t.Error("Q4_K: no error")
	}
	if err := a.Reset(tensor.Q8_0, 4, 96); err == nil {
		t.Error("96 columns: no error")
	}
}

// BenchmarkTile: one thread, one 4×4 tile over 4096 columns (weights and
// packed activations in L1/L2); reports GOPS and the single-thread int8
// peak measured alongside.
func BenchmarkTile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const cols = 4096
	for _, impl := range Impls() {
		for wt, tile := range impl.Tile {
			b.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(b *testing.B) {
				w := quantized(b, wt, randNormal(r, 4*cols, 1))
				var a Q8Pack
				if err := a.Reset(wt, 4, cols); err != nil {
					b.Fatal(err)
				}
				a.PackRows(randNormal(r, 4*cols, 1), 0, 4)
				var t [16]float32
				for b.Loop() {
					tile(w, len(w)/4, 0, &a, 0, &t)
				}
				b.ReportMetric(2*16*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOPS")
				// Per CPU-second, immune to other processes on the machine.
				tps := cpuRate(20000, func() { tile(w, len(w)/4, 0, &a, 0, &t) })
				b.ReportMetric(2*16*cols*tps/1e9, "cpuGOPS")
				run, ops, _ := PeakInt8()
				b.ReportMetric(float64(ops)*(1<<16)*cpuRate(50, func() { run(1 << 16) })/1e9, "cpuPeakGOPS")
			})
		}
	}
}
