package kernel

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// x16Types are the weight types with an x16 layout.
var x16Types = []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q3_K, tensor.Q2_K, tensor.Q5_0, tensor.Q4_1, tensor.Q5_1, tensor.IQ4_NL, tensor.IQ4_XS, tensor.MXFP4}

// TestX16 checks the x16 layout and kernels: the generic kernel against
// the dot products over the GGUF blocks (the specification of the sums),
// every implementation against the generic kernel, and that an activation
// row gives the same bits at every panel width.
func TestX16(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, impl := range Impls() {
		for _, wt := range x16Types {
			kern := impl.X16[wt]
			if kern == nil {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(t *testing.T) {
				shapes := [][2]int{{16, 32}, {16, 64}, {32, 96}, {16, 160}, {48, 2048}}
				if wt.BlockSize() == 256 {
					shapes = [][2]int{{16, 256}, {32, 768}, {48, 2048}}
				}
				for _, shape := range shapes {
					rows, cols := shape[0], shape[1]
					w := quantized(t, wt, randNormal(r, rows*cols, 1))
					rowBytes := len(w) / rows
					tb := X16TileBytes(wt, cols)
					l, pad := x16Layouts[wt], 0 // an odd tile of paired records ends on a cache line (tileBytes)
					if (l.pair || l.spair) && cols/l.cols%2 == 1 {
						pad = 32
					}
					if rest := cols / l.cols % 4; l.quad && rest != 0 {
						pad = 64 - 16*rest // a last one to three of four: their line of scales
					}
					if extra := tb - pad - X16Rows*rowBytes; extra < 0 || extra > X16Rows*rowBytes*4/100 || tb%64 != 0 && (l.pair || l.spair || l.quad) {
						t.Fatalf("tile of %d bytes for %d GGUF bytes: the copy must not cost more than 4 %% (Q3_K: 3.6) and %d bytes of padding, and paired tiles must be whole cache lines", tb, X16Rows*rowBytes, pad)
					}
					nt := rows / X16Rows
					all := make([]byte, nt*tb) // exactly sized: the kernel must not read past it
					for rt := range nt {
						if err := PackX16(wt, w, rowBytes, rt*X16Rows, cols, all[rt*tb:(rt+1)*tb]); err != nil {
							t.Fatal(err)
						}
					}
					widthRef := map[string]float32{} // cols/act/row → result at the first width seen
					for _, n := range []int{1, 2, 3, 4, 5, 17, 33} {
						x := randNormal(rand.New(rand.NewPCG(5, 6)), n*cols, 1) // same leading rows for every n
						var a XPack
						if err := a.Reset(wt, n, cols); err != nil {
							t.Fatal(err)
						}
						a.PackRows(x, 0, n/2)
						a.PackRows(x, n/2, n)
						vt, _ := VecDotType(wt)
						xq := quantized(t, vt, x)
						xrb := len(xq) / n
						// Tiles [t0, nt) in one call, into rows of stride rows+3
						// (3 guard floats between activation rows).
						for _, t0 := range []int{0, nt - 1} {
							stride := rows + 3
							for pn := range a.Panels() {
								real := min(a.Width, n-pn*a.Width)
								got := make([]float32, (real-1)*stride+16*(nt-t0)+4) // 4 guard floats at the end
								want := make([]float32, len(got))
								for i := range got {
									got[i], want[i] = 99, 99
								}
								kern(wt, all[t0*tb:], nt-t0, &a, pn, got, stride, X16Cols{})
								x16Generic(wt, all[t0*tb:], nt-t0, &a, pn, want, stride, X16Cols{})
								for i := range got {
									if k, c := i/stride, i%stride; k >= real || c >= 16*(nt-t0) {
										if got[i] != 99 {
											t.Fatalf("n=%d panel %d: float %d (row %d, column %d) outside the output was written", n, pn, i, k, c)
										}
									}
								}
								for k := range real {
									i := a.Width*pn + k
									for row := range 16 * (nt - t0) {
										g, wv := got[k*stride+row], want[k*stride+row]
										wr := t0*16 + row
										ref := Generic.Q[wt](cols, w[wr*rowBytes:], xq[i*xrb:])
										tol := 1e-5 * (1 + math.Abs(float64(ref))) * math.Sqrt(float64(cols))
										if math.Abs(float64(wv-ref)) > tol {
											t.Fatalf("n=%d row %d act %d: generic x16 %g, dot %g", n, wr, i, wv, ref)
										}
										if math.Abs(float64(g-wv)) > 1e-6*(1+math.Abs(float64(wv))) {
											t.Fatalf("n=%d row %d act %d: %s %g, generic %g", n, wr, i, impl.Name, g, wv)
										}
										key := fmt.Sprintf("%d/%d/%d", cols, i, wr)
										if prev, ok := widthRef[key]; ok && prev != g {
											t.Fatalf("act %d row %d: %g at width %d, %g before", i, wr, g, a.Width, prev)
										}
										widthRef[key] = g
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

// TestX16Cols checks column panels: tiles packed per panel of columns and
// summed panel after panel (Add after the first) give every row the same
// bits as whole tiles in one call, in every implementation and width, and
// write nothing outside the output.
func TestX16Cols(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, impl := range Impls() {
		for _, wt := range x16Types {
			kern := impl.X16[wt]
			if kern == nil {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(t *testing.T) {
				lc := x16Layouts[wt].cols
				const rows = 48
				cols := 7 * lc
				// Panels of 2, 1 and 4 records: a narrow one in the middle.
				cuts := []int{0, 2 * lc, 3 * lc, cols}
				w := quantized(t, wt, randNormal(r, rows*cols, 1))
				rowBytes := len(w) / rows
				colBytes := func(c int) int { return c / wt.BlockSize() * wt.TypeSize() }
				nt := rows / X16Rows
				whole := make([]byte, nt*X16TileBytes(wt, cols))
				panels := make([][]byte, len(cuts)-1)
				for rt := range nt {
					if err := PackX16(wt, w, rowBytes, rt*X16Rows, cols, whole[rt*X16TileBytes(wt, cols):]); err != nil {
						t.Fatal(err)
					}
				}
				for p := range panels {
					pc := cuts[p+1] - cuts[p]
					panels[p] = make([]byte, nt*X16TileBytes(wt, pc)) // exactly sized
					for rt := range nt {
						if err := PackX16(wt, w[colBytes(cuts[p]):], rowBytes, rt*X16Rows, pc, panels[p][rt*X16TileBytes(wt, pc):]); err != nil {
							t.Fatal(err)
						}
					}
				}
				for _, n := range []int{1, 2, 3, 17, 33} {
					x := randNormal(r, n*cols, 1)
					var a XPack
					if err := a.Reset(wt, n, cols); err != nil {
						t.Fatal(err)
					}
					a.PackRows(x, 0, n)
					stride := rows + 3
					for pn := range a.Panels() {
						real := min(a.Width, n-pn*a.Width)
						want := make([]float32, (real-1)*stride+rows+4)
						got := make([]float32, len(want))
						for i := range got {
							got[i], want[i] = 99, 99
						}
						kern(wt, whole, nt, &a, pn, want, stride, X16Cols{})
						for p := range panels {
							kern(wt, panels[p], nt, &a, pn, got, stride, X16Cols{Lo: cuts[p], Hi: cuts[p+1], Add: p > 0})
						}
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("n=%d panel %d: output %d (row %d, column %d) is %g in column panels, %g whole", n, pn, i, i/stride, i%stride, got[i], want[i])
							}
						}
					}
				}
			})
		}
	}
}

// TestX16Errors checks that bad shapes are errors, not panics.
func TestX16Errors(t *testing.T) {
	var a XPack
	if err := a.Reset(tensor.Q8_1, 1, 256); err == nil {
		t.Error("XPack.Reset accepted Q8_1")
	}
	if err := a.Reset(tensor.Q4_0, 1, 48); err == nil {
		t.Error("XPack.Reset accepted 48 columns")
	}
	w := make([]byte, 16*18)
	if err := PackX16(tensor.Q4_0, w, 18, 0, 32, make([]byte, 10)); err == nil {
		t.Error("PackX16 accepted a short destination")
	}
	if err := PackX16(tensor.Q4_0, w, 18, 1, 32, make([]byte, 288)); err == nil {
		t.Error("PackX16 accepted rows past the end")
	}
	if err := PackX16(tensor.F16, w, 18, 0, 32, make([]byte, 288)); err == nil {
		t.Error("PackX16 accepted F16")
	}
}

// BenchmarkPackX16: rearranging 16-row tiles of 4096 columns (MB/s of
// GGUF bytes), what loading a model costs per byte of its weights.
func BenchmarkPackX16(b *testing.B) {
	for _, wt := range x16Types {
		b.Run(wt.String(), func(b *testing.B) {
			const rows, cols = 256, 4096
			w := quantized(b, wt, randNormal(rand.New(rand.NewPCG(1, 2)), rows*cols, 1))
			rb := len(w) / rows
			dst := make([]byte, X16TileBytes(wt, cols))
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				for r0 := 0; r0 < rows; r0 += X16Rows {
					if err := PackX16(wt, w, rb, r0, cols, dst); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkX16VsRows: one activation row through 1024×4096 weights (in
// cache), each implementation's x16 kernel against its row dot products
// over the GGUF blocks (MB/s of weights).
func BenchmarkX16VsRows(b *testing.B) {
	const rows, cols = 1024, 4096
	for _, impl := range Impls() {
		for _, wt := range x16Types {
			kern := impl.X16[wt]
			if kern == nil || impl.Name == Generic.Name {
				continue
			}
			w := quantized(b, wt, randNormal(rand.New(rand.NewPCG(1, 2)), rows*cols, 1))
			rb := len(w) / rows
			x := randNormal(rand.New(rand.NewPCG(3, 4)), cols, 1)
			out := make([]float32, rows)
			b.Run(fmt.Sprintf("%s/%s/x16", impl.Name, wt), func(b *testing.B) {
				tiles := make([]byte, rows/X16Rows*X16TileBytes(wt, cols))
				for rt := range rows / X16Rows {
					if err := PackX16(wt, w, rb, rt*X16Rows, cols, tiles[rt*X16TileBytes(wt, cols):]); err != nil {
						b.Fatal(err)
					}
				}
				var a XPack
				if err := a.Reset(wt, 1, cols); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					a.PackRows(x, 0, 1)
					kern(wt, tiles, rows/X16Rows, &a, 0, out, rows, X16Cols{})
				}
			})
			b.Run(fmt.Sprintf("%s/%s/rows", impl.Name, wt), func(b *testing.B) {
				vt, _ := VecDotType(wt)
				xq := make([]byte, len(quantized(b, vt, x)))
				rd := impl.Rows[wt]
				if rd == nil {
					rd = rowsFromQ(impl.Q[wt])
				}
				b.SetBytes(int64(len(w)))
				for b.Loop() {
					if err := Quantize(vt, x, xq); err != nil {
						b.Fatal(err)
					}
					rd(cols, w, rb, xq, out)
				}
			})
		}
	}
}

// BenchmarkXPackRow: quantizing and packing one activation row (token
// generation does it once per matrix multiplication).
func BenchmarkXPackRow(b *testing.B) {
	for _, wt := range []tensor.DType{tensor.Q4_0, tensor.Q4_K} {
		for _, cols := range []int{2048, 8192} {
			b.Run(fmt.Sprintf("%s/%d", wt, cols), func(b *testing.B) {
				x := randNormal(rand.New(rand.NewPCG(3, 4)), cols, 1)
				var a XPack
				if err := a.Reset(wt, 1, cols); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(4 * cols))
				for b.Loop() {
					a.PackRows(x, 0, 1)
				}
			})
		}
	}
}

// TestXPackFast checks the fast one-row packing against the generic loop,
// with all-zero blocks and blocks of ties.
func TestXPackFast(t *testing.T) {
	if x16RecQ8_0 == nil || x16RecQ8K == nil {
		t.Skip("no fast packing on this CPU")
	}
	r := rand.New(rand.NewPCG(71, 72))
	for _, wt := range x16Types {
		for _, cols := range []int{256, 512, 2048, 2144} {
			if cols%x16Layouts[wt].cols != 0 {
				continue // 2144 = 67 blocks of 32: the AVX-512 loop's groups of eight and a tail
			}
			x := randNormal(r, cols, 3)
			clear(x[:256]) // a zero block (and super-block)
			if cols > 256 {
				for i := 256; i < 512; i++ {
					x[i] = float32(i%5) - 2 // equal magnitudes of both signs; rounding ties
				}
			}
			if cols > 1056 {
				clear(x[1024:1056]) // a zero block among non-zero ones
			}
			for _, n := range []int{1, 3, 17, 33} {
				xs := make([]float32, 0, n*cols)
				for range n {
					xs = append(xs, x...)
				}
				var fast, slow XPack
				if err := fast.Reset(wt, n, cols); err != nil {
					t.Fatal(err)
				}
				fast.PackRows(xs, 0, n)
				keep, keepK, keepQ := x16RecQ8_0, x16RecQ8K, quantRowQ8_0
				x16RecQ8_0, x16RecQ8K, quantRowQ8_0 = nil, nil, quantRowQ8_0Generic // the specification
				if err := slow.Reset(wt, n, cols); err != nil {
					t.Fatal(err)
				}
				slow.PackRows(xs, 0, n)
				x16RecQ8_0, x16RecQ8K, quantRowQ8_0 = keep, keepK, keepQ
				if !bytes.Equal(fast.Data, slow.Data) {
					for i := range fast.Data {
						if fast.Data[i] != slow.Data[i] {
							t.Fatalf("%s %d columns, %d rows: byte %d is %#x, generic %#x", wt, cols, n, i, fast.Data[i], slow.Data[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkX16Panel: 16 activation rows (a prefill panel) through 256×4096
// weights in cache, per implementation and type; GOPS counts 2·rows·cols·16.
func BenchmarkX16Panel(b *testing.B) {
	const rows, cols, n = 256, 4096, 16
	for _, impl := range Impls() {
		if impl.Name == Generic.Name {
			continue
		}
		for _, wt := range x16Types {
			kern := impl.X16[wt]
			if kern == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", impl.Name, wt), func(b *testing.B) {
				w := quantized(b, wt, randNormal(rand.New(rand.NewPCG(1, 2)), rows*cols, 1))
				rb := len(w) / rows
				tb := X16TileBytes(wt, cols)
				tiles := make([]byte, rows/X16Rows*tb)
				for rt := range rows / X16Rows {
					if err := PackX16(wt, w, rb, rt*X16Rows, cols, tiles[rt*tb:]); err != nil {
						b.Fatal(err)
					}
				}
				var a XPack
				if err := a.Reset(wt, n, cols); err != nil {
					b.Fatal(err)
				}
				a.PackRows(randNormal(rand.New(rand.NewPCG(3, 4)), n*cols, 1), 0, n)
				out := make([]float32, n*rows)
				for b.Loop() {
					kern(wt, tiles, rows/X16Rows, &a, 0, out, rows, X16Cols{})
				}
				b.ReportMetric(2*float64(rows*cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOPS")
			})
		}
	}
}
