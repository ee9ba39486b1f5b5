package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
)

// DefaultHFEndpoint is where hf.co/OWNER/REPO references resolve;
// GLASSBOX_HF_ENDPOINT (or PullOptions.HFEndpoint) overrides it.
const DefaultHFEndpoint = "https://huggingface.co"

// PullOptions configures a download. The zero value works.
type PullOptions struct {
	Name       string // store name; derived from the file when empty
	HFEndpoint string // overrides GLASSBOX_HF_ENDPOINT / DefaultHFEndpoint
	// OllamaRegistry overrides GLASSBOX_OLLAMA_REGISTRY /
	// DefaultOllamaRegistry for names of Ollama's registry.
	OllamaRegistry string
	Token          string                        // bearer token; defaults to $HF_TOKEN
	Client         *http.Client                  // defaults to http.DefaultClient
	Progress       func(done, total int64)       // called as bytes arrive (total -1 if unknown)
	Logf           func(format string, a ...any) // notes such as "resuming at byte N"
	// Contact, when set, is called with a host (host[:port]) before the
	// first request to it — redirects followed included — so that a user
	// is told what is contacted before it is.
	Contact func(host string)

	contacted map[string]bool // hosts already passed to Contact
}

// PullError is a failed download with its URL and, for HTTP failures, the
// status code.
type PullError struct {
	URL    string
	Status int
	Err    error
}

func (e *PullError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("pull %s: HTTP %d: %v", e.URL, e.Status, e.Err)
	}
	return fmt.Sprintf("pull %s: %v", e.URL, e.Err)
}
func (e *PullError) Unwrap() error { return e.Err }

// Stage reports the pipeline stage a pull belongs to.
func (e *PullError) Stage() string { return "load" }

var hfRef = regexp.MustCompile(`^(?:https?://)?(?:hf\.co|huggingface\.co)/([^/:]+)/([^/:]+)(?::(.+))?$`)

// Pull downloads a model into the store. ref is a URL,
// hf.co/OWNER/REPO[:FILE-or-QUANT] (a .gguf file name picks that file, a
// quantization name (Q4_K_M) picks the repository's file with that name in
// it, and nothing picks Q4_K_M, or the only GGUF file), or a name of
// Ollama's registry (llama3.2:1b; see pullOllama).
//
// An interrupted download resumes from its partial file with an HTTP
// Range request; the file is verified against the SHA-256 the server
// publishes (Hugging Face's X-Linked-Etag, or an ETag that is a SHA-256)
// and renamed into place only when complete.
func (s *Store) Pull(ctx context.Context, ref string, o PullOptions) (Entry, error) {
	o.defaults()
	if IsOllamaName(ref) {
		o.Token = "" // Hugging Face's token is not the registry's
		return s.pullOllama(ctx, ref, &o)
	}
	src, err := resolveRef(ctx, ref, &o)
	if err != nil {
		return Entry{}, err
	}
	name := o.Name
	if name == "" {
		name = NameFor(src)
	}
	if err := CheckName(name); err != nil {
		return Entry{}, err
	}
	if _, err := os.Stat(s.manifestPath(name)); err == nil {
		return Entry{}, fmt.Errorf("model %q already exists (remove it first with 'glassbox rm %s')", name, name)
	}
	part := s.partPath(name, "part")
	want, size, err := s.probe(ctx, src, &o)
	if err != nil {
		return Entry{}, err
	}
	if err := s.download(ctx, src, part, size, &o); err != nil {
		return Entry{}, err
	}
	return s.finish(part, want, "server says", Entry{Name: name, Source: src, Ref: ref})
}

// finish checks a complete download, part, against the SHA-256 its source
// published (want; "" when none, said: who published it) and as a GGUF
// file, and commits it as e (its name, source, reference and profile set).
// A file that fails is removed.
func (s *Store) finish(part, want, said string, e Entry) (Entry, error) {
	sum, n, err := atomicfile.SHA256(part)
	if err != nil {
		return Entry{}, err
	}
	if want != "" && sum != want {
		os.Remove(part)
		return Entry{}, &PullError{URL: e.Source, Err: fmt.Errorf("SHA-256 mismatch: got %s, %s %s (partial file removed; pull again)", sum, said, want)}
	}
	if g, err := gguf.Open(part); err != nil {
		os.Remove(part)
		return Entry{}, &PullError{URL: e.Source, Err: fmt.Errorf("downloaded file is not a usable GGUF: %w", err)}
	} else {
		g.Close()
	}
	e.Bytes, e.SHA256 = n, sum
	return s.commit(part, s.modelPath(e.Name), e)
}

// ResolveRef turns a reference (a URL, or hf.co/OWNER/REPO[:FILE-or-QUANT])
// into the URL of one GGUF file, without downloading it.
func ResolveRef(ctx context.Context, ref string, o PullOptions) (string, error) {
	o.defaults()
	return resolveRef(ctx, ref, &o)
}

// IsRef reports whether s is a remote reference rather than a path or name.
func IsRef(s string) bool {
	return hfRef.MatchString(s) || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func resolveRef(ctx context.Context, ref string, o *PullOptions) (string, error) {
	m := hfRef.FindStringSubmatch(ref)
	if m == nil {
		u, err := url.Parse(ref)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("pull: %q is neither an http(s) URL, hf.co/OWNER/REPO[:FILE-or-QUANT] nor a name of Ollama's registry (llama3.2:1b)", ref)
		}
		return ref, nil
	}
	owner, repo, sel := m[1], m[2], m[3]
	base := strings.TrimRight(o.HFEndpoint, "/")
	if strings.HasSuffix(strings.ToLower(sel), ".gguf") {
		return fmt.Sprintf("%s/%s/%s/resolve/main/%s", base, owner, repo, sel), nil
	}
	files, err := listRepo(ctx, fmt.Sprintf("%s/api/models/%s/%s", base, owner, repo), o)
	if err != nil {
		return "", err
	}
	file, err := pickFile(files, sel)
	if err != nil {
		return "", fmt.Errorf("pull hf.co/%s/%s: %w", owner, repo, err)
	}
	return fmt.Sprintf("%s/%s/%s/resolve/main/%s", base, owner, repo, file), nil
}

func (o *PullOptions) defaults() {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Token == "" {
		o.Token = os.Getenv("HF_TOKEN")
	}
	if o.HFEndpoint == "" {
		o.HFEndpoint = os.Getenv("GLASSBOX_HF_ENDPOINT")
	}
	if o.HFEndpoint == "" {
		o.HFEndpoint = DefaultHFEndpoint
	}
	o.OllamaRegistry = registryFromEnv(o.OllamaRegistry)
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.contacted == nil {
		o.contacted = map[string]bool{}
	}
}

// contact reports host to Contact the first time it is to be asked.
func (o *PullOptions) contact(host string) {
	if o.Contact == nil || o.contacted[host] {
		return
	}
	if o.contacted == nil {
		o.contacted = map[string]bool{}
	}
	o.contacted[host] = true
	o.Contact(host)
}

// registryFromEnv is the Ollama registry to ask: r when given, else
// GLASSBOX_OLLAMA_REGISTRY, else Ollama's.
func registryFromEnv(r string) string {
	if r == "" {
		r = os.Getenv("GLASSBOX_OLLAMA_REGISTRY")
	}
	if r == "" {
		r = DefaultOllamaRegistry
	}
	return r
}

// pickFile chooses a GGUF file by quantization name.
func pickFile(files []string, quant string) (string, error) {
	var ggufs []string
	for _, f := range files {
		if strings.HasSuffix(strings.ToLower(f), ".gguf") {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) == 0 {
		return "", errors.New("the repository has no .gguf files")
	}
	want := quant
	if want == "" {
		if len(ggufs) == 1 {
			return ggufs[0], nil
		}
		want = "Q4_K_M"
	}
	var hits []string
	for _, f := range ggufs {
		if strings.Contains(strings.ToUpper(f), strings.ToUpper(want)) {
			hits = append(hits, f)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return "", fmt.Errorf("no .gguf file matches %q (files: %s)", want, strings.Join(ggufs, ", "))
	}
	return "", fmt.Errorf("%q matches several files (%s): name one", want, strings.Join(hits, ", "))
}

func listRepo(ctx context.Context, u string, o *PullOptions) ([]string, error) {
	resp, err := o.get(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&info); err != nil {
		return nil, &PullError{URL: u, Err: fmt.Errorf("bad repository listing: %w", err)}
	}
	var files []string
	for _, sb := range info.Siblings {
		files = append(files, sb.RFilename)
	}
	return files, nil
}

func (o *PullOptions) do(ctx context.Context, method, u string, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, &PullError{URL: u, Err: err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+o.Token)
	}
	req.Header.Set("User-Agent", "glassbox")
	c := *o.Client // a redirect to another host is announced before it is followed
	follow := c.CheckRedirect
	c.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if follow != nil {
			if err := follow(r, via); err != nil {
				return err
			}
		} else if len(via) >= 10 { // net/http's own limit
			return errors.New("stopped after 10 redirects")
		}
		o.contact(r.URL.Host)
		return nil
	}
	o.contact(req.URL.Host)
	resp, err := c.Do(req)
	if err != nil {
		return nil, &PullError{URL: u, Err: err}
	}
	return resp, nil
}

// get is a GET of u whose answer must be 200 OK; any other is a
// PullError with the status (its body closed).
func (o *PullOptions) get(ctx context.Context, u string, hdr http.Header) (*http.Response, error) {
	resp, err := o.do(ctx, http.MethodGet, u, hdr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, statusError(u, resp)
	}
	return resp, nil
}

func statusError(u string, resp *http.Response) error {
	var why string
	switch resp.StatusCode {
	case http.StatusNotFound:
		why = "not found: check the owner, repository and file name"
	case http.StatusUnauthorized, http.StatusForbidden:
		why = "access denied: the repository may be gated or private; set HF_TOKEN"
	case http.StatusRequestedRangeNotSatisfiable:
		why = "the server refused to resume"
	default:
		why = http.StatusText(resp.StatusCode)
	}
	return &PullError{URL: u, Status: resp.StatusCode, Err: errors.New(why)}
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// probe asks for the file's size and published SHA-256 without following
// redirects: Hugging Face answers a resolve URL with a redirect that
// carries X-Linked-Etag (the LFS SHA-256) and X-Linked-Size.
func (s *Store) probe(ctx context.Context, u string, o *PullOptions) (sum string, size int64, err error) {
	c := *o.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	oc := *o
	oc.Client = &c
	resp, err := oc.do(ctx, http.MethodHead, u, nil)
	if err != nil {
		return "", -1, err
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return "", -1, statusError(u, resp)
	}
	size = resp.ContentLength
	if v := resp.Header.Get("X-Linked-Size"); v != "" {
		fmt.Sscan(v, &size)
	}
	for _, h := range []string{"X-Linked-Etag", "Etag"} {
		v := strings.Trim(strings.TrimPrefix(resp.Header.Get(h), "W/"), `"`)
		if sha256RE.MatchString(v) {
			return v, size, nil
		}
	}
	return "", size, nil
}

// download fetches u into part, resuming from what part already holds.
func (s *Store) download(ctx context.Context, u, part string, size int64, o *PullOptions) error {
	have := int64(0)
	if st, err := os.Stat(part); err == nil {
		have = st.Size()
	}
	if size > 0 && have > size {
		os.Remove(part)
		have = 0
	}
	if free, ok := freeBytes(filepath.Dir(part)); ok && size > 0 && size-have > free {
		return &PullError{URL: u, Err: fmt.Errorf("disk full: the model needs %d more bytes, %d are free in %s", size-have, free, filepath.Dir(part))}
	}
	if size > 0 && have == size {
		return nil
	}
	hdr := http.Header{}
	if have > 0 {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", have))
		o.Logf("resuming at byte %d of %d", have, size)
	}
	resp, err := o.do(ctx, http.MethodGet, u, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusOK:
		if have > 0 {
			o.Logf("server ignored the range request; starting over")
		}
		have = 0
		flags |= os.O_TRUNC
	default:
		return statusError(u, resp)
	}
	total := size
	if total <= 0 && resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return err
	}
	pw := &progressWriter{w: f, done: have, total: total, fn: o.Progress}
	_, cerr := io.Copy(pw, resp.Body)
	serr := f.Sync()
	if err := f.Close(); cerr == nil && serr == nil {
		cerr = err
	}
	if cerr == nil {
		cerr = serr
	}
	if cerr != nil {
		return &PullError{URL: u, Err: fmt.Errorf("%w (after %d of %d bytes; run the same pull again to resume)", diskError(cerr), pw.done, total)}
	}
	if total > 0 && pw.done != total {
		return &PullError{URL: u, Err: fmt.Errorf("connection ended after %d of %d bytes; run the same pull again to resume", pw.done, total)}
	}
	return nil
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	fn          func(done, total int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.fn != nil {
		p.fn(p.done, p.total)
	}
	return n, err
}

// HashString returns the hex SHA-256 of data (for tests and callers that
// hold small files in memory).
func HashString(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
