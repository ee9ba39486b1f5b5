package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestImportListRemove(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := shared.Path(t, "models/stories260K.gguf")
	e, err := s.Import(src, "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "stories260K" || e.Bytes != 1185376 || !strings.HasPrefix(e.SHA256, "047bf46455a54493") {
		t.Fatalf("entry %+v", e)
	}
	if _, err := s.Import(src, "stories260K"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("duplicate import: %v", err)
	}
	if _, err := s.Import(src, "../evil"); err == nil || !strings.Contains(err.Error(), "invalid model name") {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := s.Import(filepath.Join(filepath.Dir(src), "README.md"), "readme"); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Fatalf("non-GGUF import: %v", err)
	}
	p, err := s.Resolve("stories260K")
	if err != nil || p != filepath.Join(s.Dir, "stories260K.gguf") {
		t.Fatalf("resolve: %q %v", p, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].SHA256 != e.SHA256 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.Remove("stories260K"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("stories260K"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after rm: %v", err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("rm touched the source: %v", err)
	}
}

// TestCreate: a model made from another shares its file, keeps its
// profile in the manifest, and lays its own over the base's.
func TestCreate(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Import(shared.Path(t, "models/stories260K.gguf"), "")
	if err != nil {
		t.Fatal(err)
	}
	p1 := Profile{System: "You are a pirate.", Parameters: map[string]any{"temperature": 0.3, "stop": []any{"Arr"}}}
	a, err := s.Create("pirate", base.Name, base.Path, base.SHA256, base.Bytes, p1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("pirate")
	if err != nil || got.From != "stories260K" || got.System != p1.System || got.Parameters["temperature"] != 0.3 || got.SHA256 != base.SHA256 || got.Bytes != base.Bytes {
		t.Fatalf("pirate: %+v, %v", got, err)
	}
	if a.Path == base.Path {
		t.Fatalf("the made model has the base's own file name")
	}
	// A model made from pirate: its own temperature, pirate's stop and system.
	p2 := Profile{Parameters: map[string]any{"temperature": 0.9}}.Over(got.Profile)
	if p2.System != p1.System || p2.Parameters["temperature"] != 0.9 || fmt.Sprint(p2.Parameters["stop"]) != "[Arr]" || p1.Parameters["temperature"] != 0.3 {
		t.Fatalf("laid over: %+v (base now %+v)", p2, p1)
	}
	if _, err := s.Create("pirate", base.Name, base.Path, "", 0, p1); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a second pirate: %v", err)
	}
	// Without the sum, it is computed.
	c, err := s.Create("plain", base.Name, base.Path, "", 0, Profile{})
	if err != nil || c.SHA256 != base.SHA256 || c.Bytes != base.Bytes {
		t.Fatalf("plain: %+v, %v", c, err)
	}
	if err := s.Remove("pirate"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve("stories260K"); err != nil {
		t.Fatalf("removing the made model removed the base: %v", err)
	}
}

// fakeHF behaves like the Hugging Face endpoints glassbox uses: the model
// API listing, resolve URLs that redirect with X-Linked-Etag/X-Linked-Size,
// and a CDN that honours Range. cutAt > 0 makes the next GET end the
// connection after that many bytes.
type fakeHF struct {
	files  map[string][]byte // file name → content
	sha    map[string]string // override the published hash
	cutAt  atomic.Int64
	ranges atomic.Int64 // range requests seen
	gets   atomic.Int64
	token  string // required bearer token, if set
}

func (f *fakeHF) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	switch {
	case r.URL.Path == "/api/models/owner/repo":
		var sib []string
		for n := range f.files {
			sib = append(sib, fmt.Sprintf(`{"rfilename":%q}`, n))
		}
		fmt.Fprintf(w, `{"id":"owner/repo","siblings":[%s,{"rfilename":"README.md"}]}`, strings.Join(sib, ","))
	case strings.HasPrefix(r.URL.Path, "/owner/repo/resolve/main/"):
		name := strings.TrimPrefix(r.URL.Path, "/owner/repo/resolve/main/")
		data, ok := f.files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		sum := HashString(data)
		if s, ok := f.sha[name]; ok {
			sum = s
		}
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		data, ok := f.files[strings.TrimPrefix(r.URL.Path, "/cdn/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		f.gets.Add(1)
		start := 0
		if rg := r.Header.Get("Range"); rg != "" {
			f.ranges.Add(1)
			fmt.Sscanf(rg, "bytes=%d-", &start)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(data)-1, len(data)))
			w.Header().Set("Content-Length", fmt.Sprint(len(data)-start))
			w.WriteHeader(http.StatusPartialContent)
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		}
		body := data[start:]
		if cut := f.cutAt.Swap(0); cut > 0 {
			w.Write(body[:cut])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Write(body)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T) (*fakeHF, *httptest.Server, []byte) {
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeHF{files: map[string][]byte{
		"tiny-Q4_K_M.gguf": data,
		"tiny-Q8_0.gguf":   data,
	}, sha: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv, data
}

func TestPullResumesAfterCut(t *testing.T) {
	f, srv, data := newFake(t)
	s, _ := Open(t.TempDir())
	opts := PullOptions{HFEndpoint: srv.URL, Token: "-"}
	f.cutAt.Store(300000)
	_, err := s.Pull(context.Background(), "hf.co/owner/repo", opts)
	if err == nil || !strings.Contains(err.Error(), "run the same pull again to resume") {
		t.Fatalf("cut download: %v", err)
	}
	if _, err := s.Resolve("tiny-Q4_K_M"); err == nil {
		t.Fatal("a partial download is visible under its real name")
	}
	var notes []string
	opts.Logf = func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }
	var last int64
	opts.Progress = func(done, total int64) { last = done }
	e, err := s.Pull(context.Background(), "hf.co/owner/repo", opts)
	if err != nil {
		t.Fatal(err)
	}
	if f.ranges.Load() != 1 || len(notes) != 1 || notes[0] != fmt.Sprintf("resuming at byte 300000 of %d", len(data)) {
		t.Fatalf("range requests %d, notes %q", f.ranges.Load(), notes)
	}
	if e.Name != "tiny-Q4_K_M" || e.SHA256 != HashString(data) || last != int64(len(data)) {
		t.Fatalf("entry %+v, progress %d", e, last)
	}
	got, _ := os.ReadFile(e.Path)
	if string(got) != string(data) {
		t.Fatal("content differs")
	}
	// The reference it was pulled by names it too.
	if p, err := s.Resolve("hf.co/owner/repo"); err != nil || p != e.Path {
		t.Fatalf("by reference: %q, %v", p, err)
	}
	if _, err := s.Resolve("hf.co/owner/other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another reference: %v", err)
	}
}

func TestPullErrors(t *testing.T) {
	f, srv, _ := newFake(t)
	f.sha["tiny-Q8_0.gguf"] = strings.Repeat("ab", 32)
	tests := []struct {
		name, ref string
		token     string
		want      string
	}{
		{"404 file", "hf.co/owner/repo:missing.gguf", "", "HTTP 404: not found"},
		{"404 repo", "hf.co/owner/other", "", "HTTP 404"},
		{"ambiguous", "hf.co/owner/repo:Q", "", `"Q" matches several files`},
		{"no match", "hf.co/owner/repo:Q2_K", "", `no .gguf file matches "Q2_K"`},
		{"hash mismatch", "hf.co/owner/repo:Q8_0", "", "SHA-256 mismatch"},
		{"bad ref", "ftp://x/y", "", "neither an http(s) URL"},
		{"gated", "hf.co/owner/repo", "needed", "HTTP 401: access denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.token = tc.token
			defer func() { f.token = "" }()
			s, _ := Open(t.TempDir())
			_, err := s.Pull(context.Background(), tc.ref, PullOptions{HFEndpoint: srv.URL, Token: "-"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if ents, _ := s.List(); len(ents) != 0 {
				t.Fatalf("a failed pull left %d models", len(ents))
			}
		})
	}
}

func TestPullURL(t *testing.T) {
	_, srv, data := newFake(t)
	s, _ := Open(t.TempDir())
	e, err := s.Pull(context.Background(), srv.URL+"/cdn/tiny-Q8_0.gguf", PullOptions{Name: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "mine" || e.Bytes != int64(len(data)) {
		t.Fatalf("%+v", e)
	}
}

// TestTaggedNames: a name with a tag (llama3.2:1b) is stored under file
// names without ':' (Windows refuses it), and a store written before,
// with ':' in its file names, is still read, listed, updated and removed.
func TestTaggedNames(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := shared.Path(t, "models/stories260K.gguf")
	e, err := s.Import(src, "story:1b")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(s.Dir, "*"))
	for _, f := range files {
		if strings.Contains(filepath.Base(f), ":") {
			t.Errorf("file %s has a ':'", f)
		}
	}
	if e.File != "story@1b.gguf" {
		t.Errorf("model file %q", e.File)
	}
	// A manifest written by an older glassbox, under the name itself.
	legacy, err := s.Import(src, "old")
	if err != nil {
		t.Fatal(err)
	}
	legacy.Name = "old:tag"
	b, _ := json.Marshal(legacy)
	if err := os.Remove(filepath.Join(s.Dir, "old.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "old:tag.json"), b, 0o644); err != nil {
		t.Skipf("this file system refuses ':' in names: %v", err)
	}
	list, err := s.List()
	var names []string
	for _, x := range list {
		names = append(names, x.Name)
	}
	if err != nil || strings.Join(names, ",") != "old:tag,story:1b" {
		t.Fatalf("list: %v, %v", names, err)
	}
	if _, err := s.SetProfile("old:tag", Profile{System: "hi"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("old:tag"); err != nil || got.System != "hi" {
		t.Errorf("the legacy manifest after SetProfile: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "old@tag.json")); !os.IsNotExist(err) {
		t.Errorf("SetProfile wrote a second manifest beside the legacy one: %v", err)
	}
	for _, n := range []string{"old:tag", "story:1b"} {
		if err := s.Remove(n); err != nil {
			t.Errorf("remove %s: %v", n, err)
		}
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("after removing both: %+v", list)
	}
}

// TestFreeBytes: the store can say how much room uploads have (on the
// platforms that tell: unix, windows).
func TestFreeBytes(t *testing.T) {
	switch runtime.GOOS {
	case "plan9", "js", "wasip1":
		t.Skip("no free-space call on", runtime.GOOS)
	}
	free, ok := (&Store{Dir: t.TempDir()}).FreeBytes()
	if !ok || free <= 0 {
		t.Errorf("FreeBytes = %d, %v", free, ok)
	}
	if _, ok := (&Store{Dir: filepath.Join(t.TempDir(), "missing")}).FreeBytes(); ok {
		t.Error("FreeBytes of a directory that does not exist")
	}
}
