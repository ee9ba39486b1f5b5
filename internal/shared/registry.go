package shared

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Layer is one layer of a fake registry's manifest: its media type, its
// bytes, and the digest the manifest gives it (the bytes' SHA-256 when
// empty; another, to test a mismatch).
type Layer struct {
	MediaType string
	Data      []byte
	Digest    string
}

// OllamaRegistry serves manifests and blobs as Ollama's registry does
// (the Docker registry v2 protocol): GET /v2/NAMESPACE/MODEL/manifests/TAG
// answers the manifest of models[NAMESPACE/MODEL:TAG] (only to an Accept
// of the v2 manifest type, with the text/plain content type the real
// registry sends), and GET .../blobs/DIGEST redirects to another path that
// serves the bytes with Range support, as its CDN does. The server closes
// with t.
func OllamaRegistry(t testing.TB, models map[string][]Layer) *httptest.Server {
	t.Helper()
	blobs := map[string][]byte{}
	manifests := map[string][]byte{}
	for ref, layers := range models {
		var ls []map[string]any
		for _, l := range layers {
			d := l.Digest
			if d == "" {
				h := sha256.Sum256(l.Data)
				d = "sha256:" + hex.EncodeToString(h[:])
			}
			blobs[d] = l.Data
			ls = append(ls, map[string]any{"mediaType": l.MediaType, "digest": d, "size": len(l.Data)})
		}
		m, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
			"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:00", "size": 2},
			"layers": ls})
		name, tag, _ := strings.Cut(ref, ":")
		manifests["/v2/"+name+"/manifests/"+tag] = m
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m, ok := manifests[r.URL.Path]; ok {
			if !strings.Contains(r.Header.Get("Accept"), "manifest.v2+json") {
				http.Error(w, "want a v2 manifest", http.StatusNotAcceptable)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			w.Write(m)
			return
		}
		if i := strings.Index(r.URL.Path, "/blobs/"); i >= 0 {
			if _, ok := blobs[r.URL.Path[i+len("/blobs/"):]]; ok {
				http.Redirect(w, r, "/cdn/"+r.URL.Path[i+len("/blobs/"):], http.StatusTemporaryRedirect)
				return
			}
		}
		if d, ok := strings.CutPrefix(r.URL.Path, "/cdn/"); ok && blobs[d] != nil {
			http.ServeContent(w, r, "blob", time.Time{}, bytes.NewReader(blobs[d]))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}
