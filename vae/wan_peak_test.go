package vae

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
)

func wanRandLatent(tt, h, w int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 11))
	z := make([]float32, WanLatentChannels*tt*h*w)
	for i := range z {
		z[i] = float32(r.NormFloat64())
	}
	return z
}

// TestWanDecodePlan: the measured peak of a decode stops growing once the
// feature caches are full (from 4 latent frames on it is the same for 4
// and 6, 4 and 5), and WanDecodeBytes bounds it within 10 %.
func TestWanDecodePlan(t *testing.T) {
	v := wanModel(t)
	for _, c := range []struct{ h, w, t0, t1 int }{{2, 2, 4, 6}, {4, 6, 4, 5}} {
		var p0, p1 int64
		wanDecodeAll(t, v, wanRandLatent(c.t0, c.h, c.w, 1), c.t0, c.h, c.w, &p0)
		wanDecodeAll(t, v, wanRandLatent(c.t1, c.h, c.w, 2), c.t1, c.h, c.w, &p1)
		plan := WanDecodeBytes(c.t1, c.h, c.w)
		t.Logf("%dx%d latent: peak %d B at %d frames, %d B at %d; plan %d B", c.h, c.w, p0, c.t0, p1, c.t1, plan)
		if p0 != p1 {
			t.Errorf("%dx%d: peak %d at %d latent frames, %d at %d: grows with the frame count", c.h, c.w, p0, c.t0, p1, c.t1)
		}
		if plan != WanDecodeBytes(c.t0, c.h, c.w) || plan < p1 || float64(plan) > 1.1*float64(p1) {
			t.Errorf("%dx%d: plan %d B for measured %d B (want within +10 %%)", c.h, c.w, plan, p1)
		}
	}
	t.Logf("plan for 81 frames at 832x480: %.2f GB", float64(WanDecodeBytes(21, 60, 104))/1e9)
	// Work: every latent frame after the third costs the same; the first
	// costs less than a quarter of a later one (1 video frame, not 4).
	f := func(tt int) int64 { return v.Flops(tt, 60, 104) }
	if f(4)-f(3) != f(5)-f(4) || f(1)*4 > f(5)-f(4) {
		t.Errorf("Flops at 832x480: %d, %d, %d, %d, %d for 1..5 latent frames", f(1), f(2), f(3), f(4), f(5))
	}
	t.Logf("81 frames at 832x480: %.1f TFLOP", float64(f(21))/1e12)
}

// TestWanStreaming: the decode is causal and streamed: decoding the first
// latent frames alone gives the same first video frames, bit for bit, as
// decoding them followed by another frame, and changing the last latent
// frame changes only the last four video frames.
func TestWanStreaming(t *testing.T) {
	v := wanModel(t)
	const tt, h, w = 3, 3, 2
	z := wanRandLatent(tt, h, w, 3)
	full := frames(t, v, z, tt, h, w)
	prefix := make([]float32, 0, WanLatentChannels*(tt-1)*h*w)
	for c := range WanLatentChannels {
		prefix = append(prefix, z[c*tt*h*w:(c*tt+tt-1)*h*w]...)
	}
	part := frames(t, v, prefix, tt-1, h, w)
	if len(part) != WanFrames(tt-1) || len(full) != WanFrames(tt) {
		t.Fatalf("%d and %d frames", len(part), len(full))
	}
	for f := range part {
		if !slices.Equal(part[f], full[f]) {
			t.Errorf("frame %d differs between the %d- and %d-frame decodes", f, tt-1, tt)
		}
	}
	z2 := slices.Clone(z)
	for c := range WanLatentChannels {
		for i := range h * w {
			z2[(c*tt+tt-1)*h*w+i] += 0.5
		}
	}
	changed := frames(t, v, z2, tt, h, w)
	for f := range changed {
		same := slices.Equal(changed[f], full[f])
		if same != (f < WanFrames(tt-1)) {
			t.Errorf("frame %d: unchanged %v after changing the last latent frame", f, same)
		}
	}
}

func frames(t *testing.T, v *WanVAE, z []float32, tt, h, w int) [][]float32 {
	var out [][]float32
	err := v.DecodeFrames(context.Background(), testPool, z, tt, h, w, nil, func(f int, rgb []float32) error {
		out = append(out, rgb)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNewWanVAEErrors(t *testing.T) {
	path := wanVAEFile(t)
	f, err := checkpoint.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f32 := func(shape ...int) *checkpoint.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return &checkpoint.Tensor{DType: tensor.F32, Shape: shape, Data: make([]byte, 4*n)}
	}
	// An SD 1.5 VAE (LDM names) is another family.
	sd, err := checkpoint.Open(sdtest.SD15(t, "f16"))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	if _, err := NewWanVAE(sd); err == nil || !strings.Contains(err.Error(), "not a Wan 2.1 VAE") {
		t.Errorf("SD 1.5 checkpoint as a Wan VAE: %v", err)
	} else if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageLoad {
		t.Errorf("%v: stage %q, want load", err, s)
	}
	for _, c := range []struct {
		name  string
		src   checkpoint.Source
		is    error
		wants []string
	}{
		{"shape", override{Source: f, set: map[string]*checkpoint.Tensor{"decoder.conv1.weight": f32(384, 16, 1, 3, 3)}},
			checkpoint.ErrShape, []string{`"decoder.conv1.weight"`, "[384 16 1 3 3]", "[384 16 3 3 3]"}},
		{"2-D attention", override{Source: f, set: map[string]*checkpoint.Tensor{"decoder.middle.1.to_qkv.weight": f32(1152, 384, 3, 3)}},
			checkpoint.ErrShape, []string{`"decoder.middle.1.to_qkv.weight"`, "[1152 384 1 1]"}},
		{"missing", override{Source: f, drop: "decoder.upsamples.7.time_conv.bias"},
			checkpoint.ErrMissing, []string{`"decoder.upsamples.7.time_conv.bias"`, "missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewWanVAE(c.src)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, c.is) {
				t.Errorf("%v: not %v", err, c.is)
			}
			if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageLoad {
				t.Errorf("%v: stage %q, want load", err, s)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

func TestWanBadInput(t *testing.T) {
	v := wanModel(t)
	ctx := context.Background()
	z := wanRandLatent(2, 2, 2, 4)
	nan := slices.Clone(z)
	nan[13] = float32(math.NaN())
	keep := func(int, []float32) error { return nil }
	stop := errors.New("disk full")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"short latent", v.DecodeFrames(ctx, nil, z[:100], 2, 2, 2, nil, keep), "100 values"},
		{"shape", v.DecodeFrames(ctx, nil, z, 1, 2, 2, nil, keep), "[16 1 2 2]"},
		{"zero frames", v.DecodeFrames(ctx, nil, nil, 0, 2, 2, nil, keep), "[16 0 2 2]"},
		{"NaN", v.DecodeFrames(ctx, nil, nan, 2, 2, 2, nil, keep), "1 NaN and 0 infinite values (first at channel 1, latent frame 1, row 0, column 1)"},
		{"emit", v.DecodeFrames(ctx, nil, z, 2, 2, 2, nil, func(int, []float32) error { return stop }), "disk full"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, c.err, c.want)
			continue
		}
		if s, ok := pipeline.StageOf(c.err); !ok || s != pipeline.StageDecode {
			t.Errorf("%s: %v: stage %q, want decode", c.name, c.err, s)
		}
	}
}

func TestWanEncodeBadInput(t *testing.T) {
	f, err := checkpoint.Open(wanVAEFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := NewWanEncoder(f)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		f, h, w, n int
		want       string
	}{
		{"frames", 4, 16, 16, 3 * 4 * 16 * 16, "[3 4 16 16]"},
		{"odd size", 1, 12, 16, 3 * 12 * 16, "multiples of 8"},
		{"short", 5, 16, 16, 100, "100 values"},
	} {
		_, err := e.Encode(ctx, nil, make([]float32, c.n), c.f, c.h, c.w)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
			continue
		}
		if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageEncode {
			t.Errorf("%s: stage %q, want encode", c.name, s)
		}
	}
	if _, err := NewWanEncoder(override{Source: f, drop: "encoder.downsamples.5.time_conv.weight"}); !errors.Is(err, checkpoint.ErrMissing) ||
		!strings.Contains(err.Error(), "encoder.downsamples.5.time_conv.weight") {
		t.Errorf("missing time_conv: %v", err)
	}
	// Cancelled from the first frame's progress report: context.Canceled
	// in stage encode before the second frame.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cctx = pipeline.WithTrace(cctx, &pipeline.Trace{Progress: func(pipeline.Stage, int64, int64) { cancel() }})
	_, err = e.Encode(cctx, testPool, make([]float32, 3*5*16*16), 5, 16, 16)
	if s, ok := pipeline.StageOf(err); !errors.Is(err, context.Canceled) || !ok || s != pipeline.StageEncode {
		t.Errorf("cancelled encode: %v (stage %q)", err, s)
	}
}

// TestWanCancel cancels a decode from its first frame: it stops before the
// next convolution with context.Canceled, in stage decode, after 1 frame.
func TestWanCancel(t *testing.T) {
	v := wanModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := 0
	ctx = pipeline.WithTrace(ctx, &pipeline.Trace{Progress: func(s pipeline.Stage, done, total int64) {
		reports++
		cancel()
	}})
	emitted := 0
	err := v.DecodeFrames(ctx, testPool, wanRandLatent(3, 2, 2, 5), 3, 2, 2, nil, func(int, []float32) error { emitted++; return nil })
	if !errors.Is(err, context.Canceled) || reports != 1 || emitted != 1 {
		t.Errorf("%v after %d reports and %d frames, want context.Canceled after 1 and 1", err, reports, emitted)
	}
	if s, ok := pipeline.StageOf(err); !ok || s != pipeline.StageDecode {
		t.Errorf("error stage %q, want decode", s)
	}
}

// wanWhole decodes z breadth first: every frame through one op before the
// next op starts (the whole video at each stage in memory), the schedule
// of a whole-sequence implementation. Each op's history sees its frames in
// the same order as in the streamed decode.
func wanWhole(t *testing.T, v *WanVAE, z []float32, tt, h, w int) [][]float32 {
	return wanWholeTap(t, v, z, tt, h, w, nil)
}

// wanWholeTap is wanWhole that also stores, for each op name in taps, the
// frames after the last op of that name as [C][F][H][W].
func wanWholeTap(t *testing.T, v *WanVAE, z []float32, tt, h, w int, taps map[string][]float32) [][]float32 {
	n := &klNet{ctx: context.Background(), r: runner(testPool), m: &klMeter{}, stage: pipeline.StageDecode}
	st := newWanState(n, &v.wanNet)
	plane := h * w
	var xs []*conv.Map
	for ti := range tt {
		frame := make([]float32, WanLatentChannels*plane)
		for c := range WanLatentChannels {
			inv := 1 / WanLatentStd[c]
			for i, x := range z[(c*tt+ti)*plane : (c*tt+ti+1)*plane] {
				frame[c*plane+i] = x/inv + WanLatentMean[c]
			}
		}
		zm, err := conv.FromCHW(frame, WanLatentChannels, h, w)
		if err != nil {
			t.Fatal(err)
		}
		x := conv.NewMap(h, w, WanLatentChannels)
		if err := v.conv2.Apply(n.r, x, zm, nil, false); err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return wanNetWhole(t, st, &v.wanNet, xs, taps)
}

// wanNetWhole runs frames xs breadth first through net's ops (see
// wanWholeTap) and returns its output frames in CHW.
func wanNetWhole(t *testing.T, st *wanState, v *wanNet, xs []*conv.Map, taps map[string][]float32) [][]float32 {
	for i := range v.ops {
		var next []*conv.Map
		for _, x := range xs {
			outs, err := st.apply(&v.ops[i], x)
			if err != nil {
				t.Fatal(err)
			}
			next = append(next, outs...)
		}
		xs = next
		name := v.ops[i].name
		if _, ok := taps[name]; ok && (i+1 == len(v.ops) || v.ops[i+1].name != name) {
			c, fh, fw, nf := xs[0].C, xs[0].H, xs[0].W, len(xs)
			all := make([]float32, c*nf*fh*fw)
			for f, x := range xs {
				chw := x.ToCHW()
				for ci := range c {
					copy(all[(ci*nf+f)*fh*fw:(ci*nf+f+1)*fh*fw], chw[ci*fh*fw:(ci+1)*fh*fw])
				}
			}
			taps[name] = all
		}
	}
	out := make([][]float32, len(xs))
	for i, x := range xs {
		out[i] = x.ToCHW()
	}
	return out
}

// TestWanStreamedEqualsWhole: the frames DecodeFrames emits one by one are
// bit for bit those of a breadth-first decode of the whole latent.
func TestWanStreamedEqualsWhole(t *testing.T) {
	v := wanModel(t)
	const tt, h, w = 3, 2, 3
	z := wanRandLatent(tt, h, w, 6)
	streamed := frames(t, v, z, tt, h, w)
	whole := wanWhole(t, v, z, tt, h, w)
	if len(whole) != WanFrames(tt) || len(streamed) != len(whole) {
		t.Fatalf("%d streamed and %d whole frames, want %d", len(streamed), len(whole), WanFrames(tt))
	}
	for f := range whole {
		if !slices.Equal(streamed[f], whole[f]) {
			t.Errorf("frame %d: streamed differs from whole", f)
		}
	}
}

// TestWanDecodeIntermediates: decoder.conv1, the middle's output and the
// first time upsampling (5 frames of 16×16) of the golden latent against
// vae.inter.* (README §3b, §4: max 3e-5, rel L2 1e-5).
func TestWanDecodeIntermediates(t *testing.T) {
	v := wanModel(t)
	taps := map[string][]float32{"decoder.conv1": nil, "decoder.middle.2": nil, "decoder.upsamples.3": nil}
	wanWholeTap(t, v, wanGolden(t, "vae.latent.f32"), 3, 8, 8, taps)
	for name, file := range map[string]string{"decoder.conv1": "decoder.conv1", "decoder.middle.2": "decoder.middle", "decoder.upsamples.3": "decoder.upsamples.3"} {
		wanCompare(t, file, taps[name], wanGolden(t, "vae.inter."+file+".f32"), 3e-5, 1e-5)
	}
}

// TestWanEncodeIntermediate: the encoder's output before conv1 (3 latent
// frames of 32 channels) for the 9 golden frames against
// vae.inter.encoder_out (README §3b, §4: max 2e-5, rel L2 1e-5).
func TestWanEncodeIntermediate(t *testing.T) {
	f, err := checkpoint.Open(wanVAEFile(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := NewWanEncoder(f)
	if err != nil {
		t.Fatal(err)
	}
	video := wanGolden(t, "vae.decode.f32")
	const nf, px = 9, 64
	var xs []*conv.Map
	for fi := range nf {
		frame := make([]float32, 3*px*px)
		for c := range 3 {
			copy(frame[c*px*px:(c+1)*px*px], video[(c*nf+fi)*px*px:])
		}
		x, err := conv.FromCHW(frame, 3, px, px)
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	n := &klNet{ctx: context.Background(), r: runner(testPool), m: &klMeter{}, stage: pipeline.StageEncode}
	out := wanNetWhole(t, newWanState(n, &e.wanNet), &e.wanNet, xs, nil)
	if len(out) != 3 {
		t.Fatalf("%d latent frames, want 3", len(out))
	}
	const hw = 8 * 8
	got := make([]float32, 32*3*hw)
	for fi, chw := range out {
		for c := range 32 {
			copy(got[(c*3+fi)*hw:(c*3+fi+1)*hw], chw[c*hw:(c+1)*hw])
		}
	}
	wanCompare(t, "encoder_out", got, wanGolden(t, "vae.inter.encoder_out.f32"), 2e-5, 1e-5)
}

// TestWanTiled: a tile covering the latent is the untiled decode bit for
// bit; 2×2 tiles on an 8×8 latent come closer to it the larger they are
// (the middle attention and the convolutions see only their tile; two
// different latents decode about 1.0 apart in rel L2).
func TestWanTiled(t *testing.T) {
	v := wanModel(t)
	const tt, h, w = 2, 8, 8
	z := wanRandLatent(tt, h, w, 8)
	whole := frames(t, v, z, tt, h, w)
	for _, c := range []struct {
		tile, overlap int
		rel           float64
	}{{8, 4, 0}, {7, 6, 0.15}, {6, 4, 0.25}, {5, 2, 0.4}} {
		var got [][]float32
		err := v.DecodeFramesTiled(context.Background(), testPool, z, tt, h, w, c.tile, c.overlap, func(f int, rgb []float32) error {
			if f != len(got) {
				t.Fatalf("frame %d after %d", f, len(got))
			}
			got = append(got, rgb)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(whole) {
			t.Fatalf("%d frames, want %d", len(got), len(whole))
		}
		var a, b []float32
		for f := range got {
			a, b = append(a, got[f]...), append(b, whole[f]...)
		}
		if c.tile >= h {
			if !slices.Equal(a, b) {
				t.Errorf("one tile: differs from the untiled decode")
			}
			continue
		}
		var se, s2 float64
		for i := range a {
			d := float64(a[i] - b[i])
			se, s2 = se+d*d, s2+float64(b[i])*float64(b[i])
		}
		rel := math.Sqrt(se / s2)
		t.Logf("tiles of %d sharing %d: rel L2 %.3g from the untiled decode", c.tile, c.overlap, rel)
		if rel > c.rel {
			t.Errorf("tiles of %d sharing %d: rel L2 %.3g from the untiled decode (limit %g)", c.tile, c.overlap, rel, c.rel)
		}
		plan, err := WanTiledDecodeBytes(tt, h, w, c.tile, c.overlap)
		if err != nil || plan >= WanDecodeBytes(tt, h, w)+16*int64(len(got))*64*64 || plan <= WanDecodeBytes(tt, c.tile, c.tile) {
			t.Errorf("tiled plan %d B (%v) against untiled %d B", plan, err, WanDecodeBytes(tt, h, w))
		}
	}
	if _, err := WanTiledDecodeBytes(2, 8, 8, 3, 4); err == nil {
		t.Error("a tile smaller than its overlap was planned")
	}
}
