// Package browser drives glassbox's web UI in a real headless Chromium
// (Debian's chromium package) through the DevTools protocol (chromedp),
// against the real glassbox serve binary built by the test.
//
// Without Chromium the tests skip, unless CI=true: then they fail.
// GLASSBOX_CHROMIUM names the browser binary, GLASSBOX_BIN a prebuilt
// glassbox, and GLASSBOX_ARTIFACTS the folder for screenshots (default: a
// temporary one, logged).
package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/journal"
)

// hang bounds every wait for what the page or the server shows: a guard
// against a hang that fails the test, not a measurement. Waits poll for
// the condition and end as soon as it holds, so a generous bound costs a
// passing run nothing, and a loaded machine (two test runs at once on two
// cores) is many times slower than an idle one.
const hang = 2 * time.Minute

// chromium finds the browser or ends the test: a skip, or under CI a failure.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("GLASSBOX_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (install it with: apt-get install -y chromium, or set GLASSBOX_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI=true: the browser tests must run")
	}
	t.Skip(msg)
	return ""
}

// artifacts is the folder screenshots go to.
func artifacts(t testing.TB) string {
	dir := os.Getenv("GLASSBOX_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "glassbox-browser-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/glassbox once per run.
func binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("GLASSBOX_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "glassbox-browser-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "glassbox")
		cmd := exec.Command("go", "build", "-o", binPath, "../../cmd/glassbox")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is one running glassbox serve with its own home.
type server struct {
	url, home string
	args      []string // more flags for serve
	cmd       *exec.Cmd
	mu        sync.Mutex
	log       strings.Builder
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// run runs the glassbox binary to its end with GLASSBOX_HOME=home.
func run(t testing.TB, home string, args ...string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "GLASSBOX_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("glassbox %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// startServer imports stories260K and a synthetic model slow enough to
// reload and cancel in the middle of ("slow": random weights, 8 layers of
// width 1024, Q4_0, stories260K's vocabulary; ~60 tokens/s on two cores),
// then starts glassbox serve on a loopback port.
func startServer(t testing.TB) *server {
	t.Helper()
	home := t.TempDir()
	run(t, home, "import", shared.Path(t, "models/stories260K.gguf"))
	slow := filepath.Join(t.TempDir(), "slow.gguf")
	run(t, home, "synth", "-q", "-o", slow, "--preset", "tiny", "--type", "Q4_0", "--dim", "1024", "--ffn", "2816",
		"--layers", "8", "--heads", "16", "--kv-heads", "16", "--ctx", "1024", "--vocab", shared.Path(t, "models/stories260K.gguf"))
	run(t, home, "import", slow, "slow")
	// A reasoning model: stories260K under a template that opens <think>.
	run(t, home, "import", shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1"), "r1")
	// A model whose template takes tools: Qwen 2.5's real one over tiny-qwen2.
	tmpl, err := os.ReadFile("../../chat/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	run(t, home, "import", shared.WithChatTemplate(t, "models/tiny-qwen2-F32.gguf", string(tmpl), "toolq"), "toolq")

	s := &server{home: home}
	s.start(t)
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			s.mu.Lock()
			t.Logf("server log:\n%s", s.log.String())
			s.mu.Unlock()
		}
	})
	return s
}

// start starts glassbox serve on a free loopback port and waits until it listens.
func (s *server) start(t testing.TB) {
	t.Helper()
	s.cmd = exec.Command(binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}, s.args...)...)
	s.cmd.Env = append(os.Environ(), "GLASSBOX_HOME="+s.home)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.url = <-found:
	case <-time.After(hang):
		t.Fatalf("glassbox serve did not start listening in %s", hang)
	}
}

// stop interrupts the server as Ctrl+C does (running jobs get the
// shutdown grace to finish) and waits for it to exit.
func (s *server) stop(t testing.TB) {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("glassbox serve exited with %v after an interrupt", err)
		}
	case <-time.After(hang):
		s.cmd.Process.Kill()
		<-done
		t.Errorf("glassbox serve did not stop %s after an interrupt", hang)
	}
	s.cmd = nil
}

// job reads a job as the server reports it.
func (s *server) job(t testing.TB, id string) api.Job {
	t.Helper()
	resp, err := http.Get(s.url + "/v1/jobs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var j api.Job
	if resp.StatusCode != 200 || json.Unmarshal(b, &j) != nil {
		t.Fatalf("GET /v1/jobs/%s: %d %s", id, resp.StatusCode, b)
	}
	return j
}

// cancel cancels a job over HTTP (as the page's Stop button does).
func (s *server) cancel(t testing.TB, id string) {
	t.Helper()
	resp, err := http.Post(s.url+"/v1/jobs/"+id+"/cancel", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/jobs/%s/cancel: %d %s", id, resp.StatusCode, b)
	}
}

// cancelAll cancels every job the server has that has not ended and
// waits until none is left running or waiting.
func (s *server) cancelAll(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for {
		resp, err := http.Get(s.url + "/v1/jobs?limit=1000")
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Jobs []api.Job }
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET /v1/jobs: %v", err)
		}
		live := 0
		for _, j := range list.Jobs {
			if !api.Terminal(j.State) {
				live++
				s.cancel(t, j.ID)
			}
		}
		if live == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still not ended %s after they were cancelled", live, hang)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submit starts a native job over HTTP and returns its id.
func (s *server) submit(t testing.TB, body string) string {
	t.Helper()
	resp, err := http.Post(s.url+"/v1/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var j api.Job
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &j) != nil || j.ID == "" {
		t.Fatalf("POST /v1/jobs: %d %s", resp.StatusCode, b)
	}
	return j.ID
}

// journaled reads a finished job from the server's journal on disk
// (read-only, as glassbox jobs does), waiting for the writer to catch up.
func (s *server) journaled(t testing.TB, id string) (api.Job, []api.Event) {
	t.Helper()
	jr, err := journal.Open(filepath.Join(s.home, journal.FileName), journal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	deadline := time.Now().Add(hang)
	for {
		j, err := jr.Job(id)
		if err == nil && api.Terminal(j.State) {
			evs, err := jr.Events(id, 1)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(evs)) == j.LastSeq {
				return j, evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is not finished in the journal after 10 s (%v, state %q)", id, err, j.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// resultText is a text job's output.
func resultText(t testing.TB, j api.Job) (string, int) {
	t.Helper()
	var r struct {
		Text   string `json:"text"`
		Tokens int    `json:"tokens"`
	}
	if err := json.Unmarshal(j.Result, &r); err != nil {
		t.Fatalf("job %s result %s: %v", j.ID, j.Result, err)
	}
	return r.Text, r.Tokens
}

// browser is one headless Chromium with a fresh profile. JavaScript
// exceptions and console errors in the page fail the test.
type browser struct {
	t   testing.TB
	ctx context.Context
	dir string // screenshots
	mu  sync.Mutex
	js  []string
}

func newBrowser(t testing.TB, exe string) *browser {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	b := &browser{t: t, dir: artifacts(t)}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	b.ctx = ctx
	t.Cleanup(func() {
		cancelB()
		cancelA()
	})
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return b
}

// listen records the page's uncaught exceptions and console errors.
func (b *browser) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "exception: " + d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		msg = "console.error:"
		for _, a := range ev.Args {
			msg += " " + a.Description + string(a.Value)
		}
	default:
		return
	}
	b.mu.Lock()
	b.js = append(b.js, msg)
	b.mu.Unlock()
}

// do runs actions with a deadline.
func (b *browser) do(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, hang)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("browser: evaluating %.80q: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds.
func (b *browser) waitFor(what, cond string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for !eval[bool](b, "!!("+cond+")") {
		if time.Now().After(deadline) {
			b.shot("timeout-" + strings.NewReplacer("/", "-", " ", "_").Replace(b.t.Name()))
			b.t.Fatalf("waited %s for %s (%s)", timeout, what, cond)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// set changes a form field as a user would (value, then input and change events).
func (b *browser) set(sel, value string) {
	b.t.Helper()
	ok := eval[bool](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false;
		e.value = %q; e.dispatchEvent(new Event('input', {bubbles: true}));
		e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, sel, value))
	if !ok {
		b.t.Fatalf("no element %s", sel)
	}
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(patience, chromedp.Click(chromedp.CSS(sel)))
}

func (b *browser) navigate(url string) {
	b.t.Helper()
	b.do(patience, chromedp.Navigate(url))
}

// shot saves a screenshot of the whole page as NAME.png.
func (b *browser) shot(name string) {
	ctx, cancel := context.WithTimeout(b.ctx, hang)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), buf, 0o644); err != nil {
		b.t.Error(err)
	}
}

// checkJS fails the test if the page threw or logged an error.
func (b *browser) checkJS() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.js {
		b.t.Errorf("page: %s", e)
	}
	b.js = nil
}

// labelled fails the test for every form control or button on the page
// that has no accessible name (a label, aria-label or text).
func (b *browser) labelled() {
	b.t.Helper()
	missing := eval[[]string](b, `[...document.querySelectorAll('input, select, textarea, button')]
		.filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.textContent || '').trim())
		.map((e) => e.id || e.outerHTML.slice(0, 80))`)
	for _, m := range missing {
		b.t.Errorf("control without an accessible name: %s", m)
	}
}

// contrastJS lists visible text whose contrast with its background is below
// WCAG 2's 4.5:1 for normal text (3:1 for large text: 24 px, or 18.66 px
// bold). Disabled controls are exempt, as in WCAG.
const contrastJS = `(() => {
	const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
	const lum = ([r, g, b]) => {
		const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
		return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
	};
	const background = (e) => {
		for (; e; e = e.parentElement) {
			const c = rgb(getComputedStyle(e).backgroundColor);
			if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
		}
		return [255, 255, 255];
	};
	const bad = [];
	const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
	for (let n = walker.nextNode(); n; n = walker.nextNode()) {
		const e = n.parentElement;
		if (!n.data.trim() || !e || e.closest('[hidden], :disabled, noscript, .skip')) continue;
		const r = e.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) continue;
		const st = getComputedStyle(e);
		const [l1, l2] = [lum(rgb(st.color).slice(0, 3)), lum(background(e))];
		const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
		const size = parseFloat(st.fontSize);
		const large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
		if (ratio < (large ? 3 : 4.5)) bad.push(ratio.toFixed(2) + ':1 ' + JSON.stringify(n.data.trim().slice(0, 40)) + ' in ' + e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''));
	}
	return [...new Set(bad)];
})()`

// contrast fails the test for text the page draws with too little contrast.
func (b *browser) contrast() {
	b.t.Helper()
	for _, m := range eval[[]string](b, contrastJS) {
		b.t.Errorf("low contrast: %s", m)
	}
}
