package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/internal/home"
)

// Version is reported by /api/version and /healthz.
var Version = "0.1.0"

// Config configures a Server. The zero value works for everything but
// Backend and Jobs: loopback only, no API key, one generation at a time, 64
// waiting, 8 MiB bodies, 64 GiB uploads, no page of another origin.
type Config struct {
	Backend Backend
	Jobs    Jobs
	// Metrics serves GET /metrics (Prometheus text format); nil: 404.
	Metrics http.Handler
	// UI, if set, serves the page: GET / and GET /ui/...
	UI http.Handler

	Parallel     int           // generations running at once (default 1)
	MaxQueue     int           // generations waiting for a slot (default 64); -1 = none
	MaxBodyBytes int64         // request body limit (default 8 MiB)
	APIKey       string        // required when set: "Authorization: Bearer KEY", Anthropic's "x-api-key: KEY" or HTTP Basic auth with KEY as the password
	ReadTimeout  time.Duration // for headers and for the body (default 30 s)
	WriteTimeout time.Duration // for each write of a response (default 60 s)
	// ShutdownGrace is how long running jobs may take to finish on
	// shutdown before they are cancelled (default 10 s).
	ShutdownGrace time.Duration
	// DefaultKeepAlive applies when a request names none (the backend's
	// default when 0).
	DefaultKeepAlive time.Duration
	// DefaultCtx is the context a request that names none gets (serve's
	// --ctx); 0: the backend's default, min(trained context, 4096).
	DefaultCtx int

	// AllowOrigins are the origins whose web pages may use the server
	// besides its own (the web UI) and the pages and apps of this machine
	// (see guard.go): "https://app.example", patterns with "*" for any
	// part ("http://192.168.1.20:*", "chrome-extension://*"), "null", or
	// "*" for every origin.
	AllowOrigins []string
	// MaxBlobBytes bounds one upload to /api/blobs (default 64 GiB).
	MaxBlobBytes int64
	// InputDir is ComfyUI's input folder: the pictures POST /upload/image
	// keeps for LoadImage nodes (default $GLASSBOX_HOME/input). An upload
	// is bounded by MaxBodyBytes.
	InputDir string

	Logger *slog.Logger
}

// Server is glassbox's HTTP server. Create it with New, serve with Serve,
// stop with Shutdown.
type Server struct {
	cfg     Config
	origins originPatterns
	mux     *http.ServeMux
	queue   *queue
	log     *slog.Logger
	started time.Time

	// base is the context of native jobs: it ends when Shutdown gives up
	// waiting for them, its cause saying so (the jobs' reason).
	base       context.Context
	cancelBase context.CancelCauseFunc

	mu      sync.Mutex
	closing bool
	jobs    sync.WaitGroup   // running generations (all APIs)
	streams map[*stream]bool // open event streams, closed on shutdown
	httpSrv *http.Server

	a1111    a1111State // AUTOMATIC1111's API: its checkpoint and newest job
	comfyHub comfyHub   // ComfyUI's API: prompts to their clients' sockets
}

// stream is one open event stream (SSE or NDJSON) that shutdown must end.
type stream struct{ cancel context.CancelFunc }

// New checks cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil || cfg.Jobs == nil {
		return nil, errors.New("deliver: server needs a Backend and a Jobs manager")
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	switch {
	case cfg.MaxQueue == 0:
		cfg.MaxQueue = 64
	case cfg.MaxQueue < 0:
		cfg.MaxQueue = 0
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 8 << 20
	}
	if cfg.MaxBlobBytes <= 0 {
		cfg.MaxBlobBytes = 64 << 30
	}
	if cfg.InputDir == "" {
		cfg.InputDir = filepath.Join(home.Home(), "input")
	}
	origins, err := parseOriginPatterns(cfg.AllowOrigins)
	if err != nil {
		return nil, err
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 60 * time.Second
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, origins: origins, queue: newQueue(cfg.Parallel, cfg.MaxQueue), log: cfg.Logger,
		started: time.Now(), streams: map[*stream]bool{}}
	if origins.any() {
		s.log.Warn("every origin is allowed: any web page this machine's browsers open can use this server " +
			"(its models, jobs, journal and downloads)")
	}
	s.base, s.cancelBase = context.WithCancelCause(context.Background())
	s.routes()
	return s, nil
}

// Handler returns the server's HTTP handler (routes, auth, panic recovery).
func (s *Server) Handler() http.Handler { return s.wrap(s.mux) }

// CheckBind refuses to listen beyond loopback without an API key.
func CheckBind(addr, apiKey string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("deliver: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if apiKey == "" {
		return fmt.Errorf("deliver: refusing to listen on %s without an API key: "+
			"anyone who can reach it could run models (set --api-key or GLASSBOX_API_KEY, or bind 127.0.0.1)", addr)
	}
	return nil
}

// Serve accepts connections on l until Shutdown. It returns
// http.ErrServerClosed after a shutdown.
func (s *Server) Serve(l net.Listener) error {
	if err := CheckBind(l.Addr().String(), s.cfg.APIKey); err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(l net.Listener) context.Context { return withListener(context.Background(), l.Addr().String()) },
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.httpSrv = hs
	s.mu.Unlock()
	return hs.Serve(l)
}

// Shutdown stops the server gracefully: it stops admitting work (new
// requests get 503), ends open event streams (clients reconnect and resume
// from Last-Event-ID later), lets running generations finish for up to
// ShutdownGrace (or until ctx ends), cancels the rest (their jobs end as
// cancelled in the journal), and closes the listener and idle connections.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	hs := s.httpSrv
	for st := range s.streams {
		st.cancel()
	}
	s.mu.Unlock()
	s.queue.close()

	done := make(chan struct{})
	go func() { s.jobs.Wait(); close(done) }()
	grace := time.NewTimer(s.cfg.ShutdownGrace)
	defer grace.Stop()
	reason := fmt.Sprintf("server shutting down: the %s grace for running jobs ended", s.cfg.ShutdownGrace)
	select {
	case <-done:
	case <-grace.C:
		s.log.Warn("shutdown: grace period over, cancelling running jobs", "grace", s.cfg.ShutdownGrace)
	case <-ctx.Done():
		reason = "server shutting down: its shutdown was cut short (" + context.Cause(ctx).Error() + ")"
	}
	s.cancelBase(errors.New(reason))
	<-done // cancelled generations stop within one step
	if hs == nil {
		return nil
	}
	return hs.Shutdown(ctx)
}

// addStream registers an open event stream; it fails once shutting down.
func (s *Server) addStream(cancel context.CancelFunc) (*stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, ErrShuttingDown
	}
	st := &stream{cancel: cancel}
	s.streams[st] = true
	return st, nil
}

func (s *Server) removeStream(st *stream) {
	s.mu.Lock()
	delete(s.streams, st)
	s.mu.Unlock()
}

// wrap adds panic recovery, the browser guard (guard.go), authentication
// and request logging.
func (s *Server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				s.writeError(w, r, &Error{Status: http.StatusInternalServerError, Stage: "deliver",
					Code: "internal", Message: fmt.Sprintf("internal error (a bug in glassbox): %v", v)})
			}
		}()
		securityHeaders(w.Header())
		if e := s.checkHost(r); e != nil {
			s.refuse(w, r, e)
			return
		}
		if preflight, e := s.checkOrigin(w, r); e != nil || preflight {
			if e != nil {
				s.refuse(w, r, e)
			}
			return
		}
		if s.cfg.APIKey != "" && !public(r) && !s.authorized(r) {
			s.unauthorized(w, r)
			return
		}
		if e := checkContentType(r); e != nil {
			s.refuse(w, r, e)
			return
		}
		start := time.Now()
		h.ServeHTTP(w, r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "ms", time.Since(start).Milliseconds())
	})
}

// public reports whether r may go without the API key: the health check
// and the web page's static files (the page asks for the key and sends it
// with every API call it makes).
func public(r *http.Request) bool {
	if r.URL.Path == "/healthz" {
		return true
	}
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/"))
}

// authorized checks the API key: "Authorization: Bearer KEY", Anthropic's
// "x-api-key: KEY", HTTP Basic auth with the key as the password and any
// user name (AUTOMATIC1111's clients, Open WebUI's "API auth" user:KEY),
// or for a job's event stream, its images and its video the access_token
// query parameter, since a browser's EventSource, <img> and <video> cannot
// set headers. Every form is compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		if _, password, basic := r.BasicAuth(); basic {
			key, ok = password, true
		}
	}
	if !ok && r.Header.Get("X-Api-Key") != "" { // Anthropic's clients
		key, ok = r.Header.Get("X-Api-Key"), true
	}
	if !ok && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/jobs/") &&
		(strings.HasSuffix(r.URL.Path, "/events") || strings.Contains(r.URL.Path, "/images/") || strings.HasSuffix(r.URL.Path, "/video")) {
		key, ok = r.URL.Query().Get("access_token"), true
	}
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.cfg.APIKey)) == 1
}

// unauthorized answers a request without the API key: 401, its
// WWW-Authenticate challenging for a Bearer key and, to a client that is
// not a browser, for Basic auth too (a browser that reads a Basic
// challenge opens its own login dialog over the web UI's key prompt).
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("WWW-Authenticate", `Bearer realm="glassbox"`)
	if !fromBrowser(r) {
		h.Add("WWW-Authenticate", `Basic realm="glassbox", charset="UTF-8"`)
	}
	s.writeError(w, r, &Error{Status: http.StatusUnauthorized, Stage: "deliver", Code: "unauthorized",
		Message: "missing or wrong API key",
		Hint:    "send Authorization: Bearer KEY, or HTTP Basic auth with the key as the password (any user name)"})
}

// writeError renders e in the dialect of the endpoint r was sent to.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *Error) {
	switch dialectOf(r.URL.Path) {
	case dialectOllama:
		writeOllamaError(w, e)
	case dialectOpenAI:
		writeOpenAIError(w, e)
	case dialectAnthropic:
		writeAnthropicError(w, e)
	case dialectA1111:
		writeA1111Error(w, e)
	default:
		writeNativeError(w, e)
	}
}

type dialect int

const (
	dialectNative dialect = iota
	dialectOllama
	dialectOpenAI
	dialectAnthropic
	dialectA1111
)

func dialectOf(path string) dialect {
	switch {
	case strings.HasPrefix(path, "/api/"):
		return dialectOllama
	case strings.HasPrefix(path, "/sdapi/"):
		return dialectA1111
	case path == "/v1/messages" || strings.HasPrefix(path, "/v1/messages/"):
		return dialectAnthropic
	case strings.HasPrefix(path, "/v1/chat/"), strings.HasPrefix(path, "/v1/completions"), path == "/v1/embeddings",
		strings.HasPrefix(path, "/v1/images/"),
		path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"):
		return dialectOpenAI
	}
	return dialectNative
}
