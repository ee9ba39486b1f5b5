package video

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tensor"
	"github.com/glassbox-ai/glassbox/vae"
)

// Tolerances of shared/golden/wan/README.md §4 for the whole chain.
const (
	chainMaxAbs, chainRelL2 = 1e-3, 1e-4
	framesMaxDiffering      = 0.005 // every sample ±1, at most 0.5 % differing
)

func goldenBytes(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "golden/wan/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenF32(t testing.TB, name string) []float32 {
	b := goldenBytes(t, name)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func goldenI32(t testing.TB, name string) []int32 {
	b := goldenBytes(t, name)
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// tinyRequest is README §3d's run (t2v_tiny.run.json): DiT tiny (4
// heads), umT5 tiny over the stored ids, the real VAE, 17 frames of
// 64×64, FlowUniPC 4 steps, shift 5, CFG 5, seed 42, 16 fps.
func tinyRequest(t testing.TB) Request {
	sdtest.SkipGeneric(t, "the tiny text-to-video job (its real VAE decodes 17 frames)")
	return Request{
		DiT: sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), T5: sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		VAE:       sdtest.Wan(t, "vae", 2001, tensor.F32),
		PromptIDs: goldenI32(t, "t2v_tiny.cond_ids.i32"), NegativeIDs: goldenI32(t, "t2v_tiny.uncond_ids.i32"),
		Frames: 17, Width: 64, Height: 64, Steps: 4, Shift: 5, CFGScale: 5, Sampler: "unipc", Seed: 42, Heads: 4, FPS: 16,
	}
}

// recorder keeps a job's trace as lines "stage part: note".
type recorder struct {
	mu       sync.Mutex
	started  []pipeline.Stage
	parts    []string
	warnings []string
	previews []api.Preview
}

func (r *recorder) ctx(ctx context.Context) context.Context {
	return pipeline.WithTrace(ctx, &pipeline.Trace{
		StageStart: func(s pipeline.Stage) { r.mu.Lock(); r.started = append(r.started, s); r.mu.Unlock() },
		PartDone: func(s pipeline.Stage, part string, d time.Duration, st pipeline.StageStats) {
			r.mu.Lock()
			r.parts = append(r.parts, string(s)+" "+part+": "+st.Note)
			r.mu.Unlock()
		},
		Warning: func(code, msg string) { r.mu.Lock(); r.warnings = append(r.warnings, code+": "+msg); r.mu.Unlock() },
		Preview: func(p api.Preview) { r.mu.Lock(); r.previews = append(r.previews, p); r.mu.Unlock() },
	})
}

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

func readPNG(t testing.TB, path string) *image.NRGBA {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := im.Bounds()
	out := image.NewNRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			out.Set(x, y, im.At(x, y))
		}
	}
	return out
}

// ffmpegOrSkip finds ffmpeg and ffprobe, or ends the test: a skip, or
// under CI (CI=true, where .ci/run installs them) a failure.
func ffmpegOrSkip(t testing.TB) (ffmpeg, ffprobe string) {
	t.Helper()
	ff, err1 := exec.LookPath("ffmpeg")
	fp, err2 := exec.LookPath("ffprobe")
	if err1 == nil && err2 == nil {
		return ff, fp
	}
	msg := "no ffmpeg/ffprobe found (install them with: apt-get install -y ffmpeg)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true: the MP4 tests must run")
	}
	t.Skip(msg)
	return "", ""
}

// TestT2VTiny runs README §3d's tiny text-to-video end to end through the
// job: the saved final latent against t2v_tiny.final_latent, every frame
// PNG against t2v_tiny.frames (±1, ≤ 0.5 % differing), the trace's stages
// and steps, and the MP4's stream (ffprobe: h264, 64×64, yuv420p, 16 fps,
// 17 frames).
func TestT2VTiny(t *testing.T) {
	ffmpeg, ffprobe := ffmpegOrSkip(t)
	r := tinyRequest(t)
	dir := t.TempDir()
	r.Out = filepath.Join(dir, "out.mp4")
	r.FramesDir = filepath.Join(dir, "frames")
	var rec recorder
	t0 := time.Now()
	res, err := (&Engine{FFmpeg: ffmpeg}).Run(rec.ctx(context.Background()), r, "t2v", filepath.Join(dir, "job"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tiny run %.1f s: %s", time.Since(t0).Seconds(), res.Plan)
	for _, p := range rec.parts {
		t.Log(p)
	}
	want := []pipeline.Stage{pipeline.StagePlan, pipeline.StageLoad, pipeline.StageEncode, pipeline.StageGenerate, pipeline.StageDecode, pipeline.StageDeliver}
	if len(rec.started) != len(want) {
		t.Errorf("stages %v, want %v", rec.started, want)
	}
	steps := 0
	for _, p := range rec.parts {
		if strings.HasPrefix(p, "generate step ") {
			steps++
			if !strings.Contains(p, "s/step") || !strings.Contains(p, "ETA") {
				t.Errorf("step event %q lacks s/step or ETA", p)
			}
		}
	}
	if steps != 4 {
		t.Errorf("%d step events, want 4", steps)
	}
	if got := res.Timesteps; len(got) != 4 || got[0] != 999 || got[1] != 937 || got[2] != 833 || got[3] != 624 {
		t.Errorf("timesteps %v, want [999 937 833 624]", got)
	}

	// The saved latent, as written before the decode.
	if res.Latents != LatentsPath(filepath.Join(dir, "job")) {
		t.Errorf("latents at %s, want the job's folder", res.Latents)
	}
	b, err := os.ReadFile(res.Latents)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	ref := goldenF32(t, "t2v_tiny.final_latent.f32")
	if len(x) != len(ref) {
		t.Fatalf("saved latent has %d values, golden %d", len(x), len(ref))
	}
	m, rel := compare(x, ref)
	t.Logf("final latent: max |Δ| %.2e, rel L2 %.2e", m, rel)
	if m > chainMaxAbs || rel > chainRelL2 || math.IsNaN(m) {
		t.Errorf("final latent: max |Δ| %.3g (tolerance %g), rel L2 %.3g (tolerance %g)", m, chainMaxAbs, rel, chainRelL2)
	}
	var info LatentInfo
	if jb, err := os.ReadFile(vae.SidecarPath(res.Latents)); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(jb, &info); err != nil || info.Shape != [4]int{16, 5, 8, 8} || info.Request.Seed != 42 {
		t.Errorf("latent description %+v (%v), want shape [16 5 8 8] and seed 42", info, err)
	}

	// The frames, as Wan's cache_video makes them.
	if res.Frames != 17 {
		t.Errorf("%d frames, want 17", res.Frames)
	}
	var samples, differing, worst int
	for k := range 17 {
		got := readPNG(t, FramePath(r.FramesDir, k))
		ref := readPNG(t, shared.Path(t, "golden/wan/t2v_tiny.frames/frame_"+strconv.Itoa(1000 + k)[1:]+".png"))
		if got.Bounds() != ref.Bounds() {
			t.Fatalf("frame %d is %v, golden %v", k, got.Bounds(), ref.Bounds())
		}
		for i := range got.Pix {
			if i%4 == 3 {
				continue
			}
			samples++
			d := int(got.Pix[i]) - int(ref.Pix[i])
			d = max(d, -d)
			worst = max(worst, d)
			if d > 0 {
				differing++
			}
		}
	}
	t.Logf("frames: %d of %d samples differ, at most by %d", differing, samples, worst)
	if worst > 1 || float64(differing) > framesMaxDiffering*float64(samples) {
		t.Errorf("frames: %d of %d samples differ, at most by %d; want ±1 and ≤ %.1f %%", differing, samples, worst, 100*framesMaxDiffering)
	}

	// The MP4's stream.
	if res.Video != r.Out {
		t.Fatalf("video %q, want %q", res.Video, r.Out)
	}
	out, err := exec.Command(ffprobe, "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,width,height,pix_fmt,r_frame_rate,nb_read_frames", "-of", "default=noprint_wrappers=1", r.Out).CombinedOutput()
	if err != nil {
		t.Fatalf("ffprobe: %v: %s", err, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	tags, err := exec.Command(ffprobe, "-v", "error", "-show_entries", "format_tags=comment", "-of", "default=noprint_wrappers=1:nokey=1", r.Out).CombinedOutput()
	if err != nil || !strings.Contains(string(tags), `"seed":42`) || !strings.Contains(string(tags), `"steps":4`) {
		t.Errorf("MP4 comment tag %q (%v), want the settings", tags, err)
	}
	for k, v := range map[string]string{"codec_name": "h264", "width": "64", "height": "64", "pix_fmt": "yuv420p", "r_frame_rate": "16/1", "nb_read_frames": "17"} {
		if got[k] != v {
			t.Errorf("ffprobe %s = %q, want %q (%s)", k, got[k], v, out)
		}
	}
}

// TestDecodeAgain decodes a run's saved latent again (glassbox decode
// JOB): only the VAE is loaded, and the frames are those of the run.
func TestDecodeAgain(t *testing.T) {
	r := tinyRequest(t)
	r.Steps = 1
	dir := t.TempDir()
	r.FramesDir = filepath.Join(dir, "run")
	res, err := (&Engine{}).Run(context.Background(), r, "a", filepath.Join(dir, "job"))
	if err != nil {
		t.Fatal(err)
	}
	r2 := r
	r2.FramesDir = filepath.Join(dir, "again")
	var rec recorder
	res2, err := (&Engine{}).Decode(rec.ctx(context.Background()), r2, res.Latents, "b")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.parts {
		if strings.Contains(p, "DiT") || strings.Contains(p, "umT5") || strings.HasPrefix(p, "generate") {
			t.Errorf("the decode ran %q", p)
		}
	}
	if res2.Frames != 17 || res2.Latents != res.Latents {
		t.Errorf("decode: %d frames from %s, want 17 from %s", res2.Frames, res2.Latents, res.Latents)
	}
	for k := range 17 {
		a, b := readPNG(t, FramePath(r.FramesDir, k)), readPNG(t, FramePath(r2.FramesDir, k))
		if string(a.Pix) != string(b.Pix) {
			t.Fatalf("frame %d differs between the run and its decode", k)
		}
	}
	// A latent of another size is refused in load.
	r2.Frames = 21
	if _, err := (&Engine{}).Decode(context.Background(), r2, res.Latents, "c"); err == nil {
		t.Error("a 17-frame latent decoded as 21 frames")
	} else if st, _ := pipeline.StageOf(err); st != pipeline.StageLoad {
		t.Errorf("stage %s (%v), want load", st, err)
	}
}

// TestRefusals: each bad request fails in its stage with the numbers,
// before anything is sampled.
func TestRefusals(t *testing.T) {
	base := tinyRequest(t)
	dir := t.TempDir()
	base.Out = filepath.Join(dir, "out.mp4")
	cases := []struct {
		name  string
		edit  func(*Request, *Engine)
		stage pipeline.Stage
		want  string
	}{
		{"frames 16", func(r *Request, _ *Engine) { r.Frames = 16 }, pipeline.StagePlan, "13"},
		{"width 60", func(r *Request, _ *Engine) { r.Width = 60 }, pipeline.StagePlan, "64"},
		{"sampler", func(r *Request, _ *Engine) { r.Sampler = "dpm++2m" }, pipeline.StagePlan, "dpm++2m"},
		{"no ffmpeg", func(_ *Request, e *Engine) { e.FFmpeg = filepath.Join(dir, "no-ffmpeg") }, pipeline.StageDeliver, "ffmpeg"},
		{"budget", func(r *Request, _ *Engine) { r.Budget = 64 << 20 }, pipeline.StagePlan, "the budget is 64.0 MiB"},
		{"wrong VAE", func(r *Request, _ *Engine) { r.VAE = r.DiT }, pipeline.StageLoad, ""},
		{"T5 as DiT", func(r *Request, _ *Engine) { r.DiT = r.T5 }, pipeline.StageLoad, ""},
		{"token id", func(r *Request, _ *Engine) { r.PromptIDs = []int32{5, 300, 1} }, pipeline.StageEncode, "300"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			e := &Engine{}
			c.edit(&r, e)
			var rec recorder
			_, err := e.Run(rec.ctx(context.Background()), r, "bad", filepath.Join(dir, c.name))
			if err == nil {
				t.Fatal("no error")
			}
			st, _ := pipeline.StageOf(err)
			t.Logf("%s: %v", st, err)
			if st != c.stage {
				t.Errorf("stage %s, want %s", st, c.stage)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			for _, s := range rec.started {
				if s == pipeline.StageGenerate {
					t.Errorf("the job sampled before failing")
				}
			}
		})
	}
}

// TestNoFFmpegFramesDir: without ffmpeg, --frames-dir still gets every
// frame and the job warns that no MP4 was made.
func TestNoFFmpegFramesDir(t *testing.T) {
	r := tinyRequest(t)
	r.Steps = 1
	dir := t.TempDir()
	r.Out = filepath.Join(dir, "out.mp4")
	r.FramesDir = filepath.Join(dir, "frames")
	var rec recorder
	res, err := (&Engine{FFmpeg: filepath.Join(dir, "no-ffmpeg")}).Run(rec.ctx(context.Background()), r, "nf", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Video != "" || len(rec.warnings) != 1 || !strings.Contains(rec.warnings[0], "no_ffmpeg") {
		t.Errorf("video %q, warnings %q: want no MP4 and a no_ffmpeg warning", res.Video, rec.warnings)
	}
	if _, err := os.Stat(r.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an MP4 exists without ffmpeg: %v", err)
	}
	// Each frame is a preview as it is decoded: at 64×64 the frame itself.
	if len(rec.previews) != 17 {
		t.Errorf("%d previews, want one a frame (17)", len(rec.previews))
	}
	for k := range 17 {
		frame := readPNG(t, FramePath(r.FramesDir, k))
		if k >= len(rec.previews) {
			continue
		}
		p := rec.previews[k]
		if p.Frame != k+1 || p.Frames != 17 || p.Width != 64 || p.Height != 64 || p.Step != 1 || p.Steps != 1 {
			t.Errorf("preview %d: frame %d of %d, %d×%d, step %d of %d", k, p.Frame, p.Frames, p.Width, p.Height, p.Step, p.Steps)
			continue
		}
		img, err := png.Decode(bytes.NewReader(p.PNG))
		if err != nil {
			t.Fatalf("preview %d: %v", k, err)
		}
		got := image.NewNRGBA(img.Bounds())
		for y := range 64 {
			for x := range 64 {
				got.Set(x, y, img.At(x, y))
			}
		}
		if !bytes.Equal(got.Pix, frame.Pix) {
			t.Errorf("preview %d differs from frame_%03d.png", k, k)
		}
	}
	if res.Latents != r.Out+".latents.f32" {
		t.Errorf("latents at %q, want beside the output", res.Latents)
	}
}

// TestCancel: a job cancelled just before its first step stops within one DiT
// call with a step error that names the step.
func TestCancel(t *testing.T) {
	r := tinyRequest(t)
	r.FramesDir = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &pipeline.Trace{PartDone: func(s pipeline.Stage, part string, _ time.Duration, _ pipeline.StageStats) {
		if part == "text embedding" {
			cancel() // before step 1's first DiT call
		}
	}}
	_, err := (&Engine{}).Run(pipeline.WithTrace(ctx, tr), r, "c", "")
	var se *diffusion.StepError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.Step != 1 {
		t.Fatalf("error %v, want a cancelled step 1", err)
	}
	if st, _ := pipeline.StageOf(err); st != pipeline.StageGenerate {
		t.Errorf("stage %s, want generate", st)
	}
}

// TestNaNStep: a DiT whose head bias is NaN fails step 1 with a step
// error naming it, in stage generate, and nothing is decoded.
func TestNaNStep(t *testing.T) {
	r := tinyRequest(t)
	b, err := os.ReadFile(r.DiT)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var ti struct {
		Offsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(hdr["head.head.bias"], &ti); err != nil || ti.Offsets[1] <= ti.Offsets[0] {
		t.Fatalf("head.head.bias: %v %v", ti, err)
	}
	for i := 8 + int(n) + ti.Offsets[0]; i < 8+int(n)+ti.Offsets[1]; i += 4 {
		binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(math.NaN())))
	}
	r.DiT = filepath.Join(t.TempDir(), "nan.safetensors")
	if err := os.WriteFile(r.DiT, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r.FramesDir = t.TempDir()
	var rec recorder
	_, err = (&Engine{}).Run(rec.ctx(context.Background()), r, "nan", "")
	var se *diffusion.StepError
	if !errors.As(err, &se) || se.Step != 1 || !errors.Is(err, diffusion.ErrNonFinite) {
		t.Fatalf("error %v, want a non-finite step 1", err)
	}
	if st, _ := pipeline.StageOf(err); st != pipeline.StageGenerate {
		t.Errorf("stage %s, want generate", st)
	}
	for _, s := range rec.started {
		if s == pipeline.StageDecode {
			t.Error("decoded after a failed step")
		}
	}
	t.Log(err)
}

// TestFFmpegRefuses: an ffmpeg that exits with an error fails the job in
// deliver with ffmpeg's own message, after the latent was saved.
func TestFFmpegRefuses(t *testing.T) {
	r := tinyRequest(t)
	r.Steps = 1
	dir := t.TempDir()
	fake := filepath.Join(dir, "ffmpeg")
	script := "#!/bin/sh\ncat >/dev/null\necho \"Unknown encoder 'libx264'\" >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.Out = filepath.Join(dir, "out.mp4")
	_, err := (&Engine{FFmpeg: fake}).Run(context.Background(), r, "f", filepath.Join(dir, "job"))
	if err == nil || !strings.Contains(err.Error(), "Unknown encoder 'libx264'") {
		t.Fatalf("error %v, want ffmpeg's message", err)
	}
	if st, _ := pipeline.StageOf(err); st != pipeline.StageDeliver {
		t.Errorf("stage %s, want deliver", st)
	}
	if _, err := os.Stat(LatentsPath(filepath.Join(dir, "job"))); err != nil {
		t.Errorf("the latent was not kept: %v", err)
	}
	if _, err := os.Stat(r.Out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed ffmpeg left %s: %v", r.Out, err)
	}
	t.Log(err)
}

// TestVideoRNG: the noise's generator is cpu (torch's, Wan's) unless the
// request names cuda (Philox); another name is refused in stage plan
// with the valid ones. The two generators give different latents for one
// seed, an empty name is cpu's, and the MP4 comment's settings echo it.
func TestVideoRNG(t *testing.T) {
	base := tinyRequest(t)
	base.Frames, base.Width, base.Height, base.Steps, base.CFGScale = 5, 32, 32, 1, 1
	dir := t.TempDir()
	latents := map[string][]float32{}
	for _, c := range []struct {
		rng, want, err string
	}{
		{"", "cpu", ""},
		{"cpu", "cpu", ""},
		{"cuda", "cuda", ""},
		{"mt19937", "", `rng "mt19937": want one of cuda, cpu`},
		{"CPU", "", `want one of cuda, cpu`},
	} {
		t.Run(c.rng, func(t *testing.T) {
			r := base
			r.RNG = c.rng
			r.FramesDir = filepath.Join(dir, c.rng+"frames")
			_, cerr := r.Check()
			res, err := (&Engine{}).Run(context.Background(), r, "rng", filepath.Join(dir, "job"+c.rng))
			if c.err != "" {
				for _, e := range []error{cerr, err} {
					st, _ := pipeline.StageOf(e)
					if e == nil || st != pipeline.StagePlan || !strings.Contains(e.Error(), c.err) {
						t.Errorf("error %v (stage %s), want stage plan with %q", e, st, c.err)
					}
				}
				return
			}
			if cerr != nil || err != nil {
				t.Fatalf("Check: %v, Run: %v", cerr, err)
			}
			if r.Defaults(); r.RNG != c.want || !strings.Contains(Settings(&r), `"rng":"`+c.want+`"`) {
				t.Errorf("rng %q, settings %s, want %s", r.RNG, Settings(&r), c.want)
			}
			x, err := vae.ReadF32(res.Latents, 16*2*4*4)
			if err != nil {
				t.Fatal(err)
			}
			latents[c.rng] = x
		})
	}
	same := func(a, b []float32) bool { return len(a) > 0 && slices.Equal(a, b) }
	if !same(latents[""], latents["cpu"]) || same(latents["cpu"], latents["cuda"]) || len(latents["cuda"]) == 0 {
		t.Errorf("latents: default = cpu %v, cpu = cuda %v (want true, false)", same(latents[""], latents["cpu"]), same(latents["cpu"], latents["cuda"]))
	}
}

// spieceT5 is the tiny umT5 with the test SentencePiece model (2000
// pieces) in its spiece_model tensor, as ComfyUI's files keep theirs.
func spieceT5(t testing.TB, r *Request) string {
	spm, err := os.ReadFile(shared.Path(t, "vocab/ugm/ugm-t5like.model"))
	if err != nil {
		t.Fatal(err)
	}
	return sdtest.WithSpiece(t, r.T5, spm)
}

// TestVideoPromptTokens: umT5 reads at most 512 tokens. Token ids over
// that are refused by Check (at request time, stage plan) naming the
// count and the limit; a longer text prompt is cut to 511 tokens and EOS,
// as Wan's tokenizer cuts it, with a prompt_truncated warning naming the
// count, the limit and what was left out.
func TestVideoPromptTokens(t *testing.T) {
	base := tinyRequest(t)
	base.Frames, base.Width, base.Height, base.Steps, base.CFGScale = 5, 32, 32, 1, 1
	base.NegativeIDs = nil
	t5 := spieceT5(t, &base)
	the := func(n int) string { return strings.Repeat("the ", n) } // "▁the" is id 3 of the test model
	ids := func(n int) []int32 { return slices.Repeat([]int32{3}, n) }
	dir := t.TempDir()
	for _, c := range []struct {
		name    string
		edit    func(*Request)
		err     string // a Check (stage plan) error
		warning string // "": none
	}{
		{"ids 512", func(r *Request) { r.PromptIDs = ids(512) }, "", ""},
		{"ids 513", func(r *Request) { r.PromptIDs = ids(513) }, "prompt ids: 513 token ids, umT5 reads at most 512", ""},
		{"negative ids 600", func(r *Request) { r.CFGScale, r.NegativeIDs = 5, ids(600) }, "negative prompt ids: 600 token ids, umT5 reads at most 512", ""},
		{"text 511", func(r *Request) { r.PromptIDs, r.Prompt = nil, the(510) }, "", ""},
		{"text 600", func(r *Request) { r.PromptIDs, r.Prompt = nil, the(599) }, "",
			"prompt_truncated: the prompt is 600 tokens with its EOS, umT5 reads at most 512: its first 511 and EOS are encoded, the last 88 are left out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			r.T5 = t5
			c.edit(&r)
			r.FramesDir = filepath.Join(dir, c.name)
			_, cerr := r.Check()
			var rec recorder
			_, err := (&Engine{}).Run(rec.ctx(context.Background()), r, "tokens", filepath.Join(dir, "job "+c.name))
			if c.err != "" {
				for _, e := range []error{cerr, err} {
					if st, _ := pipeline.StageOf(e); e == nil || st != pipeline.StagePlan || !strings.Contains(e.Error(), c.err) {
						t.Errorf("error %v (stage %s), want stage plan with %q", e, st, c.err)
					}
				}
				return
			}
			if cerr != nil || err != nil {
				t.Fatalf("Check: %v, Run: %v", cerr, err)
			}
			var warned []string
			for _, w := range rec.warnings {
				if strings.HasPrefix(w, "prompt_truncated") {
					warned = append(warned, w)
				}
			}
			if c.warning == "" && len(warned) != 0 || c.warning != "" && (len(warned) != 1 || !strings.HasPrefix(warned[0], c.warning)) {
				t.Errorf("warnings %q, want %q", warned, c.warning)
			}
		})
	}
}

// TestVideoSpieceTensor: the umT5 file's own spiece_model tensor (U8, as
// ComfyUI stores it) tokenizes text prompts, with nothing else given: a
// job on the texts makes the latent, bit for bit, that the job on their
// ids makes (as glassbox tokenize gives them from the same tensor, EOS
// last); --spiece with the model's file gives the same; without the
// tensor, a text prompt fails in stage load naming spiece_model.
func TestVideoSpieceTensor(t *testing.T) {
	base := tinyRequest(t)
	base.Frames, base.Width, base.Height, base.Steps = 5, 32, 32, 1
	plain := base.T5
	base.T5 = spieceT5(t, &base)
	const prompt, negative = "this is the work of any license, or that of you", "not that"
	texts := func(r *Request) { r.Prompt, r.Negative, r.PromptIDs, r.NegativeIDs = prompt, negative, nil, nil }
	dir := t.TempDir()
	latents := map[string][]float32{}
	for _, c := range []struct {
		name  string
		edit  func(*Request)
		stage pipeline.Stage // "": the job runs
		want  string
	}{
		{"ids", func(r *Request) {
			r.PromptIDs, r.NegativeIDs = []int32{17, 18, 3, 25, 6, 22, 50, 4, 12, 13, 6, 16, 1}, []int32{24, 13, 1}
		}, "", ""},
		{"tensor", texts, "", ""},
		{"spiece file", func(r *Request) { texts(r); r.T5, r.Spiece = plain, shared.Path(t, "vocab/ugm/ugm-t5like.model") }, "", ""},
		{"no tensor", func(r *Request) { texts(r); r.T5 = plain }, pipeline.StageLoad, `tensor "spiece_model": missing`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.edit(&r)
			r.FramesDir = filepath.Join(dir, c.name)
			res, err := (&Engine{}).Run(context.Background(), r, "spiece", filepath.Join(dir, "job "+c.name))
			if c.stage != "" {
				if st, _ := pipeline.StageOf(err); err == nil || st != c.stage || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v (stage %s), want stage %s with %q", err, st, c.stage, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if latents[c.name], err = vae.ReadF32(res.Latents, 16*2*4*4); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, name := range []string{"tensor", "spiece file"} {
		if len(latents["ids"]) == 0 || !slices.Equal(latents[name], latents["ids"]) {
			t.Errorf("the job on the texts (%s) and on their ids made different latents", name)
		}
	}
}

// TestVideoRoundFrames: with RoundFrames a frame count that is not 4n + 1
// becomes the nearest that is (the larger on a tie), and the job warns
// frames_rounded naming both counts; without it the count is refused in
// stage plan with the nearest ones. Valid counts, the default and counts
// below 1 are not rounded.
func TestVideoRoundFrames(t *testing.T) {
	base := tinyRequest(t)
	base.Width, base.Height, base.Steps, base.CFGScale = 32, 32, 1, 1
	dir := t.TempDir()
	base.FramesDir = dir
	for _, c := range []struct {
		frames int
		round  bool
		want   int    // the frames checked
		err    string // the Check error
	}{
		{6, true, 5, ""},
		{7, true, 9, ""}, // a tie
		{8, true, 9, ""},
		{4, true, 5, ""},
		{2, true, 1, ""},
		{5, true, 5, ""},
		{0, true, DefaultFrames, ""},
		{6, false, 0, "6 video frames: Wan 2.1 makes 4n + 1 frames (nearest: 5 or 9)"},
		{-3, true, 0, "-3 video frames: want 4n + 1"},
	} {
		r := base
		r.Frames, r.RoundFrames = c.frames, c.round
		_, err := r.Check()
		st, _ := pipeline.StageOf(err)
		switch {
		case c.err != "" && (err == nil || st != pipeline.StagePlan || !strings.Contains(err.Error(), c.err)):
			t.Errorf("frames %d round %v: error %v (stage %s), want stage plan with %q", c.frames, c.round, err, st, c.err)
		case c.err == "" && (err != nil || r.Frames != c.want):
			t.Errorf("frames %d round %v: %d frames, %v; want %d", c.frames, c.round, r.Frames, err, c.want)
		}
	}

	// A job: 4 frames made as 5, with the warning; Check before Run (as a
	// server checks a request, then runs it) warns as well.
	for _, checked := range []bool{false, true} {
		r := base
		r.Frames, r.RoundFrames = 4, true
		if checked {
			if _, err := r.Check(); err != nil {
				t.Fatal(err)
			}
		}
		var rec recorder
		res, err := (&Engine{}).Run(rec.ctx(context.Background()), r, "round", filepath.Join(dir, "job"+strconv.FormatBool(checked)))
		if err != nil {
			t.Fatal(err)
		}
		want := "frames_rounded: 4 video frames are not 4n + 1 (nearest: 1 or 5): rounded to 5"
		if res.Frames != 5 || !slices.Contains(rec.warnings, want) || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(want, w) }) {
			t.Errorf("checked %v: %d frames, warnings %q (result %q), want 5 and %q", checked, res.Frames, rec.warnings, res.Warnings, want)
		}
	}
}
