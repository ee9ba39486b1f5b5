package t5

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Tolerances of ../shared/golden/wan/README.md §4 for umt5_tiny.out and
// t2v_tiny.context_*.
const maxAbsTol, relL2Tol = 3e-5, 6e-6

func readRaw(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readF32(t *testing.T, rel string) []float32 {
	b := readRaw(t, rel)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func readI32(t *testing.T, rel string) []int32 {
	b := readRaw(t, rel)
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// tinyFile writes umt5-tiny-s4001-F32 (synth, byte for byte the spec's
// file) into a temporary folder and opens it.
func tinyFile(t testing.TB, dt tensor.DType) *checkpoint.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "umt5-tiny.safetensors")
	if err := synth.WriteWanFile(context.Background(), path, "umt5-tiny", 4001, dt); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func tinyEncoder(t testing.TB) *Encoder {
	t.Helper()
	e, err := New(tinyFile(t, tensor.F32))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// compare returns max |Δ|, ‖Δ‖/‖ref‖ and the NMSE ‖Δ‖²/‖ref‖².
func compare(got, want []float32) (maxAbs, rel, nmse float64) {
	var d2, r2 float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		maxAbs = max(maxAbs, math.Abs(d))
		d2 += d * d
		r2 += float64(w) * float64(w)
	}
	return maxAbs, math.Sqrt(d2 / r2), d2 / r2
}

// TestGolden: the tiny umT5 against the official code's outputs for the
// umT5 golden and both contexts of the tiny text-to-video run.
func TestGolden(t *testing.T) {
	e := tinyEncoder(t)
	if c := e.Config(); c != (Config{VocabSize: 256, Dim: 64, DimAttn: 64, DimFFN: 128, NumHeads: 4, NumLayers: 2, NumBuckets: 32, MaxDist: 128}) {
		t.Fatalf("config %+v", c)
	}
	p := compute.NewPool(2)
	defer p.Close()
	for _, c := range []struct{ ids, out string }{
		{"umt5_tiny.ids.i32", "umt5_tiny.out.f32"},
		{"t2v_tiny.cond_ids.i32", "t2v_tiny.context_cond.f32"},
		{"t2v_tiny.uncond_ids.i32", "t2v_tiny.context_uncond.f32"},
	} {
		t.Run(c.out, func(t *testing.T) {
			ids := readI32(t, "golden/wan/"+c.ids)
			want := readF32(t, "golden/wan/"+c.out)
			got, err := e.Encode(context.Background(), p, ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d values, want %d", len(got), len(want))
			}
			maxAbs, rel, nmse := compare(got, want)
			t.Logf("%d tokens: max |Δ| %.3g, rel L2 %.3g, NMSE %.3g", len(ids), maxAbs, rel, nmse)
			if maxAbs > maxAbsTol || rel > relL2Tol {
				t.Errorf("max |Δ| %.3g (tolerance %g), rel L2 %.3g (tolerance %g)", maxAbs, maxAbsTol, rel, relL2Tol)
			}
		})
	}
}

// TestPadded: Wan's run — ids padded with 0 to 512, the padded keys
// masked — gives the real rows the unpadded run gives.
func TestPadded(t *testing.T) {
	e := tinyEncoder(t)
	p := compute.NewPool(2)
	defer p.Close()
	ids := readI32(t, "golden/wan/umt5_tiny.ids.i32")
	padded := make([]int32, MaxTokens)
	copy(padded, ids)
	all, err := e.forward(context.Background(), p, padded, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := e.Encode(context.Background(), p, ids)
	if err != nil {
		t.Fatal(err)
	}
	maxAbs, rel, _ := compare(all[:len(alone)], alone)
	t.Logf("padded vs alone: max |Δ| %.3g, rel L2 %.3g", maxAbs, rel)
	if maxAbs > 1e-6 {
		t.Errorf("padded rows differ by %.3g", maxAbs)
	}
	want := readF32(t, "golden/wan/umt5_tiny.out.f32")
	if maxAbs, rel, _ := compare(all[:len(want)], want); maxAbs > maxAbsTol || rel > relL2Tol {
		t.Errorf("padded run vs golden: max |Δ| %.3g, rel L2 %.3g", maxAbs, rel)
	}
}

// TestRelativeBucket: the buckets of k − q = −600..600, bit-exact.
func TestRelativeBucket(t *testing.T) {
	want := readI32(t, "golden/wan/umt5.rel_bucket.i32")
	if len(want) != 1201 {
		t.Fatalf("%d buckets", len(want))
	}
	for i, w := range want {
		if got := relativeBucket(i-600, 32, 128); got != int(w) {
			t.Errorf("bucket(%d) = %d, want %d", i-600, got, w)
		}
	}
}
