// Package backend is the serving backend glassbox serve runs: it answers
// server.Backend over the real packages — the model store (and the files
// given to serve) for names, the planner for admission, the residency
// manager (sched) for the models it keeps loaded, and the engine for
// generation, embeddings and speculative decoding with a draft model — and
// it keeps the store's models: pulls, uploads, models made from models.
//
// Every request walks the house's stages: plan (plan.ForShape on the
// file's cached header, refused by plan.AdmitJob before anything loads),
// load (sched.Residency: a resident model is reused, an idle one evicted to
// make room), then the engine's encode, prefill, generate and decode. The
// residency counts what each model holds, its kept session included, so
// its figures stay true as requests of other contexts come and go.
package backend

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/engine"
	engimage "github.com/glassbox-ai/glassbox/engine/image"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/metrics"
	"github.com/glassbox-ai/glassbox/model"
	_ "github.com/glassbox-ai/glassbox/model/all" // every architecture the engine can load
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
)

// Config is what a Backend serves and how.
type Config struct {
	// Models are GGUF files served besides the store's models, each named
	// after its file (store.NameFor).
	Models []string
	// Store holds the models pulled, uploaded and made; nil: none (pulls,
	// uploads and creates are refused).
	Store *store.Store
	// Session is the defaults of every generation (context, batch,
	// threads, KV type); a request's own figures replace them.
	Session model.SessionOptions
	// Parallel is how many generations of one model are decoded together
	// (continuous batching, engine.Batcher, when above 1).
	Parallel int
	// Drafts are MODEL=DRAFT pairs: MODEL is decoded speculatively with
	// DRAFT (a file or a store name of the same vocabulary) proposing up
	// to DraftMax tokens a step (1 to 64).
	Drafts   []string
	DraftMax int
	// Device is this machine as the planner sees it (required).
	Device *plan.Device
	// Budget is the memory all resident models may take; 0: no limit
	// beyond the machine.
	Budget int64
	// KeepAlive is how long an idle model stays loaded (zero: sched's
	// default).
	KeepAlive sched.KeepAlive
	// Metrics, if set, is told which models are resident and how large.
	Metrics *metrics.Metrics
	// JobsDir is the folder image jobs keep their folders in (latents,
	// PNGs); "": jobs in the glassbox home.
	JobsDir string
	// Logger gets the residency's events (loads, evictions, expiries).
	Logger *slog.Logger
	// ResolveDraft turns a draft's argument into a file path; nil: an
	// existing file, else a name Store resolves.
	ResolveDraft func(arg string) (string, error)
	// PlanDevice resolves a plan request's device name ("local" and ""
	// are this machine); nil: plan.ParseDevice.
	PlanDevice func(name string) (*plan.Device, error)
	// Roofline is the best decode rate a plan's device allows for
	// weightBytes a token with threads workers, and what bounds it, which
	// the generate stage reports; nil: none reported.
	Roofline func(p *plan.Plan, weightBytes int64, threads int) (float64, string)
}

// Backend is server.Backend over the real packages.
type Backend struct {
	parallel int               // sequences decoded together per model
	files    map[string]string // Config.Models: name → path
	store    *store.Store      // may be nil
	dev      *plan.Device
	budget   int64
	imageMu  sync.Mutex           // taken while an image job leases its model and working memory (image.go)
	session  model.SessionOptions // defaults for every generation
	res      *sched.Residency[*served]
	metrics  *metrics.Metrics
	drafts   map[string]string // the model's resident name → the draft's file
	draftMax int
	cfg      Config
}

var _ server.Backend = (*Backend)(nil)

// New checks cfg (the files exist, the drafts fit their models) and
// returns a Backend with nothing loaded; Close unloads what it loaded.
func New(cfg Config) (*Backend, error) {
	if cfg.Device == nil {
		return nil, errors.New("plan: the backend needs the device it plans for")
	}
	b := &Backend{files: map[string]string{}, store: cfg.Store, session: cfg.Session, parallel: max(cfg.Parallel, 1),
		drafts: map[string]string{}, draftMax: cfg.DraftMax, dev: cfg.Device, budget: cfg.Budget, metrics: cfg.Metrics, cfg: cfg}
	for _, p := range cfg.Models {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		b.files[store.NameFor(abs)] = abs
	}
	if err := b.setDrafts(cfg.Drafts, cfg.Parallel); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b.res = sched.New[*served](sched.Config{Budget: cfg.Budget, KeepAlive: cfg.KeepAlive, OnEvent: func(ev sched.Event) {
		log.Info("residency", "event", ev.Kind, "model", ev.Model, "bytes", ev.Bytes, "reason", ev.Reason)
		switch ev.Kind {
		case sched.EventEvict, sched.EventExpire, sched.EventUnload:
			if b.metrics != nil {
				b.metrics.SetModelResident(ev.Model, 0)
			}
		}
	}})
	return b, nil
}

// Close unloads every resident model.
func (b *Backend) Close() { b.res.Close() }

// setDrafts checks the MODEL=DRAFT pairs before anything is loaded: both
// known, the vocabularies the same (from the files' headers), and one
// generation at a time (the batcher does not speculate).
func (b *Backend) setDrafts(pairs []string, parallel int) error {
	if len(pairs) > 0 && parallel > 1 {
		return errors.New("load: --draft: speculative decoding runs one generation at a time (--parallel 1)")
	}
	if b.draftMax < 1 || b.draftMax > 64 {
		return fmt.Errorf("--draft-max: generate: %d proposals per step is out of range (1 to 64)", b.draftMax)
	}
	for _, pair := range pairs {
		name, draft, ok := strings.Cut(pair, "=")
		if !ok || name == "" || draft == "" {
			return fmt.Errorf("load: --draft %q: want MODEL=DRAFT", pair)
		}
		name, path, err := b.lookup(name)
		if err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		name, path = b.resident(name, path)
		dpath, err := b.resolveDraft(draft)
		if err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		if err := checkDraftPair(path, dpath); err != nil {
			return fmt.Errorf("load: --draft %s: %w", pair, err)
		}
		b.drafts[name] = dpath
	}
	return nil
}

// resolveDraft is Config.ResolveDraft, by default an existing file or a
// name the store resolves.
func (b *Backend) resolveDraft(arg string) (string, error) {
	if b.cfg.ResolveDraft != nil {
		return b.cfg.ResolveDraft(arg)
	}
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	}
	if b.store == nil {
		return "", fmt.Errorf("load: model %q: no such file, and no model store", arg)
	}
	p, err := b.store.Resolve(arg)
	if err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	return p, nil
}

// checkDraftPair compares two files' vocabularies from their headers.
func checkDraftPair(path, draft string) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := gguf.Open(draft)
	if err != nil {
		return err
	}
	defer d.Close()
	return engine.CheckDraftFiles(f, d)
}

// served is a resident model: engine.Text (the path glassbox run takes
// too), whether the file has a chat template of its own, and with
// Parallel > 1 the batcher that steps its parallel streams together
// (which keeps its sessions for prompt caching itself); with Parallel 1
// the last request's session, kept for prompt caching (see
// engine.SessionCache). baseBytes is the model's memory without a session
// (the load's plan less its KV cache and buffers): the residency counts
// it plus the kept session's, so its figure stays true when a request
// with another context is kept.
type served struct {
	text      *engine.Text
	template  bool
	batch     *engine.Batcher // nil with Parallel 1
	cache     *engine.SessionCache
	draft     *engine.Text         // the draft model for this one, or nil
	draftKept *engine.SessionCache // the draft's last session, kept as cache keeps the model's
	baseBytes int64
	// With Parallel > 1: the KV caches the load planned (Parallel of
	// them) and the batcher's buffers.
	plannedKV, computeBytes int64
	// image is an image model's networks (image.go); text is nil then.
	image *engimage.Loaded
}

func (m *served) Close() {
	if m.image != nil {
		m.image.Close()
		return
	}
	if m.text == nil {
		return // an image job's working memory (image.go)
	}
	if m.batch != nil {
		m.batch.Close()
	}
	m.cache.Close()
	m.text.Close()
	if m.draft != nil {
		m.draftKept.Close()
		m.draft.Close()
	}
}

// resolve turns a request's model name into a file path. Only names the
// server knows are accepted: a client cannot make it open arbitrary paths.
func (b *Backend) resolve(name string) (string, error) {
	_, p, err := b.lookup(name)
	return p, err
}

// lookup is resolve that also returns the model's own name: a store
// model asked for by the reference it was pulled by is resident (and
// unloaded) under its store name.
func (b *Backend) lookup(name string) (canonical, path string, err error) {
	if p, ok := b.files[name]; ok {
		return name, p, nil
	}
	if b.store != nil {
		if e, err := b.store.Find(name); err == nil {
			return e.Name, e.Path, nil
		}
	}
	return "", "", pipeline.Errorf(pipeline.StageLoad, "GET /v1/models lists the models this server has",
		"model %q: %w", name, server.ErrModelNotFound)
}

// resident returns the name and path a model is held in memory under: a
// model made from another (create, copy) over the same file (a hard link)
// shares its base's residency — one copy of the weights, whichever name a
// request uses — down to the first model of the chain; any other model is
// its own.
func (b *Backend) resident(name, path string) (string, string) {
	if b.store == nil {
		return name, path
	}
	for range 16 { // a chain longer than this is not followed further
		e, err := b.store.Find(name)
		if err != nil || e.From == "" {
			return name, path
		}
		base, basePath, err := b.lookup(e.From)
		if err != nil {
			return name, path
		}
		a, aerr := os.Stat(path)
		c, cerr := os.Stat(basePath)
		if aerr != nil || cerr != nil || !os.SameFile(a, c) {
			return name, path
		}
		name, path = base, basePath
	}
	return name, path
}

// Names lists every model the backend knows, name → path: the files
// given to it, then the store's.
func (b *Backend) Names() (map[string]string, error) {
	out := map[string]string{}
	if b.store != nil {
		entries, err := b.store.List()
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		for _, e := range entries {
			out[e.Name] = e.Path
		}
	}
	for n, p := range b.files {
		out[n] = p
	}
	return out, nil
}
