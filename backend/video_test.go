package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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

	// The three files are listed by their families; the DiT makes videos.
	_, b := get(t, url+"/v1/models")
	var list struct {
		Data []server.ModelInfo `json:"data"`
	}
	json.Unmarshal(b, &list)
	families := map[string]string{}
	for _, m := range list.Data {
		families[m.Name] = m.Family
	}
	if families[dit] != server.FamilyWan || families[vae] != server.FamilyWanVAE || families[t5] != server.FamilyTextEncoder {
		t.Errorf("GET /v1/models families %v", families)
	}
	if st, b := postBody(t, url+"/api/show", `{"model":"`+dit+`"}`); st != 200 || !strings.Contains(string(b), `"capabilities":["video"]`) {
		t.Errorf("/api/show %s: %d %s", dit, st, b)
	}

	for _, tc := range []struct{ body, stage, want, also string }{
		{tinyVideo("stories260K", t5, vae, ""), "load", "not a Wan 2.1 file", ""},
		{tinyVideo(dit, t5, vae, `,"frames":6`), "plan", "nearest: 5 or 9", ""},
		{tinyVideo(dit, t5, vae, `,"sampler":"heun"`), "plan", "unipc and euler", ""},
		{tinyVideo(dit, t5, vae, `,"rng":"philox"`), "plan", `rng \"philox\": want one of cuda, cpu`, ""},
		{tinyVideo(dit, t5, vae, `,"prompt_ids":[`+strings.Repeat("3,", 512)+`1]`), "plan", "prompt ids: 513 token ids, umT5 reads at most 512", ""},
		{tinyVideo(dit, t5, vae, `,"prompt_ids":[17,256,1]`), "load", "prompt ids: token 1 is id 256, outside the vocabulary of " + t5 + " (0..255)", ""},
		{tinyVideo(dit, t5, vae, `,"negative_prompt_ids":[-1]`), "load", "negative prompt ids: token 0 is id -1, outside the vocabulary", ""},
		{tinyVideo(dit, t5, dit, ""), "load", "the VAE " + dit + " is Wan (", "not a Wan VAE file"},
		{tinyVideo(dit, vae, vae, ""), "load", "the text encoder " + vae + " is Wan VAE (", "not a text encoder file"},
		{tinyVideo(t5, t5, vae, ""), "load", "the DiT " + t5 + " is text encoder (", "not a Wan file"},
	} {
		if st, b := postBody(t, url+"/v1/jobs", tc.body); st != 400 || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), tc.also) || !strings.Contains(string(b), `"stage":"`+tc.stage+`"`) {
			t.Errorf("%s: %d %s, want 400 in stage %s with %q and %q", tc.body, st, b, tc.stage, tc.want, tc.also)
		}
	}
	if st, b := postBody(t, url+"/v1/jobs", tinyVideo(dit, "nope.safetensors", vae, "")); st != 404 || !strings.Contains(string(b), "nope") {
		t.Errorf("an unknown text encoder: %d %s, want 404", st, b)
	}

	// The job names no models: the only one of each family is used.
	st, b := postBody(t, url+"/v1/jobs", `{"kind":"video","prompt_ids":[17,201,33,1],"negative_prompt_ids":[9,9,1],`+
		`"heads":4,"frames":5,"width":32,"height":32,"steps":2,"seed":42}`)
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
		s.TextEncoder != t5 || s.Steps != 2 || s.Sampler != "unipc" || s.Shift != 5 || s.FPS != 16 || s.RNG != "cpu" || len(result.Timesteps) != 2 {
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
		filepath.Base(params.Engine.DiT) != dit || params.Engine.Heads != 4 || params.Engine.RNG != "cpu" {
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

// TestVideoBudget: a video job over the memory budget fails in stage plan
// with the bytes it needs and the budget, before anything is loaded.
func TestVideoBudget(t *testing.T) {
	sdtest.SkipGeneric(t, "a served video job")
	files := []string{sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		sdtest.Wan(t, "vae", 2001, tensor.F32)}
	url, _ := serve(t, Config{Models: files, JobsDir: t.TempDir(), Budget: 1 << 20})
	st, b := postBody(t, url+"/v1/jobs", `{"kind":"video","prompt_ids":[17,1],"negative_prompt_ids":[9,1],"heads":4,"frames":5,"width":32,"height":32,"steps":1}`)
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %s", st, b)
	}
	var job api.Job
	json.Unmarshal(b, &job)
	var failure *api.Error
	var loaded bool
	jobEvents(t, url, job.ID, func(ev api.Event) {
		if ev.Type == api.TypeError {
			failure = ev.Error
		}
		if ev.Type == api.TypeStageStart && ev.Stage == "load" {
			loaded = true
		}
	})
	if failure == nil || failure.Stage != "plan" || !strings.Contains(failure.Message, "memory budget of 1.00 MiB") ||
		failure.Numbers["budget_bytes"] != 1<<20 || failure.Numbers["needed_bytes"] <= 1<<20 || loaded {
		t.Errorf("job %s: error %+v, load started %v", job.ID, failure, loaded)
	}
}

// TestVideoFile: a job's MP4 is found from its id alone, and an id that
// is not one names nothing.
func TestVideoFile(t *testing.T) {
	jobs := t.TempDir()
	b := newBackend(t, Config{JobsDir: jobs})
	if err := os.MkdirAll(filepath.Join(jobs, "jabc"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobs, "jabc", "video.mp4"), []byte("mp4"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := b.VideoFile("jabc"); err != nil || p != filepath.Join(jobs, "jabc", "video.mp4") {
		t.Errorf("VideoFile(jabc) = %q, %v", p, err)
	}
	for _, id := range []string{"jnone", "../jabc", "", "j/abc"} {
		if _, err := b.VideoFile(id); !errors.Is(err, server.ErrJobNotFound) {
			t.Errorf("VideoFile(%q): %v, want ErrJobNotFound", id, err)
		}
	}
}

// TestVideoSpiece: a served video job on a text prompt, tokenized by the
// umT5 file's spiece_model tensor (U8, ComfyUI's layout), runs and echoes
// the prompt; one naming a umT5 file without one is refused when asked
// (400, stage load, naming the tensor), before a job is queued.
func TestVideoSpiece(t *testing.T) {
	if _, err := video.FindFFmpeg(""); err != nil {
		t.Skip(err)
	}
	sdtest.SkipGeneric(t, "a served video job on a text prompt")
	spm, err := os.ReadFile(shared.Path(t, "vocab/ugm/ugm-t5like.model"))
	if err != nil {
		t.Fatal(err)
	}
	plain := sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32)
	withSP := sdtest.WithSpiece(t, plain, spm)
	files := []string{sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), plain, withSP, sdtest.Wan(t, "vae", 2001, tensor.F32)}
	url, _ := serve(t, Config{Models: files, JobsDir: t.TempDir()})
	// The test model's pieces for these words are inside the tiny umT5's
	// vocabulary of 256.
	const prompt = "this is the work of any license, or that of you"
	for _, tc := range []struct {
		name, t5, state, want string
	}{
		{"spiece_model", filepath.Base(withSP), api.StateDone, ""},
		// Refused when asked, in stage load, before a job is queued.
		{"none", filepath.Base(plain), "", `tensor "spiece_model": missing: the umT5 file has no SentencePiece model to tokenize the prompts with: give them as token ids (a job's prompt_ids`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := postBody(t, url+"/v1/jobs", fmt.Sprintf(`{"kind":"video","model":%q,"text_encoder":%q,"vae":%q,"prompt":%q,`+
				`"negative_prompt":"not that","heads":4,"frames":5,"width":32,"height":32,"steps":1,"seed":3}`,
				filepath.Base(files[0]), tc.t5, filepath.Base(files[3]), prompt))
			if tc.state == "" {
				var e struct{ Error server.Error }
				json.Unmarshal(b, &e)
				if st != http.StatusBadRequest || !strings.Contains(e.Error.Message, tc.want) || e.Error.Stage != "load" {
					t.Errorf("POST /v1/jobs: %d %s, want 400 in stage load with %q", st, b, tc.want)
				}
				return
			}
			if st != http.StatusAccepted {
				t.Fatalf("POST /v1/jobs: %d %s", st, b)
			}
			var job api.Job
			json.Unmarshal(b, &job)
			var result server.VideoResult
			var failure *api.Error
			jobEvents(t, url, job.ID, func(ev api.Event) {
				switch ev.Type {
				case api.TypeResult:
					json.Unmarshal(ev.Result, &result)
				case api.TypeError:
					failure = ev.Error
				}
			})
			_, b = get(t, url+"/v1/jobs/"+job.ID)
			var got api.Job
			json.Unmarshal(b, &got)
			switch {
			case got.State != tc.state:
				t.Errorf("job %s: state %s (error %+v), want %s", job.ID, got.State, failure, tc.state)
			case tc.want == "" && (result.Settings.Prompt != prompt || result.Settings.TextEncoder != tc.t5 || result.Frames != 5):
				t.Errorf("result %+v", result)
			case tc.want != "" && (failure == nil || failure.Stage != "load" || !strings.Contains(failure.Message, tc.want)):
				t.Errorf("error %+v, want %q", failure, tc.want)
			}
		})
	}
}

// TestVideoRoundFrames: a served job of 6 frames with round_frames makes
// 5, its result warning frames_rounded with both counts; the journaled
// engine request has the 5.
func TestVideoRoundFrames(t *testing.T) {
	if _, err := video.FindFFmpeg(""); err != nil {
		t.Skip(err)
	}
	url, dit, t5, vae := wanFiles(t, t.TempDir())
	for _, tc := range []struct {
		more   string
		status int
		frames int
		want   string
	}{
		{`,"frames":6,"round_frames":true,"steps":1`, http.StatusAccepted, 5, "6 video frames are not 4n + 1 (nearest: 5 or 9): rounded to 5"},
		{`,"frames":6,"round_frames":false`, 400, 0, `nearest: 5 or 9)","hint":"round_frames (glassbox video --round-frames) rounds`},
	} {
		st, b := postBody(t, url+"/v1/jobs", tinyVideo(dit, t5, vae, tc.more))
		if st != tc.status || tc.status != http.StatusAccepted {
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("%s: %d %s, want %d with %q", tc.more, st, b, tc.status, tc.want)
			}
			continue
		}
		var job api.Job
		json.Unmarshal(b, &job)
		var result server.VideoResult
		jobEvents(t, url, job.ID, func(ev api.Event) {
			if ev.Type == api.TypeResult {
				json.Unmarshal(ev.Result, &result)
			}
		})
		_, b = get(t, url+"/v1/jobs/"+job.ID)
		var got api.Job
		json.Unmarshal(b, &got)
		var params struct {
			server.VideoRequest
			Engine video.Request `json:"engine"`
		}
		json.Unmarshal(got.Params, &params)
		if result.Frames != tc.frames || result.Settings.Frames != tc.frames || !slices.Contains(result.Warnings, tc.want) ||
			params.Engine.Frames != tc.frames || params.Frames != 6 || !params.RoundFrames {
			t.Errorf("%s: result %+v, params %s", tc.more, result, got.Params)
		}
	}
}
