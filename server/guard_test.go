package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// browserRequest is one request as a browser (or another client) sends
// it: hdr may hold "Host" (the request's Host) and "Content-Type" ("" for
// none); other headers are sent as given.
type browserRequest struct {
	method, path, body string
	hdr                map[string]string
}

func (ts *testServer) send(br browserRequest) (*http.Response, []byte) {
	ts.t.Helper()
	var rd io.Reader
	if br.body != "" {
		rd = strings.NewReader(br.body)
	}
	req, err := http.NewRequest(br.method, ts.url+br.path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range br.hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// errorCode reads the code (or, for Ollama's dialect, the message) of an
// error body in any dialect.
func errorCode(b []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	json.Unmarshal(b, &e)
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	var obj struct {
		Code string `json:"code"`
	}
	json.Unmarshal(e.Error, &obj)
	return obj.Code
}

// TestHostGuard: a loopback server answers only requests whose Host is a
// loopback name or address; a DNS-rebinding page's Host (its own domain,
// resolved to 127.0.0.1) is refused before anything is read or done.
func TestHostGuard(t *testing.T) {
	ts := start(t, newFake(), nil)
	port := ts.url[strings.LastIndex(ts.url, ":"):]
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1" + port, true},
		{"localhost" + port, true},
		{"LocalHost" + port, true},
		{"localhost", true},
		{"localhost." + port, true},
		{"app.localhost" + port, true},
		{"127.42.0.1" + port, true},
		{"[::1]" + port, true},
		{"[::ffff:127.0.0.1]" + port, true},
		{"0.0.0.0" + port, true},
		{"evil.example" + port, false},
		{"evil.example", false},
		{"localhost.evil.example" + port, false},
		{"evil-localhost" + port, false},
		{"192.168.1.20" + port, false},
		{"10.0.0.1", false},
		{"[2001:db8::1]" + port, false},
		{"127.0.0.1.nip.io" + port, false},
	} {
		for _, path := range []string{"/api/tags", "/v1/jobs", "/healthz"} {
			resp, b := ts.send(browserRequest{method: "GET", path: path, hdr: map[string]string{"Host": tc.host}})
			if got := resp.StatusCode == http.StatusOK; got != tc.ok {
				t.Errorf("Host %q, GET %s: %d %s", tc.host, path, resp.StatusCode, b)
			}
			if !tc.ok && (resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "forbidden_host") && !strings.Contains(string(b), "not a loopback name")) {
				t.Errorf("Host %q, GET %s: %d %s, want 403 naming the host", tc.host, path, resp.StatusCode, b)
			}
		}
	}
	// A refused POST does nothing.
	resp, b := ts.send(browserRequest{method: "POST", path: "/api/create", body: `{"model":"m","from":"tiny","stream":false}`,
		hdr: map[string]string{"Host": "evil.example" + port}})
	if resp.StatusCode != http.StatusForbidden || ts.f.made("m") {
		t.Errorf("POST with a foreign Host: %d %s (made: %v)", resp.StatusCode, b, ts.f.made("m"))
	}
	if !strings.Contains(string(b), `evil.example`+port) {
		t.Errorf("refusal does not name the Host: %s", b)
	}
}

// TestHostGuardBeyondLoopback: a server on another address (with its API
// key) answers any Host, as Ollama's does: the key is what guards it.
func TestHostGuardBeyondLoopback(t *testing.T) {
	ts := startAt(t, newFake(), "0.0.0.0:0", func(c *Config) { c.APIKey = "k" })
	resp, b := ts.send(browserRequest{method: "GET", path: "/api/tags", hdr: map[string]string{"Host": "gpu-box.lan:8765", "Authorization": "Bearer k"}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Host gpu-box.lan on 0.0.0.0: %d %s", resp.StatusCode, b)
	}
}

// TestOriginGuard: a page of another origin may not use the server (403
// in the endpoint's dialect, naming the origin and how to allow it);
// same-origin pages (the web UI), clients that send no Origin (curl,
// SDKs), pages served from this machine and allowed origins may, and get
// CORS headers.
func TestOriginGuard(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) {
		c.AllowOrigins = []string{"https://app.example", "https://*.tools.example", "chrome-extension://abcdef"}
	})
	self := ts.url
	job := `{"model":"tiny","prompt":"hi"}`
	for _, tc := range []struct {
		name                 string
		method, path, body   string
		hdr                  map[string]string
		status               int
		allowOrigin, contain string
	}{
		{"cross-site create, text/plain", "POST", "/api/create", `{"model":"m","from":"tiny","stream":false}`,
			map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, "", "--allow-origin https://evil.example"},
		{"cross-site job", "POST", "/v1/jobs", job, map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403, "", "forbidden_origin"},
		{"cross-site generate", "POST", "/api/generate", job, map[string]string{"Origin": "http://evil.example"}, 403, "", "http://evil.example"},
		{"cross-site pull", "POST", "/api/pull", `{"model":"https://evil.example/x.gguf"}`, map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, 403, "", "GLASSBOX_ORIGINS"},
		{"cross-site blob", "POST", "/api/blobs/sha256:" + strings.Repeat("0", 64), "xx", map[string]string{"Origin": "https://evil.example", "Content-Type": ""}, 403, "", "evil.example"},
		{"cross-site read of tags", "GET", "/api/tags", "", map[string]string{"Origin": "https://evil.example"}, 403, "", "evil.example"},
		{"cross-site read of jobs", "GET", "/v1/jobs", "", map[string]string{"Origin": "https://evil.example"}, 403, "", "forbidden_origin"},
		{"cross-site OpenAI", "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"x"}]}`, map[string]string{"Origin": "https://evil.example"}, 403, "", "forbidden_origin"},
		{"sandboxed page (null)", "POST", "/v1/jobs", job, map[string]string{"Origin": "null"}, 403, "", "null"},
		{"malformed origin", "POST", "/v1/jobs", job, map[string]string{"Origin": "https://evil.example/path"}, 403, "", "forbidden_origin"},
		{"lookalike of an allowed one", "POST", "/v1/jobs", job, map[string]string{"Origin": "https://app.example.evil.example"}, 403, "", "forbidden_origin"},
		{"lookalike of a pattern", "POST", "/v1/jobs", job, map[string]string{"Origin": "https://tools.example.evil.example"}, 403, "", "forbidden_origin"},
		{"cross-site without Origin", "POST", "/v1/jobs", job, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "", "forbidden_origin"},
		{"localhost lookalike", "POST", "/v1/jobs", job, map[string]string{"Origin": "http://localhost.evil.example:8080"}, 403, "", "forbidden_origin"},

		{"same origin (the web UI)", "POST", "/v1/jobs", job, map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"}, 202, "", ""},
		{"same origin read", "GET", "/v1/jobs", "", map[string]string{"Origin": self}, 200, "", ""},
		{"no Origin (curl, SDKs)", "POST", "/v1/jobs", job, nil, 202, "", ""},
		{"cross-site navigation", "GET", "/api/tags", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 200, "", ""},
		{"allowed origin", "POST", "/v1/jobs", job, map[string]string{"Origin": "https://app.example"}, 202, "https://app.example", ""},
		{"allowed pattern", "GET", "/api/tags", "", map[string]string{"Origin": "https://a.tools.example"}, 200, "https://a.tools.example", ""},
		{"allowed extension", "GET", "/api/tags", "", map[string]string{"Origin": "chrome-extension://abcdef"}, 200, "chrome-extension://abcdef", ""},
		{"a page on this machine", "POST", "/api/generate", `{"model":"tiny","prompt":"hi","stream":false}`, map[string]string{"Origin": "http://localhost:5173"}, 200, "http://localhost:5173", ""},
		{"a page on this machine (IPv6)", "GET", "/api/tags", "", map[string]string{"Origin": "http://[::1]:3000"}, 200, "http://[::1]:3000", ""},
		{"a desktop app", "GET", "/api/tags", "", map[string]string{"Origin": "tauri://localhost"}, 200, "tauri://localhost", ""},
		{"a VS Code webview", "GET", "/api/tags", "", map[string]string{"Origin": "vscode-webview://1234abcd"}, 200, "vscode-webview://1234abcd", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.send(browserRequest{method: tc.method, path: tc.path, body: tc.body, hdr: tc.hdr})
			if resp.StatusCode != tc.status {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.allowOrigin)
			}
			if tc.allowOrigin != "" && !strings.Contains(resp.Header.Get("Vary"), "Origin") {
				t.Errorf("Vary %q lacks Origin", resp.Header.Get("Vary"))
			}
			if tc.status == 403 && resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
				t.Errorf("refusal is %q, not JSON", resp.Header.Get("Content-Type"))
			}
			if !strings.Contains(string(b), tc.contain) {
				t.Errorf("body %s does not name %q", b, tc.contain)
			}
		})
	}
	if ts.f.made("m") {
		t.Error("a cross-site create made a model")
	}
	// Refusals speak the endpoint's dialect.
	_, b := ts.send(browserRequest{method: "GET", path: "/api/tags", hdr: map[string]string{"Origin": "https://evil.example"}})
	var oe ollamaError
	if json.Unmarshal(b, &oe); !strings.HasPrefix(oe.Error, "deliver: ") || oe.Stage != "deliver" {
		t.Errorf("Ollama dialect: %s", b)
	}
	_, b = ts.send(browserRequest{method: "GET", path: "/v1/models", hdr: map[string]string{"Origin": "https://evil.example"}})
	var ae openAIError
	if json.Unmarshal(b, &ae); ae.Error.Code == nil || *ae.Error.Code != "forbidden_origin" || ae.Error.Type != "invalid_request_error" {
		t.Errorf("OpenAI dialect: %s", b)
	}
}

// TestAllowAnyOrigin: "*" lets every page in, "null" included.
func TestAllowAnyOrigin(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) { c.AllowOrigins = []string{"*"} })
	for _, origin := range []string{"https://evil.example", "null"} {
		resp, b := ts.send(browserRequest{method: "GET", path: "/api/tags", hdr: map[string]string{"Origin": origin}})
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("Origin %s: %d %s %v", origin, resp.StatusCode, b, resp.Header)
		}
	}
}

func TestAllowOriginsChecked(t *testing.T) {
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://app.example", true}, {"https://app.example/", true}, {"http://localhost:*", true},
		{"https://*.example.com", true}, {"chrome-extension://*", true}, {"*", true}, {"null", true},
		{"app.example", false}, {"https://app.example/path", false}, {"", false}, {"https://", false},
		{"ht tp://x", false}, {"https://a b", false}, {"https://user@app.example", false},
	} {
		_, err := New(Config{Backend: newFake(), Jobs: &ManagerJobs{}, AllowOrigins: []string{tc.origin}})
		if (err == nil) != tc.ok {
			t.Errorf("AllowOrigins %q: %v", tc.origin, err)
		}
		if err != nil && !strings.Contains(err.Error(), "scheme://host") {
			t.Errorf("AllowOrigins %q: %v does not say what an origin is", tc.origin, err)
		}
	}
}

// TestPreflight: a CORS preflight of an allowed origin is answered with
// what it may send; another origin's is refused.
func TestPreflight(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) { c.AllowOrigins = []string{"https://app.example"} })
	pre := func(origin, path string) (*http.Response, []byte) {
		return ts.send(browserRequest{method: "OPTIONS", path: path, hdr: map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Content-Type": "",
			"Access-Control-Request-Headers":         "authorization,content-type,x-stainless-os",
			"Access-Control-Request-Private-Network": "true"}})
	}
	for _, path := range []string{"/api/chat", "/v1/chat/completions", "/v1/jobs", "/v1/messages"} {
		resp, b := pre("https://app.example", path)
		h := resp.Header
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		for k, want := range map[string]string{
			"Access-Control-Allow-Origin":          "https://app.example",
			"Access-Control-Allow-Headers":         "authorization,content-type,x-stainless-os",
			"Access-Control-Max-Age":               "7200",
			"Access-Control-Allow-Private-Network": "true",
		} {
			if h.Get(k) != want {
				t.Errorf("%s: %s %q, want %q", path, k, h.Get(k), want)
			}
		}
		if m := h.Get("Access-Control-Allow-Methods"); !strings.Contains(m, "POST") || !strings.Contains(m, "DELETE") {
			t.Errorf("%s: Access-Control-Allow-Methods %q", path, m)
		}
		if v := strings.Join(h.Values("Vary"), ","); !strings.Contains(v, "Origin") || !strings.Contains(v, "Access-Control-Request-Headers") {
			t.Errorf("%s: Vary %q", path, v)
		}
	}
	resp, b := pre("https://evil.example", "/api/chat")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" || !strings.Contains(string(b), "evil.example") {
		t.Errorf("a foreign origin's preflight: %d %v %s", resp.StatusCode, resp.Header, b)
	}
}

// TestContentType: a browser page must send its JSON as JSON: the
// content types a page may send without a preflight (text/plain, forms)
// are refused with 415 on every endpoint that reads JSON. Other clients
// are read as JSON whatever they say, as Ollama reads them (curl -d sends
// a form type).
func TestContentType(t *testing.T) {
	ts := start(t, newFake(), nil)
	body := `{"model":"tiny","prompt":"hi","stream":false}`
	browser := func(ct string) map[string]string {
		return map[string]string{"Origin": ts.url, "Sec-Fetch-Site": "same-origin", "Content-Type": ct}
	}
	for _, tc := range []struct {
		name   string
		path   string
		hdr    map[string]string
		status int
	}{
		{"browser text/plain", "/api/generate", browser("text/plain;charset=UTF-8"), 415},
		{"browser form", "/api/generate", browser("application/x-www-form-urlencoded"), 415},
		{"browser multipart", "/v1/jobs", browser("multipart/form-data; boundary=x"), 415},
		{"browser none", "/v1/chat/completions", browser(""), 415},
		{"browser malformed", "/v1/jobs", browser("application/json; charset"), 415},
		{"browser JSON", "/api/generate", browser("application/json"), 200},
		{"browser JSON with charset", "/api/generate", browser("application/json; charset=utf-8"), 200},
		{"browser +json", "/api/generate", browser("application/vnd.glassbox+json"), 200},
		{"curl -d (form type)", "/api/generate", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 200},
		{"fetch of a string (text/plain)", "/api/generate", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, 200},
		{"no type", "/api/generate", map[string]string{"Content-Type": ""}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := ts.send(browserRequest{method: "POST", path: tc.path, body: body, hdr: tc.hdr})
			if resp.StatusCode != tc.status {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status == 415 && (!strings.Contains(string(b), "send it as Content-Type: application/json") ||
				dialectOf(tc.path) != dialectOllama && errorCode(b) != "unsupported_media_type") {
				t.Errorf("415 does not name what is wanted: %s", b)
			}
			if ct := tc.hdr["Content-Type"]; tc.status == 415 && ct != "" && !strings.Contains(string(b), ct) {
				t.Errorf("415 does not name the type %q: %s", ct, b)
			}
		})
	}
	// A body-less POST (a cancel, an unload) and an upload's bytes need no JSON type.
	resp, b := ts.send(browserRequest{method: "POST", path: "/v1/ps/tiny/unload", hdr: browser("")})
	if resp.StatusCode != 200 {
		t.Errorf("body-less POST from a page: %d %s", resp.StatusCode, b)
	}
	resp, b = ts.send(browserRequest{method: "POST", path: "/api/blobs/sha256:" + strings.Repeat("0", 64), body: "xx", hdr: browser("application/octet-stream")})
	if resp.StatusCode == 415 {
		t.Errorf("an upload from a page: %d %s", resp.StatusCode, b)
	}
}

// TestUploadFromPage: the upload endpoints (ComfyUI's /upload/image and
// /api/upload/image, OpenAI's /v1/images/edits) take a multipart form
// from the server's own page, a page on this machine and an allowed
// origin's, as ComfyUI's frontends send them; a page of any other origin
// is refused by the origin check (403) before the body is read, and a
// text/plain, form or untyped body from any page stays a 415. Other
// endpoints still refuse a page's multipart body.
func TestUploadFromPage(t *testing.T) {
	f := newImageFake(t)
	dir := filepath.Join(t.TempDir(), "input")
	ts := start(t, f.fakeBackend, func(c *Config) {
		c.Backend, c.InputDir = f, dir
		c.AllowOrigins = []string{"https://comfy.example"}
	})
	pic := grey(64, 64, 9)
	form := func(path, name string) (string, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("image", name)
		fw.Write(pic)
		if path == "/v1/images/edits" {
			mw.WriteField("prompt", "a fox")
			mw.WriteField("model", "sd")
		}
		mw.Close()
		return buf.String(), mw.FormDataContentType()
	}
	n := 0
	for _, path := range []string{"/upload/image", "/api/upload/image", "/v1/images/edits"} {
		for _, tc := range []struct {
			name        string
			hdr         map[string]string
			multipart   bool   // the body is the form, declared so
			ct          string // else this type over the form's bytes
			status      int
			allowOrigin string
			contain     string
		}{
			{"same origin", map[string]string{"Origin": ts.url, "Sec-Fetch-Site": "same-origin"}, true, "", 200, "", ""},
			{"same origin, no Origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, true, "", 200, "", ""},
			{"allowed origin", map[string]string{"Origin": "https://comfy.example", "Sec-Fetch-Site": "cross-site"}, true, "", 200, "https://comfy.example", ""},
			{"a page on this machine", map[string]string{"Origin": "http://localhost:8188", "Sec-Fetch-Site": "same-site"}, true, "", 200, "http://localhost:8188", ""},
			{"no browser (a script)", nil, true, "", 200, "", ""},
			{"origin not allowed", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, true, "", 403, "", "--allow-origin https://evil.example"},
			{"cross-site without Origin", map[string]string{"Sec-Fetch-Site": "cross-site"}, true, "", 403, "", "without an Origin is refused"},
			{"origin not allowed, text/plain", map[string]string{"Origin": "https://evil.example"}, false, "text/plain", 403, "", "pages of other origins may not use this server"},
			{"same origin, text/plain", map[string]string{"Origin": ts.url}, false, "text/plain;charset=UTF-8", 415, "", "multipart/form-data"},
			{"same origin, form", map[string]string{"Origin": ts.url}, false, "application/x-www-form-urlencoded", 415, "", "multipart/form-data"},
			{"allowed origin, text/plain", map[string]string{"Origin": "https://comfy.example"}, false, "text/plain", 415, "https://comfy.example", "text/plain"},
			{"same origin, no type", map[string]string{"Origin": ts.url}, false, "", 415, "", "no Content-Type"},
			{"same origin, multipart/mixed", map[string]string{"Origin": ts.url}, false, "multipart/mixed; boundary=x", 415, "", "multipart/mixed"},
		} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				n++
				name := fmt.Sprintf("up%d.png", n)
				body, ct := form(path, name)
				if !tc.multipart {
					ct = tc.ct
				}
				hdr := map[string]string{"Content-Type": ct}
				for k, v := range tc.hdr {
					hdr[k] = v
				}
				before := len(f.reqs)
				resp, b := ts.send(browserRequest{method: "POST", path: path, body: body, hdr: hdr})
				if resp.StatusCode != tc.status {
					t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.status, b)
				}
				if got := resp.Header.Get("Access-Control-Allow-Origin"); got != tc.allowOrigin {
					t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.allowOrigin)
				}
				if !strings.Contains(string(b), tc.contain) {
					t.Errorf("body %s does not name %q", b, tc.contain)
				}
				// (/api/upload/image's refusals are in Ollama's dialect, as
				// everything under /api/ the guard refuses.)
				if tc.status == 415 && dialectOf(path) != dialectOllama && errorCode(b) != "unsupported_media_type" {
					t.Errorf("415 is not unsupported_media_type: %s", b)
				}
				// What was done: a kept picture, a job.
				_, err := os.Stat(filepath.Join(dir, name))
				kept, ran := err == nil, len(f.reqs) > before
				if path == "/v1/images/edits" {
					if ran != (tc.status == 200) {
						t.Errorf("status %d, and an image job ran: %v", tc.status, ran)
					}
				} else if kept != (tc.status == 200) {
					t.Errorf("status %d, and %s was kept: %v", tc.status, name, kept)
				}
			})
		}
	}
	// A page's multipart body elsewhere is still a 415.
	for _, path := range []string{"/prompt", "/v1/images/generations", "/api/generate", "/upload/mask"} {
		body, ct := form("/upload/image", "x.png")
		resp, b := ts.send(browserRequest{method: "POST", path: path, body: body, hdr: map[string]string{"Origin": ts.url, "Content-Type": ct}})
		if resp.StatusCode != 415 {
			t.Errorf("POST %s, a page's multipart form: %d %s, want 415", path, resp.StatusCode, b)
		}
	}
}

// TestSecurityHeaders: no response may be framed (clickjacking) or
// sniffed into another type.
func TestSecurityHeaders(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<!doctype html>page")) })
	ts := start(t, newFake(), func(c *Config) { c.UI = page })
	for _, path := range []string{"/", "/ui/app.js", "/api/tags", "/v1/jobs", "/nope"} {
		resp, _ := ts.send(browserRequest{method: "GET", path: path})
		h := resp.Header
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("GET %s: X-Frame-Options %q, X-Content-Type-Options %q, Content-Security-Policy %q", path,
				h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
	}
}
