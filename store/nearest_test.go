package store

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"abc", "abc", 0},
		{"kitten", "sitting", 3}, {"stories260k", "stories260K", 1}, {"lama3.2", "llama3.2", 1},
		{"qwen3:0.6b", "qwen3:06b", 1}, {"ab", "ba", 2}, {"héllo", "hello", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetry)", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestNearest: the names a mistyped one is closest to, nearest first.
func TestNearest(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := shared.Path(t, "models/stories260K.gguf")
	for _, n := range []string{"stories260K", "stories15M", "llama3.2:1b", "qwen3:0.6b", "tiny"} {
		if _, err := s.Import(src, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"stories260k", []string{"stories260K"}},
		{"stories", []string{"stories15M", "stories260K"}}, // prefixes, by distance
		{"lama3.2:1b", []string{"llama3.2:1b"}},
		{"llama3.2", []string{"llama3.2:1b"}},
		{"qwen3:06b", []string{"qwen3:0.6b"}},
		{"mistral", nil},
		{"tiny", nil}, // itself is not a suggestion
	} {
		if got := s.Nearest(tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	empty, _ := Open(t.TempDir())
	if got := empty.Nearest("stories"); got != nil {
		t.Errorf("an empty store suggests %q", got)
	}
}

// TestPullContact: every host a pull asks — the one named and the ones it
// is redirected to — is passed to Contact once, before its first request.
func TestPullContact(t *testing.T) {
	_, cdn, _ := newFake(t)
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("request hub " + r.Method)
		http.Redirect(w, r, cdn.URL+"/cdn/tiny-Q8_0.gguf", http.StatusFound)
	}))
	defer hub.Close()
	var hosts []string
	s, _ := Open(t.TempDir())
	_, err := s.Pull(context.Background(), hub.URL+"/m.gguf", PullOptions{Contact: func(h string) {
		hosts = append(hosts, h)
		note("contact " + h)
	}})
	if err != nil {
		t.Fatal(err)
	}
	hubHost, cdnHost := strings.TrimPrefix(hub.URL, "http://"), strings.TrimPrefix(cdn.URL, "http://")
	if want := []string{hubHost, cdnHost}; !reflect.DeepEqual(hosts, want) {
		t.Fatalf("contacted %q, want %q", hosts, want)
	}
	if len(log) < 2 || log[0] != "contact "+hubHost || log[1] != "request hub HEAD" {
		t.Errorf("order of events %q: the host must be announced before it is asked", log)
	}
	if _, err := ResolveRef(context.Background(), "hf.co/owner/repo", PullOptions{HFEndpoint: cdn.URL, Contact: func(h string) {
		note(fmt.Sprint("resolve contact ", h))
	}}); err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last != "resolve contact "+cdnHost {
		t.Errorf("ResolveRef: last event %q, want the endpoint announced", last)
	}
}
