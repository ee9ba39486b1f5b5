package vae

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// bigLatent repeats the astronaut's stored latent (32×32) to n×n.
func bigLatent(t testing.TB, n int) []float32 {
	src := readF32(t, filepath.Join(filepath.Dir(shared.Path(t, "golden/taef2/manifest.json")), "astronaut.latent.f32"))
	z := make([]float32, LatentChannels*n*n)
	for c := 0; c < LatentChannels; c++ {
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				z[(c*n+y)*n+x] = src[(c*32+y%32)*32+x%32]
			}
		}
	}
	return z
}

// seamDistance returns, for output coordinate p on an axis tiled by g's
// starts, the distance in pixels to the nearest overlap zone (0 inside one).
func seamDistance(p int, starts []int, t, overlap int) int {
	d := math.MaxInt
	for i := 1; i < len(starts); i++ {
		lo, hi := Scale*starts[i], Scale*(starts[i-1]+t) // the zone tiles i-1 and i share
		switch {
		case p >= lo && p < hi:
			return 0
		case p < lo:
			d = min(d, lo-p)
		default:
			d = min(d, p-hi+1)
		}
	}
	return d
}

// testTiled decodes an n×n latent untiled and tiled, checking each arena's
// high-water mark against its plan and the outputs against each other.
func testTiled(t *testing.T, n, tile int) {
	_, dec := models(t)
	z := bigLatent(t, n)
	ctx := context.Background()

	var whole, tiled conv.Arena
	want, err := dec.Decode(ctx, z, n, n, Options{Runner: testPool, Arena: &whole})
	if err != nil {
		t.Fatal(err)
	}
	got, err := dec.Decode(ctx, z, n, n, Options{Runner: testPool, Arena: &tiled, Tile: tile})
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := PlanDecode(n, n, 0, 0)
	pt, _ := PlanDecode(n, n, tile, 0)
	t.Logf("untiled: %v; measured %d MiB", pw, whole.Peak()>>20)
	t.Logf("tiled:   %v; measured %d MiB", pt, tiled.Peak()>>20)
	for _, c := range []struct {
		name     string
		measured int64
		plan     DecodePlan
	}{{"untiled", whole.Peak(), pw}, {"tiled", tiled.Peak(), pt}} {
		if c.measured > c.plan.Activations {
			t.Errorf("%s: arena held %d bytes, plan predicted %d", c.name, c.measured, c.plan.Activations)
		}
		if float64(c.measured) < 0.95*float64(c.plan.Activations) {
			t.Errorf("%s: plan %d bytes is loose against the measured %d", c.name, c.plan.Activations, c.measured)
		}
	}
	if float64(pt.Activations) > 0.7*float64(pw.Activations) {
		t.Errorf("tiling saves too little: %d vs %d bytes", pt.Activations, pw.Activations)
	}

	g, _ := tiling(n, n, tile, 0)
	px := Scale * n
	var maxSeam, maxAway float64
	for c := 0; c < 3; c++ {
		for y := 0; y < px; y++ {
			dy := seamDistance(y, g.ys, g.th, g.overlap)
			for x := 0; x < px; x++ {
				i := (c*px+y)*px + x
				d := math.Abs(float64(got[i] - want[i]))
				if min(dy, seamDistance(x, g.xs, g.tw, g.overlap)) == 0 {
					maxSeam = max(maxSeam, d)
				} else {
					maxAway = max(maxAway, d)
				}
			}
		}
	}
	t.Logf("tiled vs untiled: max abs diff %.3g in the overlap zones, %.3g elsewhere", maxSeam, maxAway)
	// Away from the overlaps each pixel comes from one tile that saw its
	// whole receptive field: identical arithmetic, identical result.
	if maxAway != 0 {
		t.Errorf("tiled decode differs from untiled by %g away from the seams, want 0", maxAway)
	}
	// In the overlaps, a normalised blend of tiles that are exact there
	// (DefaultOverlap leaves a Context margin): rounding only.
	if maxSeam > 1e-6 {
		t.Errorf("tiled decode differs from untiled by %g in the overlap zones, want ≤ 1e-6", maxSeam)
	}
}

// TestTiledDecode runs at 320×320 (4 tiles of 256 px) by default;
// GLASSBOX_LONG=1 adds the 1024×1024 case (4 tiles of 640 px).
func TestTiledDecode(t *testing.T) {
	if conv.Kernel() == "generic" {
		t.Skip("generic kernels: too slow for this size (run without -tags purego)")
	}
	t.Run("320", func(t *testing.T) { testTiled(t, 40, 32) })
	if os.Getenv("GLASSBOX_LONG") == "" {
		return
	}
	t.Run("1024", func(t *testing.T) { testTiled(t, 128, 80) })
}

// TestDecodeProgressCountsTiles: the decode stage's progress counts the
// tiles it makes, 0 of them after the shared head and then one per tile:
// 0/1, 1/1 untiled and 0/4 … 4/4 for four tiles.
func TestDecodeProgressCountsTiles(t *testing.T) {
	_, dec := models(t)
	for _, tc := range []struct {
		name    string
		n, tile int
		want    string
	}{
		{"untiled", 8, 0, "0/1 1/1"},
		{"4 tiles", 40, 32, "0/4 1/4 2/4 3/4 4/4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []string
			ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Progress: func(s pipeline.Stage, done, total int64) {
				if s == pipeline.StageDecode {
					seen = append(seen, fmt.Sprintf("%d/%d", done, total))
				}
			}})
			if _, err := dec.Decode(ctx, bigLatent(t, tc.n), tc.n, tc.n, Options{Runner: testPool, Tile: tc.tile}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(seen, " "); got != tc.want {
				t.Errorf("decode progress %s, want %s", got, tc.want)
			}
			if p, _ := PlanDecode(tc.n, tc.n, tc.tile, 0); fmt.Sprint(p.Tiles) != tc.want[len(tc.want)-1:] {
				t.Errorf("the plan counts %d tiles; progress ends at %s", p.Tiles, tc.want[len(tc.want)-3:])
			}
		})
	}
}

// TestPlanWithin: a budget that the decoder's weights fill (or pass) is
// refused with the whole need and the whole budget, all positive, never
// the negative remainder; a budget that holds weights and decode passes.
func TestPlanWithin(t *testing.T) {
	const weights = 5 << 20
	full, _ := PlanDecode(32, 32, 0, 0)
	for _, tc := range []struct {
		name   string
		n      int
		tile   int
		budget int64
		want   string
	}{
		{"weights over the budget", 32, 0, 1 << 20, "decoding 256x256 px needs %s (the decoder's 5.0 MiB of weights and %s for the decode untiled: the image is too small to tile with a 192 px overlap), more than the budget of 1.0 MiB"},
		{"tiles over the budget", 128, 80, 1 << 20, "decoding 1024x1024 px needs %s (the decoder's 5.0 MiB of weights and %s for the decode in 4 tiles of 640 px), more than the budget of 1.0 MiB"},
		{"smallest tiles over the budget", 128, 0, 8 << 20, "decoding 1024x1024 px needs %s (the decoder's 5.0 MiB of weights and %s for the decode in its smallest tiles, of 256 px), more than the budget of 8.0 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanWithin(tc.n, tc.n, tc.tile, 0, weights, tc.budget)
			var pe *pipeline.Error
			if !errors.As(err, &pe) || pe.Stage != pipeline.StagePlan {
				t.Fatalf("got %v, want a plan-stage refusal", err)
			}
			need, dec := pe.Numbers["need_bytes"], pe.Numbers["need_bytes"]-weights
			if want := fmt.Sprintf(tc.want, mib(need), mib(dec)); !strings.HasPrefix(err.Error(), "plan: "+want) {
				t.Errorf("error\n %q\nwant prefix\n %q", err, "plan: "+want)
			}
			if pe.Numbers["budget_bytes"] != tc.budget || pe.Numbers["weights_bytes"] != weights || need <= tc.budget || regexp.MustCompile(`-[0-9]`).MatchString(err.Error()) {
				t.Errorf("numbers %v in %q", pe.Numbers, err)
			}
		})
	}
	if p, err := PlanWithin(32, 32, 0, 0, weights, weights+full.Total); err != nil || p.Tile != 0 {
		t.Errorf("a budget of weights + the untiled decode: %v, %v", p, err)
	}
	if p, err := PlanWithin(128, 128, 0, 0, weights, weights+300<<20); err != nil || p.Tile == 0 || p.Total > 300<<20 {
		t.Errorf("a budget that needs tiles: %v, %v", p, err)
	}
}

func TestPlanChooseTile(t *testing.T) {
	full, _ := PlanDecode(128, 128, 0, 0)
	p, err := ChooseTile(128, 128, 0, full.Total)
	if err != nil || p.Tile != 0 {
		t.Fatalf("budget of the untiled plan: %v %v", p, err)
	}
	p, err = ChooseTile(128, 128, 0, full.Total/3)
	if err != nil || p.Tile == 0 || p.Total > full.Total/3 {
		t.Fatalf("a third of the budget: %v %v", p, err)
	}
	if _, err := ChooseTile(128, 128, 0, 1<<20); err == nil {
		t.Fatal("1 MiB budget accepted")
	}
	if _, err := PlanDecode(64, 64, 10, 16); err == nil {
		t.Fatal("tile smaller than overlap accepted")
	}
	if _, err := PlanDecode(4096, 4096, 25, 24); err == nil {
		t.Fatal("16 million tiles accepted")
	}
}

func TestDecodeCancelled(t *testing.T) {
	_, dec := models(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := dec.Decode(ctx, make([]float32, LatentChannels*4*4), 4, 4, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageDecode {
		t.Fatalf("error %v is not attributed to decode", err)
	}
	if _, err := dec.Decode(context.Background(), make([]float32, 10), 4, 4, Options{}); err == nil {
		t.Fatal("short latents accepted")
	}
	bad := make([]float32, LatentChannels*4*4)
	bad[2*16+5] = float32(math.NaN())
	bad[7] = float32(math.Inf(-1))
	_, err = dec.Decode(context.Background(), bad, 4, 4, Options{})
	if err == nil || !strings.Contains(err.Error(), "1 NaN and 1 infinite values (first at channel 0, row 1, column 3)") {
		t.Fatalf("non-finite latents: %v", err)
	}
	_, err = dec.Decode(context.Background(), make([]float32, LatentChannels*64*64), 64, 64, Options{Tile: 8})
	if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StagePlan {
		t.Fatalf("tile smaller than the overlap: %v, want a plan-stage error", err)
	}
	enc, _ := models(t)
	if _, _, _, err := enc.Encode(context.Background(), make([]float32, 5), 4, 4, Options{}); err == nil {
		t.Fatal("short image accepted")
	}
}

// TestPlanEncodeOddSizes checks the encode plan against the arena on sizes
// that are not multiples of 8 (stride-2 convs round up).
func TestPlanEncodeOddSizes(t *testing.T) {
	enc, _ := models(t)
	for _, s := range [][2]int{{37, 21}, {8, 8}, {1, 9}} {
		a := new(conv.Arena)
		if _, _, _, err := enc.Encode(context.Background(), make([]float32, 3*s[0]*s[1]), s[0], s[1], Options{Arena: a}); err != nil {
			t.Fatal(err)
		}
		p, err := PlanEncode(s[0], s[1])
		if err != nil {
			t.Fatal(err)
		}
		// The plan is an upper bound; on tiny images buffers of different
		// shapes can share a size and be reused, so allow 10% slack.
		if a.Peak() > p.Activations || float64(a.Peak()) < 0.9*float64(p.Activations) {
			t.Errorf("%dx%d: arena peak %d, plan %d", s[1], s[0], a.Peak(), p.Activations)
		}
	}
	if _, err := PlanEncode(0, 5); err == nil {
		t.Error("empty image accepted")
	}
}

// TestLatentInfo checks the sidecar reader and the statistics against the
// golden descriptions (written by the reference's numpy code).
func TestLatentInfo(t *testing.T) {
	dir := filepath.Dir(shared.Path(t, "golden/taef2/manifest.json"))
	for _, name := range []string{"astronaut", "coffee"} {
		p := filepath.Join(dir, name+".latent.f32")
		want, err := ReadLatentInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		got := DescribeLatents(readF32(t, p), want.Shape[0], want.Shape[1], want.Shape[2])
		if got.Min != want.Min || got.Max != want.Max || math.Abs(got.Mean-want.Mean) > 1e-6 || math.Abs(got.Std-want.Std) > 1e-6 {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	if _, err := ReadLatentInfo(filepath.Join(dir, "astronaut.recon.f32")); err == nil {
		t.Error("missing description accepted")
	}
}
