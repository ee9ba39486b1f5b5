package web

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler(Config{Profiles: []string{"pi5-8g"}, Version: "9.9"})
	tests := []struct {
		method, path string
		status       int
		ctype        string
		contains     string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="/ui/js/app.js"></script>`},
		{"GET", "/ui/index.html", 200, "text/html; charset=utf-8", "<main"},
		{"GET", "/ui/js/app.js", 200, "text/javascript; charset=utf-8", "import"},
		{"GET", "/ui/style.css", 200, "text/css; charset=utf-8", ".pipeline"},
		{"GET", "/ui/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"GET", "/ui/config.json", 200, "application/json", `"profiles":["pi5-8g"],"version":"9.9"`},
		{"HEAD", "/ui/js/api.js", 200, "text/javascript; charset=utf-8", ""},
		{"GET", "/ui/js/missing.js", 404, "application/json", `"stage":"deliver"`},
		{"GET", "/jobs", 404, "application/json", `GET /jobs: no such endpoint or page`},
		{"POST", "/", 405, "text/plain; charset=utf-8", "only answers GET"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q:\n%.300s", tc.contains, rec.Body.String())
			}
		})
	}
}

// TestPageNotFramed: no other site's page may frame the UI
// (clickjacking): its Content-Security-Policy, which replaces the
// server's, keeps frame-ancestors 'none'.
func TestPageNotFramed(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

func TestETagRevalidation(t *testing.T) {
	h := Handler(Config{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/js/stages.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q: want a content hash and no-cache", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/ui/js/stages.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation with the same ETag: status %d, want 304", rec.Code)
	}
}

func TestConfigZeroValue(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/ui/config.json", nil))
	var c clientConfig
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if c.Profiles == nil {
		t.Error("profiles is null; the page expects a list")
	}
}

var (
	importRe = regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]*\s+from\s+)?['"]([^'"]+)['"]`)
	refRe    = regexp.MustCompile(`(?:src|href)="([^"#]+)"`)
	urlRe    = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
)

// TestModuleGraph resolves every import of every module and every file the
// page links: a typo would otherwise show only as a blank page.
func TestModuleGraph(t *testing.T) {
	sub, _ := fs.Sub(static, "static")
	var n int
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(sub, p)
		var refs []string
		switch path.Ext(p) {
		case ".js":
			for _, m := range importRe.FindAllStringSubmatch(string(b), -1) {
				if !strings.HasPrefix(m[1], "./") && !strings.HasPrefix(m[1], "../") {
					t.Errorf("%s imports %q: only relative imports of our own modules are allowed", p, m[1])
					continue
				}
				refs = append(refs, path.Join(path.Dir(p), m[1]))
			}
		case ".html":
			for _, m := range refRe.FindAllStringSubmatch(string(b), -1) {
				ref, ok := strings.CutPrefix(m[1], "/ui/")
				if !ok {
					t.Errorf("%s links %q: page files live under /ui/", p, m[1])
					continue
				}
				refs = append(refs, ref)
			}
		}
		for _, r := range refs {
			n++
			if _, err := fs.Stat(sub, r); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", p, r)
			}
		}
		return nil
	})
	if n < 10 {
		t.Errorf("only %d references found: the patterns no longer match the sources", n)
	}
}

// TestOffline: the page loads nothing from elsewhere (no CDN, no fonts) and
// runs no inline script (the Content-Security-Policy forbids it).
func TestOffline(t *testing.T) {
	sub, _ := fs.Sub(static, "static")
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(sub, p)
		s := string(b)
		if p == "favicon.svg" {
			s = strings.ReplaceAll(s, `xmlns="http://www.w3.org/2000/svg"`, "")
		}
		if m := urlRe.FindString(s); m != "" {
			t.Errorf("%s refers to %q: the UI must work offline", p, m)
		}
		if path.Ext(p) == ".html" && regexp.MustCompile(`<script(?:\s+type="module")?>`).MatchString(s) {
			t.Errorf("%s has an inline script", p)
		}
		return nil
	})
}
