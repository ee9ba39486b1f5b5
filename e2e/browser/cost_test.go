package browser

import (
	"testing"

	"github.com/chromedp/cdproto/page"
)

// BenchmarkPageCost measures what watching a job costs its generation on
// this machine: the same greedy 200-token job on the "slow" model with no
// client, with the job page following it live, and with that page frozen.
// The server never waits for a client, so only CPU the browser takes from
// the engine can make a difference (on a 2-core machine it does).
//
//	go test ./e2e/browser -run '^$' -bench PageCost -benchtime 3x
func BenchmarkPageCost(bm *testing.B) {
	if puregoBuild {
		bm.Skip("the browser tests check the page, not the kernels")
	}
	exe := chromium(bm)
	s := startServer(bm)
	b := newBrowser(bm, exe)
	const body = `{"model":"slow","prompt":"Once upon a time","raw":true,"options":{"num_predict":200,"temperature":0}}`
	s.journaled(bm, s.submit(bm, body)) // load the model once
	for _, mode := range []string{"no client", "live page", "frozen page"} {
		bm.Run(mode, func(bm *testing.B) {
			b.t = bm
			b.navigate("about:blank")
			var rate float64
			for range bm.N {
				id := s.submit(bm, body)
				if mode != "no client" {
					b.navigate(s.url + "/#/jobs/" + id)
					b.waitFor("the job page", `document.querySelector('#output')`, patience)
				}
				if mode == "frozen page" {
					b.do(patience, lifecycle(page.SetWebLifecycleStateStateFrozen))
				}
				rate += generateRate(s.journaled(bm, id))
				if mode == "frozen page" {
					b.do(patience, lifecycle(page.SetWebLifecycleStateStateActive))
				}
				b.navigate("about:blank")
			}
			bm.ReportMetric(rate/float64(bm.N), "tokens/s")
		})
	}
}
