package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

func TestFTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, impl := range Impls() {
		for wt, tile := range impl.FTile {
			t.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(t *testing.T) {
				for _, cols := range []int{16, 48, 40, 256} {
					const rows, n = 9, 7
					w := quantized(t, wt, randNormal(r, rows*cols, 1))
					rb := len(w) / rows
					stride := cols + 3
					x := randNormal(r, n*stride, 1)
					for _, pos := range [][2]int{{0, 0}, {5, 3}} {
						var got [16]float32
						tile(w, rb, pos[0], x, stride, pos[1], cols, &got)
						for i := range 4 {
							for k := range 4 {
								row := w[(pos[0]+k)*rb : (pos[0]+k+1)*rb]
								xi := x[(pos[1]+i)*stride : (pos[1]+i)*stride+cols]
								want := Generic.F[wt](row, xi)
								mag := Generic.F[tensor.F32](f32bytes(absAll(dequantized(t, wt, row, cols))), absAll(xi))
								if math.Abs(float64(got[i*4+k]-want)) > 1e-5*float64(mag)+1e-6 {
									t.Fatalf("cols %d at %v: [%d][%d] = %g, want %g", cols, pos, i, k, got[i*4+k], want)
								}
							}
						}
					}
				}
			})
		}
	}
}

// BenchmarkFTile: one thread, one 4×4 float tile over 4096 columns.
func BenchmarkFTile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const cols = 4096
	for _, impl := range Impls()[1:] { // the generic twins are far too slow to time here
		for wt, tile := range impl.FTile {
			b.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(b *testing.B) {
				w := quantized(b, wt, randNormal(r, 4*cols, 1))
				x := randNormal(r, 4*cols, 1)
				var t [16]float32
				for b.Loop() {
					tile(w, len(w)/4, 0, x, cols, 0, cols, &t)
				}
				ops := 2 * 16 * cols
				b.ReportMetric(float64(ops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
				b.ReportMetric(float64(ops)*cpuRate(repsFor(b, 0.2), func() { tile(w, len(w)/4, 0, x, cols, 0, cols, &t) })/1e9, "cpuGFLOPS")
			})
		}
	}
}
