package server

import (
	"context"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// What a web page may ask of the server. A browser sends requests to any
// address a page names, so without these checks every page the user opens
// could drive a server on 127.0.0.1: a "simple" cross-origin POST
// (text/plain, a form) needs no CORS preflight, and a DNS-rebinding page
// (its own name resolved to 127.0.0.1) is same-origin with the server as
// far as the browser knows. The guard, before authentication and routing:
//
//   - on a loopback listener, answers only a Host that is a loopback name
//     or address (what a rebinding page cannot send); beyond loopback, where
//     an API key is required, any Host, as Ollama's server does;
//   - answers a request with an Origin only when that origin is the
//     server's own (the web UI), a page or app on this machine
//     (defaultOrigin) or allowed by Config.AllowOrigins, with CORS headers
//     for the last two; GETs too, so no page reads prompts and outputs;
//   - answers CORS preflights (OPTIONS) of allowed origins;
//   - requires a JSON content type of a browser's request body, so a page
//     cannot send JSON as one of the types that skip the preflight
//     (multipart forms too on the upload endpoints, multipartPaths).
//
// Every response also says it may not be framed (clickjacking) or sniffed.

// listenerKey is the context key of the address a request's listener has
// (set by Serve).
type listenerKey struct{}

func withListener(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, listenerKey{}, addr)
}

// listenerAddr is the address the server listens on for r: Serve's
// listener, else (a Handler mounted in another http.Server) the
// connection's local address; "" when neither is known (a handler called
// directly, as in tests).
func listenerAddr(r *http.Request) string {
	if a, ok := r.Context().Value(listenerKey{}).(string); ok {
		return a
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return ""
}

// loopbackAddr reports whether a listener's address is on loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback()
	}
	return strings.EqualFold(host, "localhost")
}

// loopbackHost reports whether host (a Host header or an origin's host,
// with or without a port) names this machine's loopback interface:
// localhost, a name under .localhost (RFC 6761 §6.3; browsers resolve
// them to loopback themselves), an address in 127.0.0.0/8 or ::1, or the
// unspecified address (which connects to this machine). None of these is
// a name a DNS-rebinding page can have.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsUnspecified()
}

// checkHost refuses, on a loopback listener, a Host that is not a loopback
// name or address. An empty Host (HTTP/1.0) is no browser's.
func (s *Server) checkHost(r *http.Request) *Error {
	addr := listenerAddr(r)
	if addr == "" || !loopbackAddr(addr) || r.Host == "" || loopbackHost(r.Host) {
		return nil
	}
	_, port, _ := net.SplitHostPort(addr)
	return &Error{Status: http.StatusForbidden, Stage: "deliver", Code: "forbidden_host",
		Message: fmt.Sprintf("Host %q is not a loopback name or address: this server listens on %s and answers only "+
			"localhost, *.localhost and loopback addresses (a foreign Host is how a DNS-rebinding page reaches it)", r.Host, addr),
		Hint: fmt.Sprintf("use http://127.0.0.1:%s or http://localhost:%s; a reverse proxy must send Host: localhost:%s", port, port, port)}
}

// defaultOriginSchemes are schemes only local programs' pages have:
// desktop apps (Electron's app:// and file://, Tauri's tauri://) and VS
// Code's webviews, as Ollama allows them (its envconfig.Origins). A
// browser sends "null", never "file://", for a file it opened.
var defaultOriginSchemes = []string{"app", "file", "tauri", "vscode-webview"}

// defaultOrigin reports whether an origin is allowed without being named:
// a page served from this machine (http or https on a loopback name or
// address, any port) or a local app's.
func defaultOrigin(scheme, host string) bool {
	for _, s := range defaultOriginSchemes {
		if scheme == s {
			return true
		}
	}
	return (scheme == "http" || scheme == "https") && loopbackHost(host)
}

// parseOrigin splits an Origin (RFC 6454 §7: scheme "://" host [":"
// port], lower-cased) into its scheme and host; ok is false for anything
// else ("null", a path, user info, spaces).
func parseOrigin(origin string) (scheme, host string, ok bool) {
	scheme, host, ok = strings.Cut(strings.ToLower(origin), "://")
	if !ok || !validScheme(scheme) || strings.ContainsAny(host, "/?#@ \t\\") {
		return "", "", false
	}
	if (scheme == "http" || scheme == "https") && host == "" {
		return "", "", false
	}
	if h, port, err := net.SplitHostPort(host); err == nil {
		if h == "" || port == "" || strings.Trim(port, "0123456789") != "" {
			return "", "", false
		}
	} else if strings.Contains(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ":") && !strings.HasPrefix(host, "[") {
		return "", "", false
	}
	return scheme, host, true
}

// validScheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) (RFC 3986 §3.1).
func validScheme(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789+-.") == ""
}

// originPatterns are the origins Config.AllowOrigins names: exact ones,
// patterns in which "*" stands for any run of characters but "/"
// ("http://localhost:*", "https://*.example.com", "chrome-extension://*"),
// "null" (sandboxed pages and files: only when named), and "*" for any.
type originPatterns []string

// OriginsEnv is the environment variable glassbox serve adds allowed
// origins from (comma-separated), as Ollama reads OLLAMA_ORIGINS.
const OriginsEnv = "GLASSBOX_ORIGINS"

// CheckOrigins checks origins as Config.AllowOrigins takes them.
func CheckOrigins(origins []string) error {
	_, err := parseOriginPatterns(origins)
	return err
}

// parseOriginPatterns checks each allowed origin.
func parseOriginPatterns(list []string) (originPatterns, error) {
	var out originPatterns
	for _, o := range list {
		p := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
		if p != "*" && p != "null" {
			// A pattern is an origin once its stars are digits.
			if _, _, ok := parseOrigin(strings.ReplaceAll(p, "*", "0")); !ok {
				return nil, fmt.Errorf("deliver: allowed origin %q: an origin is scheme://host[:port], such as "+
					"https://app.example or http://localhost:5173, with * for any part (http://localhost:*), or * for every origin", o)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func (ps originPatterns) any() bool {
	for _, p := range ps {
		if p == "*" {
			return true
		}
	}
	return false
}

// match reports whether origin (lower-cased) is allowed by a pattern.
func (ps originPatterns) match(origin string) bool {
	for _, p := range ps {
		if p == "*" || p == origin || strings.Contains(p, "*") && globMatch(p, origin) {
			return true
		}
	}
	return false
}

// globMatch matches s against pattern, where each "*" stands for any run
// of characters without "/".
func globMatch(pattern, s string) bool {
	head, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == s
	}
	if !strings.HasPrefix(s, head) {
		return false
	}
	s = s[len(head):]
	for i := 0; i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
		if i < len(s) && s[i] == '/' {
			return false
		}
	}
	return false
}

// corsMethods are what an allowed origin may send after its preflight.
const corsMethods = "GET, HEAD, POST, DELETE, OPTIONS"

// corsExposed are the response headers an allowed origin's page may read.
const corsExposed = "Location, Retry-After, X-Glassbox-Job, WWW-Authenticate"

// checkOrigin decides whether r's page may use the server; an allowed
// cross-origin request gets its CORS headers on w. It reports whether r
// is a preflight (answered here: the caller is done).
func (s *Server) checkOrigin(w http.ResponseWriter, r *http.Request) (preflight bool, e *Error) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		// No Origin: curl, an SDK, or a browser's own navigation or
		// subresource load (a GET). A browser that left Origin out of a
		// cross-site request that changes something still says where it
		// came from.
		site := r.Header.Get("Sec-Fetch-Site")
		if (site == "cross-site" || site == "same-site") && !safeMethod(r.Method) {
			return false, &Error{Status: http.StatusForbidden, Stage: "deliver", Code: "forbidden_origin",
				Message: fmt.Sprintf("a %s request from another site's page (Sec-Fetch-Site: %s) without an Origin is refused", r.Method, site)}
		}
		return false, nil
	}
	scheme, host, ok := parseOrigin(origin)
	sameOrigin := ok && strings.EqualFold(host, r.Host)
	if !sameOrigin {
		allowed := s.origins.match(strings.ToLower(origin)) || ok && defaultOrigin(scheme, host)
		if !allowed {
			return false, &Error{Status: http.StatusForbidden, Stage: "deliver", Code: "forbidden_origin",
				Message: fmt.Sprintf("a request from a page of origin %s is refused: pages of other origins may not use this server", origin),
				Hint:    fmt.Sprintf("to allow them, start glassbox serve with --allow-origin %s or add it to %s", origin, OriginsEnv)}
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposed)
	}
	w.Header().Add("Vary", "Origin")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false, nil
	}
	// A preflight: what the page may send. Its headers are the page's
	// own choice (SDKs send many), so every one it asks for is allowed.
	h := w.Header()
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
		h.Set("Access-Control-Allow-Headers", rh)
	}
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	h.Set("Access-Control-Max-Age", "7200") // Chrome's cap; a refusal is not cached
	w.WriteHeader(http.StatusNoContent)
	return true, nil
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// fromBrowser reports whether r was sent by a browser on a page's behalf:
// browsers send Origin with every POST and Sec-Fetch-Site with every
// request, and a page's script can set neither.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != ""
}

// multipartPaths are the endpoints whose body is a multipart form (a
// picture and its fields): ComfyUI's upload, which its frontend sends
// from its page, and OpenAI's image edit.
var multipartPaths = map[string]bool{
	"/upload/image":     true,
	"/api/upload/image": true,
	"/v1/images/edits":  true,
}

// checkContentType refuses a browser's request body that is not declared
// JSON: text/plain, forms and no type at all are what a page may send
// anywhere without a preflight. Other clients are read as JSON whatever
// they declare, as Ollama reads them (curl -d declares a form). Uploads to
// /api/blobs are bytes. The upload endpoints (multipartPaths) take
// multipart/form-data from a page too, and only that besides JSON. wrap
// calls this after checkOrigin, so the page is then the server's own or
// an allowed origin's: a multipart POST needs no preflight, and
// checkOrigin is what refuses one from any other page (403), before a
// byte of the body is read.
func checkContentType(r *http.Request) *Error {
	if safeMethod(r.Method) || r.ContentLength == 0 || !fromBrowser(r) || strings.HasPrefix(r.URL.Path, "/api/blobs/") {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	upload := multipartPaths[r.URL.Path]
	if err == nil && upload && mt == "multipart/form-data" {
		return nil
	}
	what := fmt.Sprintf("Content-Type %q", ct)
	if ct == "" {
		what = "no Content-Type"
	}
	want := "send it as Content-Type: application/json"
	if upload {
		want = "send the upload as Content-Type: multipart/form-data"
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Stage: "deliver", Code: "unsupported_media_type",
		Message: fmt.Sprintf("a request body from a web page with %s is refused: %s", what, want)}
}

// refuse answers a request the guard refuses, and logs it for whoever
// wonders why their page gets a 403.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, e *Error) {
	s.log.Info("refused a request", "method", r.Method, "path", r.URL.Path, "host", r.Host,
		"origin", r.Header.Get("Origin"), "code", e.Code)
	s.writeError(w, r, e)
}

// securityHeaders are on every response: never framed (clickjacking), never
// sniffed into another type. The web UI's pages set a fuller
// Content-Security-Policy of their own, frame-ancestors included.
func securityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "frame-ancestors 'none'")
}
