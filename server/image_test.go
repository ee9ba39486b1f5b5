package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// imageFake is the fake backend with images: model "sd" makes a job of
// req.Steps steps (a preview each) whose PNGs are req.Width×req.Height,
// filled with a grey from the seed, with the prompt in a text chunk's
// place (the infotext). step, when set, is waited on before each step.
type imageFake struct {
	*fakeBackend
	dir  string
	step chan struct{}

	mu   sync.Mutex
	reqs []ImageRequest
}

func newImageFake(t *testing.T) *imageFake {
	return &imageFake{fakeBackend: newFake(), dir: t.TempDir()}
}

func (f *imageFake) Models(ctx context.Context) ([]ModelInfo, error) {
	return append(slicesClone(fakeModels), ModelInfo{Name: "sd", Family: "sd1", Path: "/models/sd.safetensors"}), nil
}

func slicesClone(m []ModelInfo) []ModelInfo { return append([]ModelInfo(nil), m...) }

func (f *imageFake) CheckImage(ctx context.Context, req *ImageRequest) error {
	if req.Model != "sd" {
		return fmt.Errorf("model %q: %w", req.Model, ErrModelNotFound)
	}
	if req.Width%64 != 0 || req.Height%64 != 0 {
		return pipeline.Errorf(pipeline.StagePlan, "", "%w: width: %d is not a multiple of 64", pipeline.ErrSettings, req.Width)
	}
	if req.Seed < 0 {
		req.Seed = 1234
	}
	return nil
}

func (f *imageFake) GenerateImage(ctx context.Context, job string, req *ImageRequest) (*ImageResult, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, *req)
	f.mu.Unlock()
	tr := pipeline.TraceFrom(ctx)
	w, h := max(req.Width, 64), max(req.Height, 64)
	steps := max(req.Steps, 1)
	tr.OnStageStart(pipeline.StageGenerate)
	for i := range steps {
		if f.step != nil {
			select {
			case <-f.step:
			case <-ctx.Done():
				return nil, pipeline.Wrap(pipeline.StageGenerate, ctx.Err(), "")
			}
		}
		tr.OnProgress(pipeline.StageGenerate, int64(i+1), int64(steps))
		tr.OnPreview(api.Preview{Step: i + 1, Steps: steps, Width: w / 8, Height: h / 8, PNG: grey(w/8, h/8, uint8(i))})
	}
	tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: int64(steps), Unit: "steps"})
	res := &ImageResult{Settings: ImageSettings{Model: req.Model, Prompt: req.Prompt, Width: w, Height: h, Steps: steps,
		Sampler: "euler_a", Seed: req.Seed, N: req.N, ModelHash: "0123456789"}}
	if err := os.MkdirAll(filepath.Join(f.dir, job), 0o700); err != nil {
		return nil, err
	}
	for n := range req.N {
		seed := req.Seed + int64(n)
		if err := os.WriteFile(filepath.Join(f.dir, job, fmt.Sprint(n)+".png"), grey(w, h, uint8(seed)), 0o600); err != nil {
			return nil, err
		}
		res.Images = append(res.Images, ImageOutput{Index: n, Seed: seed, URL: fmt.Sprintf("/v1/jobs/%s/images/%d", job, n),
			Infotext: req.Prompt + "\nSteps: " + fmt.Sprint(steps) + ", Seed: " + fmt.Sprint(seed)})
	}
	return res, nil
}

func (f *imageFake) ImageFile(job string, n int) (string, error) {
	p := filepath.Join(f.dir, filepath.Base(job), fmt.Sprint(n)+".png")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("job %s image %d: %w", job, n, ErrJobNotFound)
	}
	return p, nil
}

// grey is a w×h PNG of one grey.
func grey(w, h int, v uint8) []byte {
	im := image.NewGray(image.Rect(0, 0, w, h))
	for i := range im.Pix {
		im.Pix[i] = v
	}
	var b bytes.Buffer
	png.Encode(&b, im)
	return b.Bytes()
}

func startImages(t *testing.T, f *imageFake) *testServer {
	return start(t, f.fakeBackend, func(c *Config) { c.Backend = f })
}

// pngSize decodes a PNG and returns its size and its first pixel's grey.
func pngSize(t *testing.T, b []byte) (int, int, uint8) {
	t.Helper()
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG (%d bytes): %v", len(b), err)
	}
	g := color.GrayModel.Convert(im.At(0, 0)).(color.Gray)
	return im.Bounds().Dx(), im.Bounds().Dy(), g.Y
}

func TestImageJob(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	var created jobCreated
	decode(t, ts.do("POST", "/v1/jobs", map[string]any{"kind": "image", "model": "sd", "prompt": "a red fox",
		"width": 128, "height": 64, "steps": 3, "seed": 7, "n": 2}), http.StatusAccepted, &created)
	if created.Kind != "image" || created.EventsURL == "" {
		t.Fatalf("created %+v", created)
	}
	resp := ts.do("GET", created.EventsURL, nil)
	evs := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	var previews, steps int
	var result ImageResult
	for _, e := range evs {
		var ev api.Event
		if e.event == "end" {
			continue
		}
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case api.TypePreview:
			previews++
			if w, h, _ := pngSize(t, ev.Preview.PNG); w != 16 || h != 8 {
				t.Errorf("preview %dx%d, want 16x8", w, h)
			}
		case api.TypeProgress:
			steps++
		case api.TypeResult:
			if err := json.Unmarshal(ev.Result, &result); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The last step's preview is always sent; the others as the gap allows.
	if previews < 1 || previews > 3 || steps != 3 {
		t.Errorf("%d previews (want 1 to 3), %d steps (want 3)", previews, steps)
	}
	if len(result.Images) != 2 || result.Images[1].Seed != 8 {
		t.Fatalf("result %+v", result)
	}
	for i, im := range result.Images {
		resp := ts.do("GET", im.URL, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("GET %s: %d %s", im.URL, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if w, h, g := pngSize(t, b); w != 128 || h != 64 || g != uint8(7+i) {
			t.Errorf("image %d: %dx%d grey %d, want 128x64 grey %d", i, w, h, g, 7+i)
		}
	}
	// The job's params are the request, its seed resolved.
	var job api.Job
	decode(t, ts.do("GET", "/v1/jobs/"+created.ID, nil), 200, &job)
	var params ImageRequest
	json.Unmarshal(job.Params, &params)
	if job.Kind != "image" || params.Prompt != "a red fox" || params.Seed != 7 || params.N != 2 {
		t.Errorf("job %s params %s", job.Kind, job.Params)
	}
	// Replay from the middle: only the events after.
	resp = ts.do("GET", created.EventsURL, nil, "Last-Event-ID", "3")
	again := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	if len(again) == 0 || again[0].id != "4" {
		t.Errorf("replay after 3 starts at %+v", again[:min(1, len(again))])
	}
	resp = ts.do("GET", "/v1/jobs/"+created.ID+"/images/5", nil)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a missing image: %d, want 404", resp.StatusCode)
	}
}

func TestImageJobRefused(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"misspelt", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "negativ_prompt": "y"}, 400, `did you mean negative_prompt`},
		{"alias", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "sampler_name": "Euler"}, 400, `did you mean sampler?`},
		{"text field", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "options": map[string]any{}}, 400, `"options"`},
		{"no prompt", map[string]any{"kind": "image", "model": "sd"}, 400, "prompt is required"},
		{"n", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "n": 11}, 400, "1 to 10"},
		{"settings", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "width": 100}, 400, "multiple of 64"},
		{"model", map[string]any{"kind": "image", "model": "nope", "prompt": "x"}, 404, "nope"},
		{"init image", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "init_image": "%%%"}, 400, "base64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", "/v1/jobs", tc.body)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s, want %d with %q", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d jobs ran", len(f.reqs))
	}
	// A backend without images says so.
	plain := start(t, newFake(), nil)
	resp := plain.do("POST", "/v1/jobs", map[string]any{"kind": "image", "model": "sd", "prompt": "x"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("no image backend: %d, want 501", resp.StatusCode)
	}
}

func TestPreviewLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pv := func(step, steps int) *api.Event {
		return &api.Event{Type: api.TypePreview, Preview: &api.Preview{Step: step, Steps: steps}}
	}
	fv := func(frame, frames int) *api.Event {
		return &api.Event{Type: api.TypePreview, Preview: &api.Preview{Step: 2, Steps: 2, Frame: frame, Frames: frames}}
	}
	var p previewLimiter
	for i, tc := range []struct {
		ev   *api.Event
		at   time.Duration
		skip bool
	}{
		{pv(1, 10), 0, false},
		{pv(2, 10), 100 * time.Millisecond, true},
		{&api.Event{Type: api.TypeProgress}, 110 * time.Millisecond, false},
		{pv(3, 10), 200 * time.Millisecond, true},
		{pv(4, 10), previewGap, false},
		{pv(5, 10), previewGap + time.Millisecond, true},
		{pv(10, 10), previewGap + 2*time.Millisecond, false}, // the last step's
		// A video's decoded frames (step = steps): the last frame's is kept.
		{fv(1, 5), 3 * previewGap, false},
		{fv(2, 5), 3*previewGap + time.Millisecond, true},
		{fv(5, 5), 3*previewGap + 2*time.Millisecond, false},
	} {
		if got := p.skip(tc.ev, t0.Add(tc.at)); got != tc.skip {
			t.Errorf("event %d: skip %v, want %v", i, got, tc.skip)
		}
	}
}

// TestImageCancel: cancelling a job mid-sampling ends it cancelled in
// stage generate, with no images.
func TestImageCancel(t *testing.T) {
	f := newImageFake(t)
	f.step = make(chan struct{})
	ts := startImages(t, f)
	var created jobCreated
	decode(t, ts.do("POST", "/v1/jobs", map[string]any{"kind": "image", "model": "sd", "prompt": "x", "steps": 5}), http.StatusAccepted, &created)
	f.step <- struct{}{}
	decode(t, ts.do("POST", "/v1/jobs/"+created.ID+"/cancel", nil), http.StatusAccepted, nil)
	waitFor(t, "the job to end", func() bool {
		var job api.Job
		decode(t, ts.do("GET", "/v1/jobs/"+created.ID, nil), 200, &job)
		return job.State == api.StateCancelled && job.Stage == "generate"
	})
}

// TestImageGuard: the browser guard covers the image routes: a page of
// another origin can neither start an image job (JSON or a form post)
// nor read one's picture, a page's non-JSON body is refused where no
// upload is taken, and a DNS-rebinding Host is refused.
func TestImageGuard(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	evil := map[string]string{"Origin": "https://evil.example"}
	for _, br := range []browserRequest{
		{"POST", "/sdapi/v1/txt2img", `{"prompt":"x"}`, evil},
		{"POST", "/v1/images/generations", `{"prompt":"x"}`, evil},
		{"POST", "/v1/jobs", `{"kind":"image","model":"sd","prompt":"x"}`, evil},
		{"POST", "/v1/images/edits", "--b--\r\n", map[string]string{"Origin": "https://evil.example", "Content-Type": "multipart/form-data; boundary=b"}},
		{"GET", "/sdapi/v1/progress", "", evil},
		{"GET", "/v1/jobs/j1/images/0", "", evil},
		{"POST", "/prompt", `{"prompt":{}}`, evil},
		{"POST", "/api/prompt", `{"prompt":{}}`, evil},
		{"GET", "/view?filename=j1_00001_.png", "", evil},
		{"POST", "/sdapi/v1/txt2img", `{"prompt":"x"}`, map[string]string{"Host": "rebind.example:7860"}},
		// A page of this server's own may post a multipart form to the
		// edit endpoint (TestUploadFromPage), but no other simple type.
		{"POST", "/v1/images/edits", "--b--\r\n", map[string]string{"Origin": ts.url, "Content-Type": "text/plain"}},
		{"POST", "/v1/images/generations", "--b--\r\n", map[string]string{"Origin": ts.url, "Content-Type": "multipart/form-data; boundary=b"}},
	} {
		resp, b := ts.send(br)
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("%s %s %v: %d %s, want it refused", br.method, br.path, br.hdr, resp.StatusCode, b)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d image jobs ran", len(f.reqs))
	}
}

// TestImageQueuedBehindText: an image job waits for the generation slot a
// text job holds, in stage queued with its position, then runs; a full
// queue refuses one with a 503 and Retry-After.
func TestImageQueuedBehindText(t *testing.T) {
	f := newImageFake(t)
	f.hold, f.holdAt = make(chan struct{}), 0
	f.inPrefill = make(chan struct{}, 4)
	ts := start(t, f.fakeBackend, func(c *Config) { c.Backend = f; c.MaxQueue = 1 })
	var text, img jobCreated
	decode(t, ts.do("POST", "/v1/jobs", map[string]any{"model": "tiny", "prompt": "x"}), http.StatusAccepted, &text)
	<-f.inPrefill
	decode(t, ts.do("POST", "/v1/jobs", map[string]any{"kind": "image", "model": "sd", "prompt": "x"}), http.StatusAccepted, &img)
	resp := ts.do("POST", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "width": 64, "height": 64})
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "queue is full") {
		t.Errorf("a third job with a queue of 1: %d %s", resp.StatusCode, b)
	}
	waitFor(t, "the image job queued", func() bool {
		var job api.Job
		decode(t, ts.do("GET", "/v1/jobs/"+img.ID, nil), 200, &job)
		return job.State == api.StateRunning && job.Stage == "queued"
	})
	if len(f.reqs) != 0 {
		t.Fatal("the image job ran beside the text job")
	}
	close(f.hold)
	waitFor(t, "the image job done", func() bool {
		var job api.Job
		decode(t, ts.do("GET", "/v1/jobs/"+img.ID, nil), 200, &job)
		return job.State == api.StateDone
	})
}
