//go:build amd64 && !purego

package kernel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestScoresQ8TiersAgree checks that the AVX2 and AVX-512 Q8_0 score loops
// give the same bits (the same sums in the same order), so a cache scores
// alike on either tier. It needs a CPU with both.
func TestScoresQ8TiersAgree(t *testing.T) {
	if avx512.Name == "" || noAsm() {
		t.Skip("needs the AVX-512 tier")
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, width := range []int{32, 64, 128} {
		const nb = 7
		bb, rb := KeyBlockQ8Bytes(width), width/32*34
		kb := make([]byte, nb*bb)
		for p := range nb * KeyBlock {
			PutKeyQ8(kb[p/KeyBlock*bb:], p%KeyBlock, quantized(t, tensor.Q8_0, randNormal(r, width, 1))[:rb])
		}
		q := randNormal(r, 4*width, 1)
		a, b := make([]float32, 4*nb*KeyBlock), make([]float32, 4*nb*KeyBlock)
		scoresQ8x4Fast512(a, nb, kb, q, 0.125)
		scoresQ8x4Fast(b, nb, kb, q, 0.125)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("width %d: score %d: AVX-512 %g, AVX2 %g", width, i, a[i], b[i])
			}
		}
	}
}
