package clip

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/internal/shared"
	tokclip "github.com/glassbox-ai/glassbox/tokenizer/clip"
)

// The golden checkpoints (../shared/golden/sd15/README.md, section 2): the
// F16 file and its F32 widening, named by environment variables.
const (
	envF16 = "GLASSBOX_SD15"
	envF32 = "GLASSBOX_SD15_F32"
)

// openGolden opens the checkpoint the environment variable names and
// binds its text encoder, or skips the test.
func openGolden(t testing.TB, env string) *Encoder {
	path := os.Getenv(env)
	if path == "" {
		t.Skipf("%s is not set: it names the sd15-rand checkpoint of ../shared/golden/sd15/README.md (section 2 there says how to make it)", env)
	}
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e, err := New(checkpoint.Sub(f, Prefix))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// readF32 reads a raw little-endian float32 golden.
func readF32(t *testing.T, rel string) []float32 {
	b, err := os.ReadFile(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestGoldenConditioning encodes the prompts of the golden cases that
// store sd.cpp's CLIP output (cond_crossattn: the prompt, uncond_crossattn:
// the negative prompt) and compares with README section 7's tolerances:
// NMSE ≤ 2e-5, max abs ≤ 0.05, for the F16 file and the F32 file.
func TestGoldenConditioning(t *testing.T) {
	const maxNMSE, maxAbs = 2e-5, 0.05
	cases := []struct{ name, prompt, negative string }{
		{"t2i_euler", "a lovely cat", ""},
		{"t2i_negative", "a lovely cat", "blurry, low quality, watermark"},
		{"t2i_emphasis", "a (lovely:1.3) cat, [blurry] ((masterpiece))", ""},
	}
	for _, file := range []struct{ env, suffix string }{{envF16, ""}, {envF32, ".f32"}} {
		t.Run(file.env, func(t *testing.T) {
			e := openGolden(t, file.env)
			t.Logf("weights %d bytes, working memory %d bytes for one window", e.WeightBytes(), e.Config().ActivationBytes(1))
			p := compute.NewPool(2)
			defer p.Close()
			for _, c := range cases {
				for _, part := range []struct{ kind, prompt string }{{"cond", c.prompt}, {"uncond", c.negative}} {
					golden := c.name + file.suffix + "." + part.kind + "_crossattn.f32"
					t.Run(golden, func(t *testing.T) {
						tok, err := tokclip.Tokenize(part.prompt)
						if err != nil {
							t.Fatal(err)
						}
						got, err := e.Encode(context.Background(), p, tok.IDs, tok.Weights, Options{})
						if err != nil {
							t.Fatal(err)
						}
						want := readF32(t, "golden/sd15/"+golden)
						if len(got) != len(want) {
							t.Fatalf("%d values, golden has %d", len(got), len(want))
						}
						nmse, abs := compareF32(got, want)
						t.Logf("%s: NMSE %.3g, max abs %.3g", golden, nmse, abs)
						if nmse > maxNMSE || abs > maxAbs {
							t.Errorf("%s: NMSE %.3g (≤ %g), max abs %.3g (≤ %g)", golden, nmse, maxNMSE, abs, maxAbs)
						}
					})
				}
			}
		})
	}
}

func compareF32(got, want []float32) (nmse, maxAbs float64) {
	w := make([]float64, len(want))
	for i, v := range want {
		w[i] = float64(v)
	}
	return compare(got, w)
}

// BenchmarkEncodeWindow measures one window of the golden checkpoint's
// text encoder at 2 threads.
func BenchmarkEncodeWindow(b *testing.B) {
	e := openGolden(b, envF16)
	p := compute.NewPool(2)
	defer p.Close()
	tok, err := tokclip.Tokenize("a lovely cat")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Encode(context.Background(), p, tok.IDs, tok.Weights, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
