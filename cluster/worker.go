package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/server"
)

// WorkerConfig is one worker.
type WorkerConfig struct {
	Name string // unique in the cluster
	// Models restricts the jobs taken to these of the backend's models
	// (nil: all of them).
	Models []string
	// Backend runs the jobs: the same backend glassbox serve runs locally.
	Backend server.Backend
	// Parallel is how many jobs run at once (default 1).
	Parallel int
	// MemBudget is the worker's --mem-budget (0: none), announced.
	MemBudget int64
	// AffinityDelay is how long a job of a model this worker has not
	// loaded waits, once queued, before the worker takes it, so a worker
	// with the model resident takes it first (0: DefaultAffinityDelay;
	// negative: none, the worker always waits on the queue).
	AffinityDelay time.Duration
	// affinityWait, set by tests, replaces the sleep of AffinityDelay.
	affinityWait func(ctx context.Context, model string)
	Logger       *slog.Logger
}

// Worker takes jobs of its models from the queue and runs them.
type Worker struct {
	cfg     WorkerConfig
	nc      *nats.Conn
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	log     *slog.Logger
	models  []server.ModelInfo
	slots   chan struct{}
	running atomic.Int32
	started time.Time
	device  *plan.Device // the machine, announced (nil: unknown)
}

// NewWorker checks the models the worker takes jobs for and sets up the
// stream and bucket (created if the front has not yet).
func NewWorker(ctx context.Context, nc *nats.Conn, cfg WorkerConfig) (*Worker, error) {
	if cfg.Name == "" || strings.ContainsAny(cfg.Name, " \t\r\n.*>") {
		return nil, fmt.Errorf("cluster: worker name %q: want a non-empty name without spaces, '.', '*' or '>'", cfg.Name)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	all, err := cfg.Backend.Models(ctx)
	if err != nil {
		return nil, err
	}
	var models []server.ModelInfo
	var names []string
	for _, m := range all {
		names = append(names, m.Name)
		if cfg.Models == nil || slices.Contains(cfg.Models, m.Name) {
			models = append(models, m)
		}
	}
	for _, want := range cfg.Models {
		if !slices.Contains(names, want) {
			return nil, fmt.Errorf("cluster: --models: this worker has no model %q (it has: %s; 'glassbox import' adds one)",
				want, strings.Join(names, ", "))
		}
	}
	if len(models) == 0 {
		return nil, errors.New("cluster: this worker has no models to take jobs for ('glassbox import PATH' adds one to its store)")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	_, kv, err := setup(sctx, js)
	if err != nil {
		return nil, err
	}
	dev, err := plan.Local()
	if err != nil {
		cfg.Logger.Warn("cluster: this machine's memory and CPU are not announced", "err", err)
		dev = nil
	}
	return &Worker{cfg: cfg, nc: nc, js: js, kv: kv, log: cfg.Logger, models: models,
		slots: make(chan struct{}, max(cfg.Parallel, 1)), started: time.Now().UTC(), device: dev}, nil
}

// Models lists the models the worker takes jobs for.
func (w *Worker) Models() []server.ModelInfo { return w.models }

// Run announces the worker and takes jobs until ctx ends; a job running
// then is handed back to the queue (Nak) for another worker. Its entry is
// removed on the way out.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.announce(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, m := range w.models {
		cctx, cancel := context.WithTimeout(ctx, setupTimeout)
		cons, err := w.js.CreateOrUpdateConsumer(cctx, Stream, consumerConfig(m.Name))
		cancel()
		if err != nil {
			return fmt.Errorf("cluster: consumer %s for model %s: %w", Consumer(m.Name), m.Name, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.take(ctx, m.Name, cons) }()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := w.announce(ctx); err != nil && ctx.Err() == nil {
					w.log.Warn("cluster: heartbeat", "err", err)
				}
			}
		}
	}()
	wg.Wait()
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.kv.Delete(dctx, Token(w.cfg.Name))
	return nil
}

// announce puts the worker's entry in the bucket.
func (w *Worker) announce(ctx context.Context) error {
	host, _ := os.Hostname()
	info := WorkerInfo{Name: w.cfg.Name, Host: host, PID: os.Getpid(), Models: w.models,
		Running: int(w.running.Load()), Parallel: cap(w.slots), Started: w.started, Beat: time.Now().UTC(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, MemBudget: w.cfg.MemBudget}
	if d := w.device; d != nil {
		if err := d.RefreshMemory(); err != nil {
			w.log.Debug("cluster: reading this machine's memory", "err", err)
		}
		info.Cores, info.CPU, info.RAMTotal, info.RAMAvailable = d.Cores, d.CPU, d.RAMTotal, d.RAMAvailable
	}
	if rs, err := w.cfg.Backend.Running(ctx); err == nil {
		for _, r := range rs {
			info.Resident = append(info.Resident, r.Name)
			info.Loaded = append(info.Loaded, r)
		}
	}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := w.kv.Put(pctx, Token(w.cfg.Name), data); err != nil {
		return fmt.Errorf("cluster: announcing worker %s in %s: %w", w.cfg.Name, Bucket, err)
	}
	return nil
}

// DefaultAffinityDelay is how long a worker without a job's model
// resident lets that job wait for a worker with it resident.
const DefaultAffinityDelay = 500 * time.Millisecond

// coldPoll is how often a worker without a model resident looks for its
// jobs when no publish woke it (a job queued before it subscribed).
const coldPoll = 2 * time.Second

// resident reports whether model is loaded (or loading) on this worker.
func (w *Worker) resident(ctx context.Context, model string) bool {
	rs, err := w.cfg.Backend.Running(ctx)
	if err != nil {
		return false
	}
	for _, r := range rs {
		if r.Name == model {
			return true
		}
	}
	return false
}

// coldFetch is a pull by a worker that would have to load model: it
// waits until a job is published (or coldPoll passes), then the
// affinity delay, then takes a job only if one is still queued. It keeps
// no pull request waiting at the server, so a job published meanwhile
// goes to a worker whose pull is waiting: one with the model resident.
func (w *Worker) coldFetch(ctx context.Context, model string, cons jetstream.Consumer, published <-chan struct{}) (jetstream.MessageBatch, error) {
	select {
	case <-published:
	case <-time.After(coldPoll):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if w.cfg.affinityWait != nil {
		w.cfg.affinityWait(ctx, model)
	} else {
		d := w.cfg.AffinityDelay
		if d == 0 {
			d = DefaultAffinityDelay
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return cons.FetchNoWait(1)
}

// take pulls model's jobs one at a time while a slot is free: at once
// when model is resident here, after the affinity delay when not.
func (w *Worker) take(ctx context.Context, model string, cons jetstream.Consumer) {
	// A publish on the job subject wakes a worker without model resident
	// (the message itself is not used: the job is taken from the stream).
	published := make(chan struct{}, 1)
	if w.cfg.AffinityDelay >= 0 {
		sub, err := w.nc.Subscribe(JobSubject(model), func(*nats.Msg) {
			select {
			case published <- struct{}{}:
			default:
			}
		})
		if err != nil {
			w.log.Warn("cluster: watching the job subject; jobs of a model not loaded are found by polling", "model", model, "err", err)
		} else {
			defer func() { _ = sub.Unsubscribe() }()
		}
	}
	for ctx.Err() == nil {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		var batch jetstream.MessageBatch
		var err error
		if w.cfg.AffinityDelay < 0 || w.resident(ctx, model) {
			batch, err = cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		} else {
			batch, err = w.coldFetch(ctx, model, cons, published)
		}
		if err != nil {
			<-w.slots
			if ctx.Err() == nil {
				w.log.Warn("cluster: fetching a job", "model", model, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for msg := range batch.Messages() {
			w.run(ctx, msg)
		}
		<-w.slots
	}
}

// publisher sends one attempt's events.
type publisher struct {
	nc      *nats.Conn
	subject string
	attempt int
	worker  string
	mu      sync.Mutex
	seq     int64
	stage   pipeline.Stage
}

func (p *publisher) event(ev Event) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	ev.Seq, ev.Attempt, ev.Worker = p.seq, p.attempt, p.worker
	if ev.Type == EvStageStart {
		p.stage = pipeline.Stage(ev.Stage)
	}
	data, _ := json.Marshal(ev)
	return data
}

func (p *publisher) send(ev Event) { _ = p.nc.Publish(p.subject, p.event(ev)) }

// final sends the attempt's last event and waits for the front to confirm
// it, trying again a few times (the front ignores a repeat).
func (p *publisher) final(ev Event) error {
	data := p.event(ev)
	var err error
	for range 5 {
		if _, err = p.nc.Request(p.subject, data, 10*time.Second); err == nil || errors.Is(err, nats.ErrNoResponders) {
			return err
		}
	}
	return err
}

// trace is the pipeline.Trace that sends a job's stages to the front.
func (p *publisher) trace() *pipeline.Trace {
	return &pipeline.Trace{
		StageStart: func(s pipeline.Stage) { p.send(Event{Type: EvStageStart, Stage: string(s)}) },
		StageDone: func(s pipeline.Stage, st pipeline.StageStats) {
			ev := Event{Type: EvStageDone, Stage: string(s)}
			if st != (pipeline.StageStats{}) {
				ev.Stats = &st
			}
			p.send(ev)
		},
		StageSkipped: func(s pipeline.Stage, reason string) {
			p.send(Event{Type: EvStageSkipped, Stage: string(s), Reason: reason})
		},
		Progress: func(s pipeline.Stage, done, total int64) {
			p.send(Event{Type: EvProgress, Stage: string(s), Done: done, Total: total})
		},
		Token:   func(tok api.Token) { p.send(Event{Type: EvToken, Token: &tok}) },
		Warning: func(code, message string) { p.send(Event{Type: EvWarning, Code: code, Message: message}) },
		PartDone: func(s pipeline.Stage, part string, d time.Duration, st pipeline.StageStats) {
			ev := Event{Type: EvPart, Stage: string(s), Part: part, Duration: d}
			if st != (pipeline.StageStats{}) {
				ev.Stats = &st
			}
			p.send(ev)
		},
	}
}

// run runs one job message to its end.
func (w *Worker) run(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		w.log.Warn("cluster: a job message without metadata; dropped", "err", err)
		_ = msg.Term()
		return
	}
	job, err := DecodeJob(msg.Data())
	if err != nil {
		w.log.Warn("cluster: a job cannot be read; dropped", "err", err, "stream_seq", md.Sequence.Stream)
		_ = msg.Term()
		return
	}
	w.running.Add(1)
	defer w.running.Add(-1)
	attempt := int(md.NumDelivered)
	w.log.Info("cluster: job taken", "job", job.ID, "model", job.Request.Model, "attempt", attempt)
	p := &publisher{nc: w.nc, subject: EventsSubject(job.ID), attempt: attempt, worker: w.cfg.Name}

	jctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled atomic.Bool
	csub, err := w.nc.Subscribe(CancelSubject(job.ID), func(*nats.Msg) { cancelled.Store(true); cancel() })
	if err == nil {
		defer func() { _ = csub.Unsubscribe() }()
	}
	stopOnExit := context.AfterFunc(ctx, cancel) // the worker shutting down
	defer stopOnExit()
	// The lease: the message stays this worker's while it says so.
	beat := make(chan struct{})
	every := ackWait / 4 // read here: the ticker's goroutine is not waited for
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-beat:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	p.send(Event{Type: EvTaken, Duration: time.Since(job.Queued)})
	res, gerr := w.cfg.Backend.Generate(pipeline.WithTrace(jctx, p.trace()), job.Request)
	close(beat)
	switch {
	case gerr != nil && ctx.Err() != nil && !cancelled.Load():
		// Shutting down: another worker takes the job again.
		_ = msg.Nak()
		w.log.Info("cluster: job handed back (shutting down)", "job", job.ID)
		return
	case gerr == nil:
		err = p.final(Event{Type: EvResult, Result: res})
		_ = msg.Ack()
	default:
		p.mu.Lock()
		stage := p.stage
		p.mu.Unlock()
		if stage == "" {
			stage = pipeline.StagePlan
		}
		err = p.final(Event{Type: EvError, Error: errorEvent(gerr, stage)})
		_ = msg.Term() // the same job would fail the same way anywhere
	}
	if err != nil && !(cancelled.Load() && errors.Is(err, nats.ErrNoResponders)) {
		// (A front that cancelled the job stops listening at once.)
		w.log.Warn("cluster: the front did not confirm the job's end", "job", job.ID, "err", err)
	}
	w.log.Info("cluster: job ended", "job", job.ID, "ok", gerr == nil, "cancelled", cancelled.Load())
}
