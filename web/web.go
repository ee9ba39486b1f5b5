package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Config is what the page needs to know about the server that embeds it.
// The zero value works.
type Config struct {
	// Profiles are the device profile names the Models view offers for a
	// plan ("rtx4090", "pi5-8g", ...), besides this machine.
	Profiles []string
	// Version is shown in the page footer.
	Version string
}

// clientConfig is GET /ui/config.json.
type clientConfig struct {
	Profiles []string `json:"profiles"`
	Version  string   `json:"version,omitempty"`
}

// Handler serves the UI: "/" is the page, "/ui/..." its files and
// /ui/config.json the Config. Files are served with a content hash as
// ETag and "no-cache", so a new binary's page is never mixed with an old
// cached script. Other paths get 404.
func Handler(cfg Config) http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("web: embedded files missing: " + err.Error()) // a build defect, not input
	}
	h := &handler{files: map[string]file{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		h.add("/ui/"+p, b)
		return nil
	})
	if err != nil {
		panic("web: reading the embedded files: " + err.Error()) // a build defect, not input
	}
	if f, ok := h.files["/ui/index.html"]; ok {
		h.files["/"] = f
	}
	profiles := cfg.Profiles
	if profiles == nil {
		profiles = []string{}
	}
	b, _ := json.Marshal(clientConfig{Profiles: profiles, Version: cfg.Version})
	h.add("/ui/config.json", b)
	return h
}

type file struct {
	body  []byte
	ctype string
	etag  string
}

type handler struct{ files map[string]file }

func (h *handler) add(name string, body []byte) {
	sum := sha256.Sum256(body)
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) { // not every system's MIME table knows these
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".json":
		ctype = "application/json"
	case ".svg":
		ctype = "image/svg+xml"
	}
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.files[name] = file{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "deliver: "+r.Method+" "+r.URL.Path+": the UI only answers GET", http.StatusMethodNotAllowed)
		return
	}
	f, ok := h.files[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		msg, _ := json.Marshal("GET " + r.URL.Path + ": no such endpoint or page")
		w.Write([]byte(`{"error":{"stage":"deliver","code":"not_found","message":` + string(msg) + "}}\n"))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(f.ctype, "html; charset=utf-8") {
		// Everything the page loads is its own: no CDN, no inline script;
		// no other page may frame it.
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'")
		hd.Set("Referrer-Policy", "no-referrer")
	}
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
