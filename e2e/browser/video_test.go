package browser

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestVideoPage makes videos on the Video page from the tiny Wan files
// (a DiT of 4 heads, umT5 without its SentencePiece model, the real VAE's
// shapes; 5 frames of 32×32, 2 steps): the three models are offered from
// the served list by their families; a text prompt, which this umT5 cannot
// tokenize, fails in stage load (the tokenizer) and the page says so; the prompt as
// token ids runs through every stage, its steps and decoded frames shown,
// and ends in a <video> player whose MP4 the server serves.
func TestVideoPage(t *testing.T) {
	if puregoBuild {
		t.Skip("the browser tests check the page, not the kernels: run once, without -tags purego")
	}
	sdtest.SkipGeneric(t, "a served video job (the VAE decodes the frames)")
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("a video job needs ffmpeg:", err)
	}
	dit, t5, vae := sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		sdtest.Wan(t, "vae", 2001, tensor.F32)
	exe := chromium(t)
	s := &server{home: t.TempDir(), args: []string{"--model", dit, "--model", t5, "--model", vae}}
	s.start(t)
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			s.mu.Lock()
			t.Logf("server log:\n%s", s.log.String())
			s.mu.Unlock()
		}
	})
	b := newBrowser(t, exe)

	b.navigate(s.url + "/#/video")
	b.waitFor("the three models", fmt.Sprintf(`document.querySelector('#vid-model option[value=%q]') && document.querySelector('#vid-text_encoder option[value=%q]') && document.querySelector('#vid-vae option[value=%q]')`,
		filepath.Base(dit), filepath.Base(t5), filepath.Base(vae)), patience)
	b.waitFor("the earlier videos loaded", `!document.querySelector('#vid-past .loading')`, patience)
	b.labelled()
	b.contrast()
	b.set("#vid-frames", "5")
	b.set("#vid-width", "32")
	b.set("#vid-height", "32")
	b.set("#vid-steps", "2")
	b.set("#vid-seed", "42")
	b.set("#vid-heads", "4")

	// A text prompt: this umT5 file has no SentencePiece model, which the
	// server says when asked (400, stage load); no job is made.
	b.set("#vid-prompt", "a red fox in the snow")
	b.click("#vid-go")
	b.waitFor("the refusal", `document.querySelector('#vid-status')?.dataset.state === 'refused'`, 3*patience)
	if st := eval[string](b, `document.querySelector('#vid-status').textContent`); !strings.HasPrefix(st, "load: ") || !strings.Contains(st, "spiece_model") {
		t.Errorf("status %q, want the refusal in stage load, naming spiece_model", st)
	}
	if eval[bool](b, `!!JSON.parse(sessionStorage.getItem('glassbox.video') || '{}')?.job`) {
		t.Error("the page follows a job after a refused request")
	}
	b.shot("video-refused")

	// The prompt as token ids.
	b.set("#vid-prompt", "")
	b.set("#vid-prompt_ids", "17 201 33 1")
	b.set("#vid-negative_prompt_ids", "9 9 1")
	// Six frames, rounded to five by the server; the Philox noise.
	b.set("#vid-frames", "6")
	eval[bool](b, `document.querySelector('#vid-more').open = true`)
	b.click("#vid-round_frames")
	b.set("#vid-rng", "cuda")
	b.click("#vid-go")
	b.waitFor("the job to start", `document.querySelector('#vid-status')?.dataset.state !== 'failed'`, patience)
	b.waitFor("the job to end", `['done', 'failed', 'cancelled'].includes(document.querySelector('#vid-status')?.dataset.state)`, 3*patience)
	if st := eval[string](b, `document.querySelector('#vid-status').dataset.state`); st != "done" {
		t.Fatalf("status %q: %s", st, eval[string](b, `document.querySelector('#vid-status').textContent`))
	}
	b.waitFor("the player", `document.querySelector('#vid-video')?.getAttribute('src')`, patience)
	for _, stage := range []string{"plan", "load", "encode", "generate", "decode", "deliver"} {
		if got := eval[string](b, fmt.Sprintf(`document.querySelector('.stage[data-stage=%q]')?.dataset.status || ''`, stage)); got != "done" {
			t.Errorf("stage %s: %q, want done", stage, got)
		}
	}
	if n := eval[string](b, `document.querySelector('#vid-step').dataset.steps`); n != "2" {
		t.Errorf("the page showed %s sampling steps, want 2", n)
	}
	if v, max := eval[float64](b, `document.querySelector('#vid-steps-bar').value`), eval[float64](b, `document.querySelector('#vid-steps-bar').max`); v != 2 || max != 2 {
		t.Errorf("steps bar %g of %g, want 2 of 2", v, max)
	}
	// The frames came as they were decoded: the last one shown was the 5th.
	if f := eval[string](b, `document.querySelector('#vid-preview').dataset.frame || ''`); f != "5" {
		t.Errorf("the last frame preview shown is %q, want 5", f)
	}
	var job struct {
		Params map[string]any `json:"params"`
		Result struct {
			Frames   int      `json:"frames"`
			Warnings []string `json:"warnings"`
		} `json:"result"`
	}
	jobID := eval[string](b, `document.querySelector('#vid-player').dataset.job`)
	if resp, err := http.Get(s.url + "/v1/jobs/" + jobID); err != nil {
		t.Fatal(err)
	} else {
		err := json.NewDecoder(resp.Body).Decode(&job)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if job.Params["rng"] != "cuda" || job.Params["round_frames"] != true || job.Result.Frames != 5 {
		t.Errorf("the page sent rng %v, round_frames %v; the job made %d frames: want cuda, true, 5", job.Params["rng"], job.Params["round_frames"], job.Result.Frames)
	}
	src := eval[string](b, `document.querySelector('#vid-video').src`)
	resp, err := http.Get(src)
	if err != nil {
		t.Fatal(err)
	}
	mp4, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" || len(mp4) < 8 || string(mp4[4:8]) != "ftyp" {
		t.Errorf("GET %s: %d %s, %d bytes", src, resp.StatusCode, resp.Header.Get("Content-Type"), len(mp4))
	}
	// The browser plays it, unless it has no H.264 decoder (a Chromium
	// built without proprietary codecs).
	b.waitFor("the video's metadata", `(() => { const v = document.querySelector('#vid-video'); return v.readyState >= 1 || v.error; })()`, patience)
	if code := eval[int](b, `document.querySelector('#vid-video').error?.code || 0`); code != 0 {
		t.Logf("this Chromium cannot play the MP4 (MediaError %d): the player is not checked further", code)
	} else if w, h := eval[int](b, `document.querySelector('#vid-video').videoWidth`), eval[int](b, `document.querySelector('#vid-video').videoHeight`); w != 32 || h != 32 {
		t.Errorf("the player's video is %d×%d, want 32×32", w, h)
	}
	b.waitFor("the earlier videos", `document.querySelector('#vid-past li[data-job]')`, patience)
	if got := eval[string](b, `document.querySelector('#vid-past li[data-job] span').textContent`); !strings.Contains(got, "token ids 17 201 33 1") {
		t.Errorf("earlier videos: %q", got)
	}
	b.labelled()
	b.contrast()
	b.shot("video-done")
	b.set("#vid-prompt_ids", "")
	b.set("#vid-steps", "")
	b.click(`#vid-past li[data-job] button.use`)
	if ids, st := eval[string](b, `document.querySelector('#vid-prompt_ids').value`), eval[string](b, `document.querySelector('#vid-steps').value`); ids != "17 201 33 1" || st != "2" {
		t.Errorf("use these settings: prompt ids %q steps %q", ids, st)
	}

	// A reload shows the same job's player again (its id is kept for the tab).
	id := eval[string](b, `document.querySelector('#vid-player').dataset.job`)
	b.do(patience, chromedp.Reload())
	b.waitFor("the same job's player after a reload", fmt.Sprintf(`document.querySelector('#vid-player')?.dataset.job === %q && document.querySelector('#vid-video')`, id), patience)
	// The job's own page plays it too.
	b.navigate(s.url + "/#/jobs/" + id)
	b.waitFor("the job page's player", fmt.Sprintf(`document.querySelector('#job-video')?.getAttribute('src') === '/v1/jobs/%s/video'`, id), patience)
	// At a phone's width the page folds to one column.
	b.do(patience, chromedp.EmulateViewport(390, 844))
	b.navigate(s.url + "/#/video")
	b.do(patience, chromedp.Reload())
	b.waitFor("the Video view at a phone's width", `document.querySelector('#vid-video')`, patience)
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 391 {
		t.Errorf("#/video is %d px wide at a 390 px viewport", w)
	}
	b.shot("video-phone")
	b.checkJS()
}
