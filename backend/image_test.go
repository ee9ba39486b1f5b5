package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

// TestImageJob runs one native image job on the random-weight SD 1.5
// checkpoint (64×64, one step, no negative pass): the model is listed as
// family sd1, a text model's name is refused, the job streams a preview
// and its PNG is served from the job's folder with its infotext.
func TestImageJob(t *testing.T) {
	sdtest.SkipGeneric(t, "a served image job")
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	jobs := t.TempDir()
	text := shared.Path(t, "models/stories260K.gguf")
	url, _ := serve(t, Config{Models: []string{ckpt, text}, JobsDir: jobs})
	name := filepath.Base(ckpt)

	_, body := get(t, url+"/v1/models")
	if !strings.Contains(string(body), `"family":"sd1"`) {
		t.Errorf("GET /v1/models does not list the checkpoint as sd1: %s", body)
	}
	if st, b := postBody(t, url+"/v1/jobs", `{"kind":"image","model":"stories260K","prompt":"x"}`); st != 400 || !strings.Contains(string(b), "not an image model") {
		t.Errorf("a text model's image job: %d %s", st, b)
	}
	if st, b := postBody(t, url+"/v1/jobs", `{"kind":"image","model":"`+name+`","prompt":"x","width":100}`); st != 400 || !strings.Contains(string(b), "width") {
		t.Errorf("width 100: %d %s", st, b)
	}
	st, b := postBody(t, url+"/v1/jobs", `{"kind":"image","model":"`+name+`","prompt":"a lighthouse","width":64,"height":64,"steps":1,"cfg_scale":1,"seed":3}`)
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %s", st, b)
	}
	var job api.Job
	json.Unmarshal(b, &job)
	resp, err := http.Get(url + "/v1/jobs/" + job.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	var previews int
	var result server.ImageResult
	var failure string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev api.Event
		json.Unmarshal([]byte(data), &ev)
		switch ev.Type {
		case api.TypePreview:
			previews++
		case api.TypeResult:
			json.Unmarshal(ev.Result, &result)
		case api.TypeError:
			failure = data
		}
	}
	resp.Body.Close()
	if failure != "" || len(result.Images) != 1 {
		t.Fatalf("job %s: %s, result %+v", job.ID, failure, result)
	}
	if previews != 1 {
		t.Errorf("%d previews of 1 step", previews)
	}
	st, b = get(t, url+result.Images[0].URL)
	if st != 200 {
		t.Fatalf("GET %s: %d", result.Images[0].URL, st)
	}
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil || im.Bounds().Dx() != 64 || im.Bounds().Dy() != 64 {
		t.Fatalf("the image: %v %v", err, im.Bounds())
	}
	if !bytes.Contains(b, []byte("Steps: 1, Sampler: Euler a")) || !strings.HasPrefix(result.Images[0].Infotext, "a lighthouse\nSteps: 1") {
		t.Errorf("the infotext: %q", result.Images[0].Infotext)
	}
	if s := result.Settings; s.Seed != 3 || s.Sampler != "euler_a" || s.Width != 64 || len(s.ModelHash) != 10 {
		t.Errorf("settings %+v", s)
	}
}

// TestImageFile: a job's images are found from its id alone (so they are
// served after a restart), and an id that is not one names nothing.
func TestImageFile(t *testing.T) {
	jobs := t.TempDir()
	b := newBackend(t, Config{JobsDir: jobs})
	dir := filepath.Join(jobs, "jabc123")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"image.png", "image-2.png"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("png"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		job  string
		n    int
		want string
	}{
		{"jabc123", 0, filepath.Join(dir, "image.png")},
		{"jabc123", 1, filepath.Join(dir, "image-2.png")},
		{"jabc123", 2, ""},
		{"jother", 0, ""},
		{"../jabc123", 0, ""},
		{"jabc123/..", 0, ""},
		{"", 0, ""},
		{"jabc123", -1, ""},
	} {
		got, err := b.ImageFile(tc.job, tc.n)
		if got != tc.want || (tc.want == "") != errors.Is(err, server.ErrJobNotFound) {
			t.Errorf("ImageFile(%q, %d) = %q, %v; want %q", tc.job, tc.n, got, err, tc.want)
		}
	}
}

// TestImageResidency: an image model stays resident in the residency
// the text models live in, under its name with its weights, and each job
// leases its working memory beside it: an idle text model is evicted when
// both would not fit the budget, the image model stays after the job (and
// unloads by name), and a budget smaller than the image's plan refuses the
// job in stage plan. (The leases only: no sampling.)
func TestImageResidency(t *testing.T) {
	ckpt := sdtest.SD15(t, "f16")
	text := shared.Path(t, "models/stories260K.gguf")
	sd := filepath.Base(ckpt)
	settings := func(b *Backend) *engimage.Settings {
		s, err := engimage.Resolve(imageRequest(&server.ImageRequest{Prompt: "x", Width: 64, Height: 64, Steps: 1, N: 1, Seed: 1}, ckpt, t.TempDir()), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// The sizes: the image job's leases, the image model's, the text model's.
	probe := newBackend(t, Config{Models: []string{ckpt, text}})
	model, work, err := probe.reserveImage(context.Background(), sd, "j1", settings(probe), probe.device())
	if err != nil || model == nil || work == nil {
		t.Fatalf("reserve: %v", err)
	}
	imageBytes := probe.res.Used()
	model.Release()
	work.Release()
	weights := probe.res.Used()
	if err := probe.Load(context.Background(), "stories260K", nil); err != nil {
		t.Fatal(err)
	}
	textBytes := probe.res.Used() - weights
	if weights < 1<<30 || imageBytes <= weights || textBytes <= 0 {
		t.Fatalf("image job %d bytes, its model %d, text model %d", imageBytes, weights, textBytes)
	}

	b := newBackend(t, Config{Models: []string{ckpt, text}, Budget: imageBytes + textBytes - 1})
	if err := b.Load(context.Background(), "stories260K", nil); err != nil {
		t.Fatal(err)
	}
	model, work, err = b.reserveImage(context.Background(), sd, "j2", settings(b), b.device())
	if err != nil || model == nil {
		t.Fatalf("reserve beside an idle text model: %v", err)
	}
	names := func() []string {
		var out []string
		for _, st := range b.res.List() {
			out = append(out, fmt.Sprintf("%s %d %d", st.Model, st.Bytes, st.InUse))
		}
		return out
	}
	if got := strings.Join(names(), "; "); got != fmt.Sprintf("%s %d 1; image %s (job j2) %d 1", sd, weights, sd, imageBytes-weights) &&
		got != fmt.Sprintf("image %s (job j2) %d 1; %s %d 1", sd, imageBytes-weights, sd, weights) {
		t.Errorf("resident while the image job runs: %s", got)
	}
	model.Release()
	work.Release()
	if got := strings.Join(names(), "; "); got != fmt.Sprintf("%s %d 0", sd, weights) {
		t.Errorf("resident after the image job: %s, want the image model, idle", got)
	}
	if err := b.Unload(context.Background(), sd); err != nil || len(b.res.List()) != 0 {
		t.Errorf("unload the image model: %v, %s", err, names())
	}

	small := newBackend(t, Config{Models: []string{ckpt}, Budget: imageBytes - 1})
	s := settings(small)
	s.Budget = 0 // the engine's own plan would refuse first; this checks the residency's
	if _, _, err := small.reserveImage(context.Background(), sd, "j3", s, small.device()); err == nil {
		t.Error("leases larger than the budget were granted")
	} else if st, _ := pipeline.StageOf(err); st != pipeline.StagePlan {
		t.Errorf("refused in %s: %v", st, err)
	}
}

// BenchmarkImagePreview is the cost a served image job pays each step for
// its preview (engine/image.Preview: the latent projected to RGB and
// encoded as a PNG), at the latent sizes of 64², 512² and 1024² images.
func BenchmarkImagePreview(b *testing.B) {
	for _, px := range []int{64, 512, 1024} {
		side := px / 8
		x := make([]float32, 4*side*side)
		for i := range x {
			x[i] = float32(i%17)/8 - 1
		}
		b.Run(fmt.Sprintf("%dpx", px), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := engimage.Preview(x, side, side); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestImageResident runs two image jobs back to back on the random-weight
// checkpoint: the first reads the weights in its load stage, the second
// finds them resident (0 bytes read), the model stays listed as running
// between them, and the second image and latent are bit-identical to the
// first's, made on the freshly loaded networks with the same seed
// (engine/image's TestResident compares with an engine without a
// Loaded).
func TestImageResident(t *testing.T) {
	sdtest.SkipGeneric(t, "two served image jobs")
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	name := filepath.Base(ckpt)
	jobs := t.TempDir()
	b := newBackend(t, Config{Models: []string{ckpt}, JobsDir: jobs})
	req := server.ImageRequest{Model: name, Prompt: "a lighthouse", Width: 64, Height: 64, Steps: 1, CFGScale: 1, Seed: 5, N: 1}

	var wantLat, wantPix []byte
	for i, job := range []string{"j1", "j2"} {
		var load api.StageStats
		var skipped []string
		parts := map[string]api.StageStats{}
		ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{
			StageSkipped: func(s pipeline.Stage, reason string) {
				if s == pipeline.StageLoad {
					skipped = append(skipped, reason)
				}
			},
			StageDone: func(s pipeline.Stage, st api.StageStats) {
				if s == pipeline.StageLoad {
					load = st
				}
			},
			PartDone: func(s pipeline.Stage, part string, _ time.Duration, st api.StageStats) {
				if s == pipeline.StageLoad {
					parts[part] = st
				}
			},
		})
		r := req
		t0 := time.Now()
		if _, err := b.GenerateImage(ctx, job, &r); err != nil {
			t.Fatalf("job %s: %v", job, err)
		}
		t.Logf("job %s: %s, load stage %d bytes (%s)", job, time.Since(t0).Round(time.Millisecond), load.Bytes, load.Note)
		// The job's own load stage says the model was resident; the
		// residency's skip of a load is not the job's.
		if len(skipped) > 0 {
			t.Errorf("job %s: load skipped (%q) besides the load stage", job, skipped)
		}
		if i == 0 && load.Bytes < 1<<30 {
			t.Errorf("job %s: the first load read %d bytes", job, load.Bytes)
		}
		if i == 1 {
			if load.Bytes != 0 || !strings.Contains(load.Note, "resident") {
				t.Errorf("job %s: load stage %+v, want resident, 0 bytes", job, load)
			}
			if u := parts["UNet"]; u.Bytes != 0 || !strings.Contains(u.Note, "resident") {
				t.Errorf("job %s: the UNet's load %+v", job, u)
			}
		}
		lat, _ := os.ReadFile(engimage.LatentsPath(filepath.Join(jobs, job), 0))
		pix := pixels(t, filepath.Join(jobs, job, "image.png"))
		if i == 0 {
			wantLat, wantPix = lat, pix // the fresh load's
		} else if len(lat) != 4*8*8*4 || !bytes.Equal(lat, wantLat) || !bytes.Equal(pix, wantPix) {
			t.Errorf("job %s: the image differs from the fresh load's (%d and %d latent bytes)", job, len(lat), len(wantLat))
		}
		running, _ := b.Running(context.Background())
		if len(running) != 1 || running[0].Name != name || running[0].Bytes < 1<<30 || running[0].InUse != 0 {
			t.Errorf("after job %s, running: %+v", job, running)
		}
	}
}

// pixels is a PNG file's decoded pixels (its text chunks, with the job's
// times, left out).
func pixels(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	r := im.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, c3 := im.At(x, y).RGBA()
			out = append(out, byte(c0>>8), byte(c1>>8), byte(c2>>8), byte(c3>>8))
		}
	}
	return out
}
