package browser

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestImagePage makes an image on the Image page from the random-weight
// SD 1.5 checkpoint (64×64, 4 steps, no negative pass): the page shows
// the job's pipeline and a step preview, a reload in the middle shows the
// same job again, and the finished image appears in the result and in the
// gallery, whose "use these settings" fills the form with the job's.
func TestImagePage(t *testing.T) {
	if puregoBuild {
		t.Skip("the browser tests check the page, not the kernels: run once, without -tags purego")
	}
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	exe := chromium(t)
	s := &server{home: t.TempDir(), args: []string{"--model", ckpt}}
	s.start(t)
	t.Cleanup(func() { s.stop(t) })
	b := newBrowser(t, exe)
	name := filepath.Base(ckpt)

	b.navigate(s.url + "/#/image")
	b.waitFor("the image model", fmt.Sprintf(`document.querySelector('#img-model option[value=%q]')`, name), patience)
	b.labelled()
	b.set("#img-prompt", "a lighthouse at dusk")
	b.set("#img-width", "64")
	b.set("#img-height", "64")
	b.set("#img-steps", "4")
	b.set("#img-cfg_scale", "1")
	b.set("#img-seed", "5")
	b.click("#img-go")
	b.waitFor("the job to start", `JSON.parse(sessionStorage.getItem('glassbox.image') || '{}').job`, patience)
	id := eval[string](b, `JSON.parse(sessionStorage.getItem('glassbox.image')).job`)
	b.waitFor("the load stage", `document.querySelector('.stage[data-stage="load"]')`, patience)
	if st := s.job(t, id).State; !api.Terminal(st) {
		// Reload while the job runs: the page follows the same job.
		b.do(patience, chromedp.Reload())
		b.waitFor("the same job after the reload", fmt.Sprintf(`JSON.parse(sessionStorage.getItem('glassbox.image')).job === %q && document.querySelector('.pipeline-view')?.dataset.seq > 0`, id), patience)
	}
	b.waitFor("the finished image", `document.querySelector('#img-outputs figure[data-seed="5"] img')?.complete && document.querySelector('#img-outputs img').naturalWidth === 64`, 3*patience)
	if st := eval[string](b, `document.querySelector('#img-status').dataset.state`); st != "done" {
		t.Errorf("status %q", st)
	}
	// Every step's preview is in the journal; the page showed the last one it got.
	seen := eval[bool](b, `!!document.querySelector('#img-preview').getAttribute('src')`)
	if !seen {
		t.Error("no preview was shown")
	}
	b.waitFor("the gallery", fmt.Sprintf(`document.querySelector('#img-gallery [data-job=%q] img')`, id), patience)
	b.shot("image-done")
	b.set("#img-prompt", "something else")
	b.set("#img-steps", "")
	b.click(fmt.Sprintf(`#img-gallery [data-job=%q] button.use`, id))
	if p, st := eval[string](b, `document.querySelector('#img-prompt').value`), eval[string](b, `document.querySelector('#img-steps').value`); p != "a lighthouse at dusk" || st != "4" {
		t.Errorf("use these settings: prompt %q steps %q", p, st)
	}
	b.checkJS()
}
