package browser

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestImagePageLost makes images on the Image page through a proxy that
// cuts the network, and across two server restarts: each time the page
// shows the same job and exactly what the journal holds.
//
// The first server gets a long shutdown grace (graceLong): Ctrl+C ends
// the page's event stream at once, and the running image job goes on to
// its end within the grace, so the page shows it done, with its image,
// from the next server. The second server gets a grace of a millisecond:
// the job is cancelled within the step it is in (the journal's error
// names its stage, generate, and the grace), and the page shows it
// stopped there, with no image. Each outcome is checked in full whichever one the
// machine produced (a job slower than graceLong is cancelled too).
func TestImagePageLost(t *testing.T) {
	if puregoBuild {
		t.Skip("the browser tests check the page, not the kernels: run once, without -tags purego")
	}
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	exe := chromium(t)
	const graceLong, graceShort = "90s", "1ms"
	s := &server{home: t.TempDir(), args: []string{"--model", ckpt, "--shutdown-grace", graceLong}}
	s.start(t)
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			s.mu.Lock()
			t.Logf("server log:\n%s", s.log.String())
			s.mu.Unlock()
		}
	})
	px := newProxy(t, s.url)
	b := newBrowser(t, exe)
	name := filepath.Base(ckpt)
	b.navigate(px.url + "/#/image")
	b.waitFor("the image model", fmt.Sprintf(`document.querySelector('#img-model option[value=%q]')`, name), patience)

	// generate starts a 64×64 image of steps steps (no negative pass) and
	// waits until the page shows a step's preview of it, the job still
	// running: the middle of the generation.
	generate := func(t *testing.T, seed, steps int) string {
		t.Helper()
		b.set("#img-prompt", "a lighthouse at dusk")
		b.set("#img-width", "64")
		b.set("#img-height", "64")
		b.set("#img-steps", strconv.Itoa(steps))
		b.set("#img-cfg_scale", "1")
		b.set("#img-seed", strconv.Itoa(seed))
		before := eval[string](b, `JSON.parse(sessionStorage.getItem('glassbox.image') || '{}').job || ''`)
		b.click("#img-go")
		b.waitFor("the job to start", fmt.Sprintf(`(() => { const j = JSON.parse(sessionStorage.getItem('glassbox.image') || '{}').job;
			return j && j !== %q; })()`, before), patience)
		id := eval[string](b, `JSON.parse(sessionStorage.getItem('glassbox.image')).job`)
		b.waitFor("a step's preview", `Number(document.querySelector('#img-preview')?.dataset.step) >= 1 && !document.querySelector('#img-preview').hidden`, 3*patience)
		if st := s.job(t, id).State; st != api.StateRunning {
			t.Fatalf("job %s is %s when the page shows its first preview; want it running (make the job longer)", id, st)
		}
		return id
	}
	pageSeq := func() int64 {
		return int64(eval[float64](b, `Number(document.querySelector('.pipeline-view')?.dataset.seq ?? 0)`))
	}
	// ended waits for the page to show the job ended and checks it against
	// the journal: the same job, every event applied, and either its image
	// (done: the pixels the page shows are the PNG the server serves for
	// the result) or where and why it stopped (cancelled).
	ended := func(t *testing.T, id string) api.Job {
		t.Helper()
		b.waitFor("the job ended", `['done', 'cancelled', 'failed'].includes(document.querySelector('#img-status')?.dataset.state) &&
			['done', 'cancelled', 'failed'].includes(document.querySelector('.pipeline-view')?.dataset.state)`, 3*patience)
		if got := eval[string](b, `JSON.parse(sessionStorage.getItem('glassbox.image')).job`); got != id {
			t.Errorf("the page follows job %s, want %s", got, id)
		}
		j, _ := s.journaled(t, id)
		if j.Error != nil {
			t.Logf("job %s %s after %d events: %s", id, j.State, j.LastSeq, j.Error.Message)
		} else {
			t.Logf("job %s %s after %d events", id, j.State, j.LastSeq)
		}
		if got := eval[string](b, `document.querySelector('#img-status').dataset.state`); got != j.State {
			t.Errorf("page shows the job %s, the journal %s", got, j.State)
		}
		b.waitFor("every journaled event applied", fmt.Sprintf(`Number(document.querySelector('.pipeline-view').dataset.seq) === %d`, j.LastSeq), patience)
		switch j.State {
		case api.StateDone:
			var res struct {
				Images []struct {
					Seed int64
					URL  string
				}
			}
			if err := json.Unmarshal(j.Result, &res); err != nil || len(res.Images) != 1 {
				t.Fatalf("job %s result %s: %v", id, j.Result, err)
			}
			im := res.Images[0]
			b.waitFor("the finished image", fmt.Sprintf(`document.querySelector('#img-outputs figure[data-seed="%d"] img')?.complete && document.querySelector('#img-outputs img').naturalWidth === 64`, im.Seed), patience)
			if src := eval[string](b, `document.querySelector('#img-outputs img').getAttribute('src')`); src != im.URL {
				t.Errorf("page shows image %s, the job's result is %s", src, im.URL)
			}
			if eval[bool](b, `!document.querySelector('#img-preview').hidden`) {
				t.Error("the preview is still shown over the finished image")
			}
			got := pagePixels(t, b, `#img-outputs img`)
			want := servedPixels(t, s.url+im.URL)
			if !bytes.Equal(got.Pix, want.Pix) || got.Rect != want.Rect {
				t.Errorf("the image the page shows (%v) differs from the PNG the server serves for %s (%v)", got.Rect, im.URL, want.Rect)
			}
		case api.StateCancelled, api.StateFailed:
			if j.Error == nil {
				t.Fatalf("journal: job %s %s without an error", id, j.State)
			}
			box := eval[string](b, `document.querySelector('.pipeline-view .error-box:not([hidden])')?.textContent ?? ''`)
			kind := map[string]string{api.StateCancelled: "cancelled", api.StateFailed: "failed"}[j.State]
			for _, want := range []string{kind + " in " + j.Error.Stage, j.Error.Cause} {
				if !strings.Contains(box, want) {
					t.Errorf("error box %q does not say %q", box, want)
				}
			}
			status := map[string]string{api.StateCancelled: "stopped", api.StateFailed: "failed"}[j.State]
			if got := eval[string](b, fmt.Sprintf(`document.querySelector('.stage[data-stage=%q]')?.dataset.status ?? ''`, j.Error.Stage)); got != status {
				t.Errorf("stage %s is %q on the page, want %s", j.Error.Stage, got, status)
			}
			if n := eval[int](b, `document.querySelectorAll('#img-outputs img').length`); n != 0 {
				t.Errorf("%d images shown for a job that made none", n)
			}
			if eval[bool](b, `!document.querySelector('#img-preview').hidden`) {
				note := eval[string](b, `document.querySelector('#img-preview-note').textContent`)
				if !strings.Contains(note, "the job "+j.State+", with no image") {
					t.Errorf("the preview of a job that ended %s is shown as %q", j.State, note)
				}
			}
		}
		return j
	}

	t.Run("network lost mid-generation", func(t *testing.T) {
		b.t = t
		id := generate(t, 11, 12)
		resumes := len(px.resumed())
		px.cut()
		b.waitFor("the page to notice", `document.querySelector('#conn')?.dataset.status === 'reconnecting'`, patience)
		b.shot("image-reconnecting")
		seq := pageSeq()
		px.restore()
		b.waitFor("the stream live again", `document.querySelector('#conn')?.dataset.status !== 'reconnecting'`, patience)
		j := ended(t, id)
		if j.State != api.StateDone {
			t.Errorf("journal state %s, want done (nothing stopped the job)", j.State)
		}
		if seq >= j.LastSeq {
			t.Errorf("the page had all %d events before the cut: the cut was not mid-generation (make the job longer)", j.LastSeq)
		}
		// The page resumes after the last event it applied: at least the
		// one it showed when it noticed the cut (a redraw may be pending).
		r := px.resumed()[resumes:]
		if len(r) == 0 {
			t.Fatal("the page never resumed its event stream after a sequence number (Last-Event-ID or ?after=)")
		}
		if n, err := strconv.ParseInt(r[0], 10, 64); err != nil || n < seq || n >= j.LastSeq {
			t.Errorf("the page resumed after event %q; it had shown event %d, the job has %d", r[0], seq, j.LastSeq)
		}
		b.checkJS()
	})

	// restart stops the server mid-generation (Ctrl+C) and starts it
	// again with the given grace for the next stop.
	restart := func(t *testing.T, id, nextGrace string) {
		t.Helper()
		s.stop(t)
		// The server ended the page's stream before it stopped.
		if st := eval[string](b, `document.querySelector('#img-status').dataset.state`); !api.Terminal(st) {
			b.waitFor("the page to notice", `document.querySelector('#conn')?.dataset.status === 'reconnecting'`, patience)
		} else {
			t.Logf("page shows job %s %s when the server has stopped", id, st)
		}
		s.args[len(s.args)-1] = nextGrace
		s.start(t)
		px.retarget(t, s.url)
	}

	t.Run("server restart, the job done within the grace", func(t *testing.T) {
		b.t = t
		id := generate(t, 12, 12)
		restart(t, id, graceShort)
		j := ended(t, id)
		if j.State != api.StateDone {
			// A machine that needs more than graceLong for the job.
			t.Logf("job %s ended %s: it did not finish within the %s grace", id, j.State, graceLong)
			checkGraceCancel(t, s, id, j, graceLong)
		}
		b.shot("image-restart-done")
		b.checkJS()
	})

	t.Run("server restart, the grace over", func(t *testing.T) {
		b.t = t
		id := generate(t, 13, 12)
		restart(t, id, graceLong)
		j := ended(t, id)
		if j.State == api.StateDone {
			// The job's last step ended between the page's preview and the stop.
			t.Logf("job %s finished before the %s grace ran out", id, graceShort)
		} else {
			checkGraceCancel(t, s, id, j, graceShort)
		}
		b.shot("image-restart-cancelled")
		b.checkJS()
	})
}

// checkGraceCancel checks a job the shutdown cancelled: cancelled (not
// failed) in the stage it was running, the journal's last started stage
// that never ended, and for the reason that the grace ran out.
func checkGraceCancel(t *testing.T, s *server, id string, j api.Job, grace string) {
	t.Helper()
	if j.State != api.StateCancelled || j.Error == nil {
		t.Fatalf("job %s ended %s (%+v), want cancelled by the shutdown", id, j.State, j.Error)
	}
	_, evs := s.journaled(t, id)
	running := ""
	for _, ev := range evs {
		switch ev.Type {
		case api.TypeStageStart:
			running = ev.Stage
		case api.TypeStageDone, api.TypeStageSkipped:
			if ev.Stage == running {
				running = ""
			}
		}
	}
	if j.Error.Stage != running {
		t.Errorf("job %s cancelled in %q, the stage it was running is %q", id, j.Error.Stage, running)
	}
	if want := "server shutting down: the " + grace + " grace for running jobs ended"; !strings.Contains(j.Error.Cause, want) {
		t.Errorf("job %s cancelled with %q, want it to say %q", id, j.Error.Cause, want)
	}
}

// pagePixels is the picture an <img> on the page shows, read back through
// a canvas (RGBA, as drawn: an opaque PNG's pixels exactly).
func pagePixels(t *testing.T, b *browser, sel string) *image.NRGBA {
	t.Helper()
	v := eval[[]any](b, fmt.Sprintf(`(() => {
		const img = document.querySelector(%q);
		const c = document.createElement('canvas');
		c.width = img.naturalWidth; c.height = img.naturalHeight;
		const g = c.getContext('2d');
		g.drawImage(img, 0, 0);
		const d = g.getImageData(0, 0, c.width, c.height).data;
		let s = '';
		for (let i = 0; i < d.length; i += 0x8000) s += String.fromCharCode(...d.subarray(i, i + 0x8000));
		return [c.width, c.height, btoa(s)];
	})()`, sel))
	w, h := int(v[0].(float64)), int(v[1].(float64))
	pix, err := base64.StdEncoding.DecodeString(v[2].(string))
	if err != nil || len(pix) != 4*w*h {
		t.Fatalf("page pixels of %s: %d bytes for %d×%d (%v)", sel, len(pix), w, h, err)
	}
	return &image.NRGBA{Pix: pix, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
}

// servedPixels is the PNG at url, as RGBA pixels.
func servedPixels(t *testing.T, url string) *image.NRGBA {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	im, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	out := image.NewNRGBA(im.Bounds().Sub(im.Bounds().Min))
	draw.Draw(out, out.Rect, im, im.Bounds().Min, draw.Src)
	return out
}
