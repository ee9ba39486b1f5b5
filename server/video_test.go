package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// videoFake is the fake backend with videos: DiT "wan" (with VAE "wan-vae"
// and text encoder "umt5") makes a job of req.Steps steps whose "MP4" is
// 1000 bytes counting from the seed, so a range of it is known. step,
// when set, is waited on before each step.
type videoFake struct {
	*fakeBackend
	dir  string
	step chan struct{}

	// models are listed besides the text models.
	models []ModelInfo

	mu   sync.Mutex
	reqs []VideoRequest
}

func (f *videoFake) Models(ctx context.Context) ([]ModelInfo, error) {
	return append(slicesClone(fakeModels), f.models...), nil
}

func newVideoFake(t *testing.T) *videoFake {
	return &videoFake{fakeBackend: newFake(), dir: t.TempDir()}
}

func (f *videoFake) CheckVideo(ctx context.Context, req *VideoRequest) error {
	for _, m := range []struct{ got, want string }{{req.Model, "wan"}, {req.VAE, "wan-vae"}, {req.TextEncoder, "umt5"}} {
		if m.got != m.want {
			return fmt.Errorf("model %q: %w", m.got, ErrModelNotFound)
		}
	}
	if req.Frames != 0 && req.Frames%4 != 1 {
		return pipeline.Errorf(pipeline.StagePlan, "", "%w: %d video frames: want 4n + 1", pipeline.ErrSettings, req.Frames)
	}
	if req.Seed < 0 {
		req.Seed = 1234
	}
	return nil
}

// videoBytes is the fake MP4 of a seed.
func videoBytes(seed int64) []byte {
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(int64(i) + seed)
	}
	return b
}

func (f *videoFake) GenerateVideo(ctx context.Context, job string, req *VideoRequest) (*VideoResult, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, *req)
	f.mu.Unlock()
	tr := pipeline.TraceFrom(ctx)
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
	}
	tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{Items: int64(steps), Unit: "steps"})
	if err := os.MkdirAll(filepath.Join(f.dir, job), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(f.dir, job, "video.mp4"), videoBytes(req.Seed), 0o600); err != nil {
		return nil, err
	}
	return &VideoResult{URL: "/v1/jobs/" + job + "/video", Frames: max(req.Frames, 81), Seed: req.Seed,
		Settings: VideoSettings{Model: req.Model, VAE: req.VAE, TextEncoder: req.TextEncoder, Prompt: req.Prompt,
			Frames: max(req.Frames, 81), Steps: steps, Seed: req.Seed}}, nil
}

func (f *videoFake) VideoFile(job string) (string, error) {
	p := filepath.Join(f.dir, filepath.Base(job), "video.mp4")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("job %s has no video: %w", job, ErrJobNotFound)
	}
	return p, nil
}

func startVideos(t *testing.T, f *videoFake) *testServer {
	return start(t, f.fakeBackend, func(c *Config) { c.Backend = f })
}

var videoBody = map[string]any{"kind": "video", "model": "wan", "vae": "wan-vae", "text_encoder": "umt5", "prompt": "a red fox"}

// videoJob is videoBody with more fields.
func videoJob(more map[string]any) map[string]any {
	m := map[string]any{}
	for k, v := range videoBody {
		m[k] = v
	}
	for k, v := range more {
		m[k] = v
	}
	return m
}

// TestVideoJob: a native video job runs as a job of kind video with its
// progress events and result, its params the request with the seed
// resolved, and its MP4 is served whole and by ranges.
func TestVideoJob(t *testing.T) {
	f := newVideoFake(t)
	ts := startVideos(t, f)
	var created jobCreated
	decode(t, ts.do("POST", "/v1/jobs", videoJob(map[string]any{"frames": 5, "steps": 3, "seed": 7, "rng": "cuda", "round_frames": true, "prompt_ids": []int{17, 201, 1}})),
		http.StatusAccepted, &created)
	if created.Kind != "video" || created.EventsURL == "" {
		t.Fatalf("created %+v", created)
	}
	resp := ts.do("GET", created.EventsURL, nil)
	evs := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	var steps int
	var result VideoResult
	for _, e := range evs {
		if e.event == "end" {
			continue
		}
		var ev api.Event
		if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case api.TypeProgress:
			steps++
		case api.TypeResult:
			if err := json.Unmarshal(ev.Result, &result); err != nil {
				t.Fatal(err)
			}
		}
	}
	if steps != 3 || result.URL != "/v1/jobs/"+created.ID+"/video" || result.Seed != 7 {
		t.Fatalf("%d steps (want 3), result %+v", steps, result)
	}
	var job api.Job
	decode(t, ts.do("GET", "/v1/jobs/"+created.ID, nil), 200, &job)
	var params VideoRequest
	json.Unmarshal(job.Params, &params)
	if job.Kind != "video" || job.State != api.StateDone || job.Model != "wan" || params.Prompt != "a red fox" || params.Seed != 7 ||
		params.Frames != 5 || len(params.PromptIDs) != 3 || params.TextEncoder != "umt5" || params.RNG != "cuda" || !params.RoundFrames {
		t.Errorf("job %s %s model %s, params %s", job.Kind, job.State, job.Model, job.Params)
	}
	if len(f.reqs) != 1 || f.reqs[0].Steps != 3 || f.reqs[0].VAE != "wan-vae" || f.reqs[0].RNG != "cuda" || !f.reqs[0].RoundFrames {
		t.Errorf("the backend got %+v", f.reqs)
	}

	want := videoBytes(7)
	resp = ts.do("GET", result.URL, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" || !bytes.Equal(b, want) ||
		resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("GET %s: %d %s %q, %d bytes", result.URL, resp.StatusCode, resp.Header.Get("Content-Type"),
			resp.Header.Get("Accept-Ranges"), len(b))
	}
	resp = ts.do("GET", result.URL, nil, "Range", "bytes=100-199")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, want[100:200]) ||
		resp.Header.Get("Content-Range") != "bytes 100-199/1000" {
		t.Errorf("range 100-199: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Range"), len(b))
	}
	resp = ts.do("GET", result.URL, nil, "Range", "bytes=5000-")
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("a range past the end: %d, want 416", resp.StatusCode)
	}

	// A job without a video, and no job at all: 404s naming the job.
	for _, id := range []string{"jnope", "..%2Fetc"} {
		resp = ts.do("GET", "/v1/jobs/"+id+"/video", nil)
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "job_not_found") {
			t.Errorf("GET /v1/jobs/%s/video: %d %s, want 404", id, resp.StatusCode, b)
		}
	}
	resp = ts.do("GET", "/v1/jobs/jnope/video", nil)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "jnope") {
		t.Errorf("the 404 does not name the job: %s", b)
	}
}

// TestVideoJobRefused: fields a video job does not take, a missing
// prompt or model and bad settings are refused before a job is made; a
// backend without videos says so.
func TestVideoJobRefused(t *testing.T) {
	f := newVideoFake(t)
	ts := startVideos(t, f)
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		want   string
	}{
		{"misspelt", videoJob(map[string]any{"frame": 5}), 400, `did you mean frames?`},
		{"alias", videoJob(map[string]any{"num_frames": 5}), 400, `did you mean frames?`},
		{"cli name", videoJob(map[string]any{"t5": "umt5"}), 400, `did you mean text_encoder?`},
		{"rng alias", videoJob(map[string]any{"generator": "cpu"}), 400, `did you mean rng?`},
		{"rng misspelt", videoJob(map[string]any{"rgn": "cpu"}), 400, `did you mean rng?`},
		{"rng type", videoJob(map[string]any{"rng": 1}), 400, "rng"},
		{"round misspelt", videoJob(map[string]any{"round_frame": true}), 400, `did you mean round_frames?`},
		{"round type", videoJob(map[string]any{"round_frames": "yes"}), 400, "round_frames"},
		{"image field", videoJob(map[string]any{"n": 2}), 400, `"n"`},
		{"text field", videoJob(map[string]any{"options": map[string]any{}}), 400, `"options"`},
		{"no prompt", videoJob(map[string]any{"prompt": ""}), 400, "prompt"},
		{"no vae", videoJob(map[string]any{"vae": ""}), 400, "vae is required"},
		{"no text encoder", videoJob(map[string]any{"text_encoder": ""}), 400, "text_encoder is required"},
		{"no model", videoJob(map[string]any{"model": ""}), 400, "model is required"},
		{"negative", videoJob(map[string]any{"steps": -1}), 400, "steps is -1"},
		{"settings", videoJob(map[string]any{"frames": 6}), 400, "4n + 1"},
		{"model", videoJob(map[string]any{"vae": "nope"}), 404, "nope"},
		{"type", videoJob(map[string]any{"frames": "many"}), 400, "frames"},
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
	// A backend without videos says so, naming the stage.
	plain := start(t, newFake(), nil)
	for _, r := range []struct {
		method, path string
		body         any
	}{{"POST", "/v1/jobs", videoBody}, {"GET", "/v1/jobs/j1/video", nil}} {
		resp := plain.do(r.method, r.path, r.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(b), "no_video_backend") || !strings.Contains(string(b), `"load"`) {
			t.Errorf("%s %s without videos: %d %s, want 501 in stage load", r.method, r.path, resp.StatusCode, b)
		}
	}
}

// TestVideoCancel: cancelling a video job mid-sampling ends it cancelled
// in stage generate.
func TestVideoCancel(t *testing.T) {
	f := newVideoFake(t)
	f.step = make(chan struct{})
	ts := startVideos(t, f)
	var created jobCreated
	decode(t, ts.do("POST", "/v1/jobs", videoJob(map[string]any{"steps": 5})), http.StatusAccepted, &created)
	f.step <- struct{}{}
	decode(t, ts.do("POST", "/v1/jobs/"+created.ID+"/cancel", nil), http.StatusAccepted, nil)
	waitFor(t, "the job to end", func() bool {
		var job api.Job
		decode(t, ts.do("GET", "/v1/jobs/"+created.ID, nil), 200, &job)
		return job.State == api.StateCancelled && job.Stage == "generate"
	})
	resp := ts.do("GET", "/v1/jobs/"+created.ID+"/video", nil)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a cancelled job's video: %d, want 404", resp.StatusCode)
	}
}

// TestVideoGuard: a page of another origin can neither start a video job
// nor read one's MP4.
func TestVideoGuard(t *testing.T) {
	f := newVideoFake(t)
	ts := startVideos(t, f)
	evil := map[string]string{"Origin": "https://evil.example"}
	body, _ := json.Marshal(videoBody)
	for _, br := range []browserRequest{
		{"POST", "/v1/jobs", string(body), evil},
		{"GET", "/v1/jobs/j1/video", "", evil},
		{"GET", "/v1/jobs/j1/video", "", map[string]string{"Host": "rebind.example:8765"}},
	} {
		resp, b := ts.send(br)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s %v: %d %s, want 403", br.method, br.path, br.hdr, resp.StatusCode, b)
		}
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d video jobs ran", len(f.reqs))
	}
}

// TestVideoDefaultModels: a video job that names no DiT, VAE or text
// encoder runs on the first model of each one's family.
func TestVideoDefaultModels(t *testing.T) {
	f := newVideoFake(t)
	f.models = []ModelInfo{{Name: "sd", Family: "sd1"}, {Name: "wan", Family: FamilyWan}, {Name: "umt5", Family: FamilyTextEncoder},
		{Name: "wan-vae", Family: FamilyWanVAE}, {Name: "other-vae", Family: FamilyWanVAE}}
	ts := startVideos(t, f)
	var created jobCreated
	decode(t, ts.do("POST", "/v1/jobs", map[string]any{"kind": "video", "prompt": "x"}), http.StatusAccepted, &created)
	waitFor(t, "the job to end", func() bool {
		var job api.Job
		decode(t, ts.do("GET", "/v1/jobs/"+created.ID, nil), 200, &job)
		return api.Terminal(job.State)
	})
	if len(f.reqs) != 1 || f.reqs[0].Model != "wan" || f.reqs[0].VAE != "wan-vae" || f.reqs[0].TextEncoder != "umt5" {
		t.Errorf("the backend got %+v", f.reqs)
	}
	if !IsVideoFamily(FamilyWan) || IsVideoFamily(FamilyWanVAE) || IsVideoFamily("sd1") {
		t.Error("IsVideoFamily")
	}
}
