package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// proxy stands between the browser and the server so a test can cut the
// network: cut aborts every open request (the browser sees its connections
// drop mid-stream) and answers 503 until restore.
type proxy struct {
	url string

	mu      sync.Mutex
	target  *url.URL
	offline bool
	held    chan struct{} // while not nil, new requests wait for it to close
	open    map[*http.Request]context.CancelFunc
	resumes []string // Last-Event-ID (or ?after=) of each event stream opened after the first event
}

func newProxy(t testing.TB, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{open: map[*http.Request]context.CancelFunc{}, target: u}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		p.mu.Lock()
		r.SetURL(p.target)
		p.mu.Unlock()
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		p.mu.Lock()
		if held := p.held; held != nil {
			p.mu.Unlock()
			select {
			case <-held:
			case <-ctx.Done():
				return
			}
			p.mu.Lock()
		}
		if p.offline {
			p.mu.Unlock()
			http.Error(w, "proxy: the network is down", http.StatusServiceUnavailable)
			return
		}
		p.open[r] = cancel
		if strings.HasSuffix(r.URL.Path, "/events") {
			from := r.Header.Get("Last-Event-ID")
			if from == "" {
				from = r.URL.Query().Get("after")
			}
			if from != "" && from != "0" {
				p.resumes = append(p.resumes, from)
			}
		}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.open, r)
			p.mu.Unlock()
		}()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// hold makes new requests wait (a slow network: the page shows what it
// shows while its data loads) until release.
func (p *proxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

func (p *proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// cut takes the network down: open requests end, new ones get 503.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.offline = true
	for _, cancel := range p.open {
		cancel()
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.offline = false
	p.mu.Unlock()
}

// resumed lists the sequence numbers event streams were resumed from.
func (p *proxy) resumed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.resumes...)
}

// retarget sends requests to another server from now on.
func (p *proxy) retarget(t testing.TB, target string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.target = u
	p.mu.Unlock()
}
