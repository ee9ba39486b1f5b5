package wan

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Tolerances of ../shared/golden/wan/README.md §4.
const (
	tinyMaxAbs, tinyRelL2 = 2e-4, 5e-5 // dit_tiny.*
	bigMaxAbs, bigRelL2   = 3e-4, 7e-5 // dit_1.3b.*
)

func readF32(t testing.TB, name string) []float32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/wan/"+name))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// compare returns max |Δ| and ‖Δ‖/‖ref‖.
func compare(got, want []float32) (maxAbs, rel float64) {
	var d2, r2 float64
	for i, w := range want {
		d := float64(got[i]) - float64(w)
		maxAbs = max(maxAbs, math.Abs(d))
		d2 += d * d
		r2 += float64(w) * float64(w)
	}
	return maxAbs, math.Sqrt(d2 / r2)
}

// check compares got with a golden file within tolerances.
func check(t *testing.T, name string, got, want []float32, maxTol, relTol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, golden has %d", name, len(got), len(want))
		return
	}
	m, r := compare(got, want)
	t.Logf("%-36s max |Δ| %.2e  rel L2 %.2e", name, m, r)
	if m > maxTol || r > relTol || math.IsNaN(m) {
		t.Errorf("%s: max |Δ| %.3g (tolerance %g), rel L2 %.3g (tolerance %g)", name, m, maxTol, r, relTol)
	}
}

var (
	tinyOnce sync.Once
	tinyPath string
	tinyErr  error
)

// tinyFile writes wan-dit-tiny-s1001-F32 (synth, byte for byte the spec's
// file) once per test binary.
func tinyFile(t testing.TB) string {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wan-dit-tiny")
		if err != nil {
			tinyErr = err
			return
		}
		tinyPath = filepath.Join(dir, "wan-dit-tiny-s1001-F32.safetensors")
		tinyErr = synth.WriteWanFile(context.Background(), tinyPath, "dit-tiny", 1001, tensor.F32)
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyPath
}

func openDiT(t testing.TB, path string, numHeads int) *DiT {
	t.Helper()
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := New(f, numHeads)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tinyPath != "" {
		os.RemoveAll(filepath.Dir(tinyPath))
	}
	os.Exit(code)
}

// goldenCase is one dit_* forward of README §3a.
type goldenCase struct {
	prefix                string // file name prefix: "dit_tiny", "dit_1.3b"
	frames, height, width int
	ctxRows               int
	blocks                []int // the blocks whose outputs are stored
	textRows              int   // rows of text_embedding stored
	maxAbs, relL2         float64
}

// runGolden runs one golden forward and checks every intermediate.
func runGolden(t *testing.T, m *DiT, gc goldenCase) {
	c := m.Config()
	p := compute.NewPool(compute.PhysicalCores())
	defer p.Close()
	x := readF32(t, gc.prefix+".x.f32")
	ctxv := readF32(t, gc.prefix+".context.f32")
	text, err := m.PrepareText(context.Background(), p, ctxv, gc.ctxRows)
	if err != nil {
		t.Fatal(err)
	}
	// text_embedding: the prompt's rows, then the padding row repeated.
	want := readF32(t, gc.prefix+".inter.text_embedding.f32")
	got := make([]float32, 0, gc.textRows*c.Dim)
	for r := range gc.textRows {
		got = append(got, text.emb[min(r, text.n)*c.Dim:][:c.Dim]...)
	}
	check(t, "text_embedding", got, want, gc.maxAbs, gc.relL2)

	inter := map[string][]float32{}
	tap := func(name string, v []float32) { inter[name] = append([]float32(nil), v...) }
	out := make([]float32, c.OutDim*gc.frames*gc.height*gc.width)
	if err := m.forward(context.Background(), p, out, x, gc.frames, gc.height, gc.width, 937, text, tap); err != nil {
		t.Fatal(err)
	}
	// patch_embedding is stored channel first, [dim][tokens].
	pe, n := inter["patch_embedding"], len(inter["patch_embedding"])/c.Dim
	peT := make([]float32, len(pe))
	for tok := range n {
		for ch := range c.Dim {
			peT[ch*n+tok] = pe[tok*c.Dim+ch]
		}
	}
	inter["patch_embedding"] = peT
	names := []string{"time_embedding.in", "time_embedding", "time_projection", "patch_embedding"}
	for _, b := range gc.blocks {
		names = append(names, "block"+strconv.Itoa(b))
	}
	names = append(names, "head")
	for _, name := range names {
		check(t, name, inter[name], readF32(t, gc.prefix+".inter."+name+".f32"), gc.maxAbs, gc.relL2)
	}
	check(t, "out", out, readF32(t, gc.prefix+".out.f32"), gc.maxAbs, gc.relL2)
}

// TestGoldenTiny: every dit_tiny intermediate and the output against the
// official WanModel (README §3a) within §4's tolerances, from the F32 file
// (the other dtypes and ComfyUI's prefix: TestWeights).
func TestGoldenTiny(t *testing.T) {
	gc := goldenCase{prefix: "dit_tiny", frames: 5, height: 8, width: 8, ctxRows: 12, blocks: []int{0, 1}, textRows: TextLen,
		maxAbs: tinyMaxAbs, relL2: tinyRelL2}
	m := openDiT(t, tinyFile(t), 4)
	if c := m.Config(); c != (Config{InDim: 16, OutDim: 16, Dim: 128, FFNDim: 256, FreqDim: 256, TextDim: 64, NumHeads: 4, NumLayers: 2}) {
		t.Fatalf("config %+v", c)
	}
	runGolden(t, m, gc)
}

// TestGolden1_3B: the dit_1.3b goldens (README §3a) from the F16 1.3B
// file (Wan 2.1 T2V-1.3B's shapes; generated once into the test cache,
// about 20 s; the forward over 32 tokens takes 10–20 s here). Skipped with
// -short.
func TestGolden1_3B(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the 1.3B forward needs its 2.8 GB file and 10-20 s")
	}
	sdtest.NeedMemory(t, 4<<30)
	m := openDiT(t, sdtest.Wan(t, "dit-1.3b", 3001, tensor.F16), 0)
	if c := m.Config(); c != (Config{InDim: 16, OutDim: 16, Dim: 1536, FFNDim: 8960, FreqDim: 256, TextDim: 4096, NumHeads: 12, NumLayers: 30}) {
		t.Fatalf("config %+v", c)
	}
	runGolden(t, m, goldenCase{prefix: "dit_1.3b", frames: 2, height: 8, width: 8, ctxRows: 16, blocks: []int{0, 1, 14, 29}, textRows: 32,
		maxAbs: bigMaxAbs, relL2: bigRelL2})
}
