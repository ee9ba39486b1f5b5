package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/engine/video"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/tensor"
)

// wanFiles are the tiny Wan files (DiT of 4 heads, umT5 without a
// SentencePiece model, the real VAE's shapes) as served model names, with
// the server serving them and a text model.
func wanFiles(t *testing.T, jobs string) (url, dit, t5, vae string) {
	t.Helper()
	sdtest.SkipGeneric(t, "a served video job (the VAE decodes the frames)")
	files := []string{sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		sdtest.Wan(t, "vae", 2001, tensor.F32)}
	url, _ = serve(t, Config{Models: append(files, shared.Path(t, "models/stories260K.gguf")), JobsDir: jobs})
	return url, filepath.Base(files[0]), filepath.Base(files[1]), filepath.Base(files[2])
}

// tinyVideo is a native video job's body on the tiny files: 5 frames of
// 32×32, the prompts as token ids.
func tinyVideo(dit, t5, vae string, more string) string {
	return fmt.Sprintf(`{"kind":"video","model":%q,"text_encoder":%q,"vae":%q,"prompt_ids":[17,201,33,1],`+
		`"negative_prompt_ids":[9,9,1],"heads":4,"frames":5,"width":32,"height":32%s}`, dit, t5, vae, more)
}

// jobEvents reads a job's whole event stream.
func jobEvents(t *testing.T, url, id string, each func(api.Event)) {
	t.Helper()
	resp, err := http.Get(url + "/v1/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev api.Event
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type != "" {
			each(ev)
		}
	}
}

// TestVideoJob runs one native video job on the tiny Wan files (2 steps):
// bad models and settings are refused before a job is made, the job goes
// through the video stages with a part and a progress event each step,
// and its MP4 (an ISO BMFF file) and latent are in the job's folder, the
// MP4 served whole and by ranges.
func TestVideoJob(t *testing.T) {
	if _, err := video.FindFFmpeg(""); err != nil {
		t.Skip(err)
	}
	jobs := t.TempDir()
	url, dit, t5, vae := wanFiles(t, jobs)

	for _, tc := range []struct{ body, want string }{
		{tinyVideo("stories260K", t5, vae, ""), "not a Wan 2.1 file"},
		{tinyVideo(dit, t5, vae, `,"frames":6`), "nearest: 5 or 9"},
		{tinyVideo(dit, t5, vae, `,"sampler":"heun"`), "unipc and euler"},
	} {
		if st, b := postBody(t, url+"/v1/jobs", tc.body); st != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.body, st, b, tc.want)
		}
	}
	if st, b := postBody(t, url+"/v1/jobs", tinyVideo(dit, "nope.safetensors", vae, "")); st != 404 || !strings.Contains(string(b), "nope") {
		t.Errorf("an unknown text encoder: %d %s, want 404", st, b)
	}

	st, b := postBody(t, url+"/v1/jobs", tinyVideo(dit, t5, vae, `,"steps":2,"seed":42`))
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %s", st, b)
	}
	var job api.Job
	json.Unmarshal(b, &job)
	var stages []string
	var steps, progress int
	var result server.VideoResult
	var failure string
	jobEvents(t, url, job.ID, func(ev api.Event) {
		switch ev.Type {
		case api.TypeStageStart:
			stages = append(stages, ev.Stage)
		case api.TypePart:
			if ev.Stage == "generate" && strings.HasPrefix(ev.Part, "step ") {
				steps++
			}
		case api.TypeProgress:
			if ev.Stage == "generate" {
				progress++
			}
		case api.TypeResult:
			json.Unmarshal(ev.Result, &result)
		case api.TypeError:
			failure = fmt.Sprintf("%+v", ev.Error)
		}
	})
	if failure != "" {
		t.Fatalf("job %s failed: %s", job.ID, failure)
	}
	if got := strings.Join(stages, " "); got != "plan load encode generate decode deliver" {
		t.Errorf("stages %q", got)
	}
	if steps != 2 || progress != 2 {
		t.Errorf("%d step parts and %d progress events, want 2 each", steps, progress)
	}
	s := result.Settings
	if result.URL != "/v1/jobs/"+job.ID+"/video" || result.Frames != 5 || result.Seed != 42 || s.Model != dit || s.VAE != vae ||
		s.TextEncoder != t5 || s.Steps != 2 || s.Sampler != "unipc" || s.Shift != 5 || s.FPS != 16 || len(result.Timesteps) != 2 {
		t.Errorf("result %+v", result)
	}
	for _, f := range []string{"video.mp4", "latents.f32"} {
		if _, err := os.Stat(filepath.Join(jobs, job.ID, f)); err != nil {
			t.Errorf("the job's folder: %v", err)
		}
	}
	// The journal's params: the request and, under engine, the engine's.
	var got api.Job
	_, b = get(t, url+"/v1/jobs/"+job.ID)
	json.Unmarshal(b, &got)
	var params struct {
		server.VideoRequest
		Engine video.Request `json:"engine"`
	}
	if err := json.Unmarshal(got.Params, &params); err != nil || got.Kind != "video" || params.Seed != 42 ||
		filepath.Base(params.Engine.DiT) != dit || params.Engine.Heads != 4 {
		t.Errorf("job %s params %s: %v", got.Kind, got.Params, err)
	}

	st, whole := get(t, url+result.URL)
	if st != 200 || len(whole) < 100 || !bytes.Equal(whole[4:8], []byte("ftyp")) {
		t.Fatalf("GET %s: %d, %d bytes %q", result.URL, st, len(whole), whole[:min(len(whole), 16)])
	}
	req, _ := http.NewRequest("GET", url+result.URL, nil)
	req.Header.Set("Range", "bytes=10-49")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, whole[10:50]) || resp.Header.Get("Content-Type") != "video/mp4" {
		t.Errorf("range 10-49: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(part))
	}
	if st, b := get(t, url+"/v1/jobs/jnone/video"); st != 404 || !strings.Contains(string(b), "jnone") {
		t.Errorf("no such job's video: %d %s", st, b)
	}
}

// TestVideoCancel: a video job cancelled after its first sampling step
// ends cancelled in stage generate, with no MP4.
func TestVideoCancel(t *testing.T) {
	jobs := t.TempDir()
	url, dit, t5, vae := wanFiles(t, jobs)
	// More steps than can pass while the cancel is on its way (a step of
	// 64×64 took 12 ms here: 1000 of 96×96 take half a minute).
	st, b := postBody(t, url+"/v1/jobs", tinyVideo(dit, t5, vae, `,"steps":1000,"width":96,"height":96`))
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %s", st, b)
	}
	var job api.Job
	json.Unmarshal(b, &job)
	resp, err := http.Get(url + "/v1/jobs/" + job.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"part":"step 1/1000"`) {
			break
		}
	}
	if st, b := postBody(t, url+"/v1/jobs/"+job.ID+"/cancel", ""); st != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", st, b)
	}
	deadline := time.Now().Add(2 * time.Minute) // a hang guard
	for {
		_, b := get(t, url+"/v1/jobs/"+job.ID)
		var got api.Job
		json.Unmarshal(b, &got)
		if got.State == api.StateCancelled {
			if got.Stage != "generate" {
				t.Errorf("cancelled in stage %s, want generate", got.Stage)
			}
			break
		}
		if got.State == api.StateDone || got.State == api.StateFailed || time.Now().After(deadline) {
			t.Fatalf("job %s: state %s stage %s, want it cancelled", job.ID, got.State, got.Stage)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(jobs, job.ID, "video.mp4")); err == nil {
		t.Error("a cancelled job left an MP4")
	}
	if st, _ := get(t, url+"/v1/jobs/"+job.ID+"/video"); st != 404 {
		t.Errorf("a cancelled job's video: %d, want 404", st)
	}
}

// TestVideoModelsListed: GET /v1/models lists the three Wan files with
// the family of the request field each is for, and /api/show gives them
// the capability "video".
func TestVideoModelsListed(t *testing.T) {
	url, dit, t5, vae := wanFiles(t, t.TempDir())
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID, Family string }
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range list.Data {
		got[m.ID] = m.Family
	}
	for name, fam := range map[string]string{dit: "wan", t5: "umt5", vae: "wan-vae"} {
		if got[name] != fam {
			t.Errorf("/v1/models: %s has family %q, want %q (all: %v)", name, got[name], fam, got)
		}
	}
	resp, err = http.Post(url+"/api/show", "application/json", strings.NewReader(`{"model":"`+dit+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"video"`) {
		t.Errorf("/api/show %s: %d %s", dit, resp.StatusCode, b)
	}
}
