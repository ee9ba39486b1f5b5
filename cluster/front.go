package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

// Front is the serving backend of a cluster's front: a text generation
// whose model a live worker holds goes to the job queue and its worker's
// events are replayed into the caller's trace; everything else is the
// local backend's (which it embeds).
type Front struct {
	server.Backend // the local backend
	nc             *nats.Conn
	js             jetstream.JetStream
	stream         jetstream.Stream
	log            *slog.Logger
	stop           context.CancelFunc
	adv            *nats.Subscription

	mu      sync.Mutex
	workers map[string]workerEntry   // bucket key → entry
	dead    map[uint64]chan struct{} // stream seq of a queued job → closed when JetStream gave up on it
}

type workerEntry struct {
	info *WorkerInfo
	at   time.Time // when the NATS server stored the entry
}

// NewFront sets up the stream and the bucket on nc, follows the workers'
// entries and wraps local. Close stops following (nc stays the caller's).
func NewFront(nc *nats.Conn, local server.Backend, log *slog.Logger) (*Front, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	st, kv, err := setup(sctx, js)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	f := &Front{Backend: local, nc: nc, js: js, stream: st, log: log, stop: stop,
		workers: map[string]workerEntry{}, dead: map[uint64]chan struct{}{}}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		stop()
		return nil, fmt.Errorf("cluster: watching bucket %s: %w", Bucket, err)
	}
	go f.follow(ctx, w)
	f.adv, err = nc.Subscribe(maxDeliveriesSubject, f.onMaxDeliveries)
	if err != nil {
		stop()
		return nil, fmt.Errorf("cluster: subscribing to %s: %w", maxDeliveriesSubject, err)
	}
	return f, nil
}

// Close stops following the workers.
func (f *Front) Close() {
	f.stop()
	_ = f.adv.Unsubscribe()
}

// follow keeps f.workers as the bucket holds them.
func (f *Front) follow(ctx context.Context, w jetstream.KeyWatcher) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue // the end of the entries held when the watch began
			}
			f.mu.Lock()
			switch e.Operation() {
			case jetstream.KeyValuePut:
				info, err := DecodeWorker(e.Value())
				if err != nil {
					f.log.Warn("cluster: a worker entry cannot be read; ignored", "key", e.Key(), "err", err)
				} else {
					if _, known := f.workers[e.Key()]; !known {
						f.log.Info("cluster: worker joined", "worker", info.Name, "host", info.Host, "models", len(info.Models))
					}
					f.workers[e.Key()] = workerEntry{info: info, at: e.Created()}
				}
			default:
				if old, ok := f.workers[e.Key()]; ok {
					f.log.Info("cluster: worker left", "worker", old.info.Name)
				}
				delete(f.workers, e.Key())
			}
			f.mu.Unlock()
		}
	}
}

// Workers returns the live workers (entries renewed within WorkerTTL).
func (f *Front) Workers() []WorkerInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []WorkerInfo
	for _, e := range f.workers {
		if time.Since(e.at) < WorkerTTL {
			out = append(out, *e.info)
		}
	}
	return out
}

// ClusterWorkers lists every worker entry the bucket holds, live or not,
// by name (server.ClusterBackend: GET /v1/cluster/workers and the workers'
// resident models in the ps lists).
func (f *Front) ClusterWorkers(context.Context) ([]server.ClusterWorker, error) {
	f.mu.Lock()
	out := make([]server.ClusterWorker, 0, len(f.workers))
	for _, e := range f.workers {
		w := e.info
		age := time.Since(e.at)
		cw := server.ClusterWorker{Name: w.Name, Host: w.Host, PID: w.PID, OS: w.OS, Arch: w.Arch, Cores: w.Cores, CPU: w.CPU,
			RAMTotal: w.RAMTotal, RAMAvailable: w.RAMAvailable, MemBudget: w.MemBudget,
			Models: slices.Clone(w.Models), Resident: slices.Clone(w.Loaded), Running: w.Running, Parallel: w.Parallel, Started: w.Started,
			Heartbeat: e.at.UTC(), HeartbeatAgeSec: age.Seconds(), Live: age < WorkerTTL}
		if cw.Models == nil {
			cw.Models = []server.ModelInfo{}
		}
		if cw.Resident == nil {
			// An entry naming its resident models without their details.
			cw.Resident = []server.RunningModel{}
			for _, name := range w.Resident {
				cw.Resident = append(cw.Resident, server.RunningModel{ModelInfo: server.ModelInfo{Name: name}})
			}
		}
		for i := range cw.Models {
			cw.Models[i].Path = "" // a path on another machine
		}
		for i := range cw.Resident {
			cw.Resident[i].Path = ""
		}
		out = append(out, cw)
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b server.ClusterWorker) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// held reports whether a live worker takes jobs for model.
func (f *Front) held(model string) bool {
	for _, w := range f.Workers() {
		if w.Holds(model) {
			return true
		}
	}
	return false
}

// Models lists the local models, then those only workers hold.
func (f *Front) Models(ctx context.Context) ([]server.ModelInfo, error) {
	out, err := f.Backend.Models(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, m := range out {
		seen[m.Name] = true
	}
	for _, w := range f.Workers() {
		for _, m := range w.Models {
			if !seen[m.Name] {
				seen[m.Name] = true
				m.Path = "" // a path on another machine
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// onMaxDeliveries wakes the job JetStream has stopped delivering.
func (f *Front) onMaxDeliveries(m *nats.Msg) {
	var adv struct {
		StreamSeq uint64 `json:"stream_seq"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil {
		f.log.Warn("cluster: a max-deliveries advisory cannot be read", "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.dead[adv.StreamSeq]; ok {
		close(ch)
		delete(f.dead, adv.StreamSeq)
	}
}

// Generate queues a generation whose model a live worker holds and
// replays its events; any other runs on the local backend.
func (f *Front) Generate(ctx context.Context, req *server.GenerateRequest) (*server.Result, error) {
	if !f.held(req.Model) {
		return f.Backend.Generate(ctx, req)
	}
	return f.remote(ctx, req)
}

// newID is a cluster job id: "c", milliseconds in base 36, 8 random
// base-36 digits (subject-safe).
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	r := strconv.FormatUint(binary.LittleEndian.Uint64(b[:])%2821109907456, 36) // 36^8
	for len(r) < 8 {
		r = "0" + r
	}
	return "c" + strconv.FormatInt(time.Now().UnixMilli(), 36) + r
}

func (f *Front) remote(ctx context.Context, req *server.GenerateRequest) (*server.Result, error) {
	r := *req
	if r.Options.Seed == nil {
		// A fixed seed makes a redelivered job sample the same tokens, so
		// the ones already streamed can be checked and not sent twice.
		s := mrand.Uint64() & math.MaxInt64
		r.Options.Seed = &s
	}
	job := Job{ID: newID(), Kind: "text", Request: &r, Queued: time.Now().UTC()}
	data, err := json.Marshal(job)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.StageQueued, "", "cluster: job cannot be encoded: %w", err)
	}
	events := make(chan *nats.Msg, 1024)
	sub, err := f.nc.ChanSubscribe(EventsSubject(job.ID), events)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.StageQueued, "", "cluster: subscribing to %s: %w", EventsSubject(job.ID), err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = sub.SetPendingLimits(-1, -1) // a job's events are never dropped for a slow front
	dead := make(chan struct{})
	ack, err := f.js.Publish(ctx, JobSubject(r.Model), data)
	if err != nil {
		return nil, pipeline.Errorf(pipeline.StageQueued, "is the cluster's NATS server up?", "cluster: queueing job %s (%d bytes) on %s: %w",
			job.ID, len(data), JobSubject(r.Model), err)
	}
	f.mu.Lock()
	f.dead[ack.Sequence] = dead
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.dead, ack.Sequence)
		f.mu.Unlock()
	}()
	f.log.Debug("cluster: job queued", "job", job.ID, "model", r.Model, "seq", ack.Sequence)
	rl := &relay{tr: pipeline.TraceFrom(ctx), id: job.ID}
	for {
		select {
		case <-ctx.Done():
			// Stop the worker within one step, and a job no worker took
			// yet from being taken.
			_ = f.nc.Publish(CancelSubject(job.ID), nil)
			f.drop(ack.Sequence)
			return nil, ctx.Err()
		case <-dead:
			f.drop(ack.Sequence)
			stage := rl.stage
			if stage == "" {
				stage = pipeline.StageQueued
			}
			return nil, &pipeline.Error{Stage: stage, Err: fmt.Errorf(
				"cluster: job %s was delivered %d times and no worker finished it (the last, %s, stopped answering in %s at attempt %d)",
				job.ID, MaxDeliver, orNone(rl.worker), stage, rl.attempt),
				Hint:    "see the workers' logs; a worker that dies mid-job is a crash or the machine running out of memory",
				Numbers: map[string]int64{"deliveries": MaxDeliver}}
		case m := <-events:
			ev, err := DecodeEvent(m.Data)
			if err != nil {
				f.log.Warn("cluster: an event cannot be read; ignored", "job", job.ID, "err", err)
				continue
			}
			res, err, done := rl.apply(ev)
			if m.Reply != "" {
				_ = m.Respond([]byte("ok"))
			}
			if done {
				return res, err
			}
		}
	}
}

// drop deletes a job's message from the stream (it is gone already when a
// worker acked it).
func (f *Front) drop(seq uint64) {
	dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.stream.DeleteMsg(dctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		f.log.Debug("cluster: deleting a job message", "seq", seq, "err", err)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none took it"
	}
	return "worker " + s
}

// relay replays one job's events, attempt by attempt, into a trace.
type relay struct {
	tr      *pipeline.Trace
	id      string // the cluster's id of the job
	attempt int
	worker  string
	seq     int64
	stage   pipeline.Stage
	tokens  []int // the ids streamed so far, over all attempts
	n       int   // tokens of this attempt
}

// apply replays ev; done is set by the attempt's last event (its result
// or error) or by a redelivered attempt that cannot be continued.
func (r *relay) apply(ev *Event) (res *server.Result, err error, done bool) {
	if ev.Attempt < r.attempt {
		return nil, nil, false // from an attempt JetStream gave up on
	}
	if ev.Attempt > r.attempt {
		if r.worker != "" {
			r.tr.OnWarning("cluster_redelivered", fmt.Sprintf(
				"worker %s stopped answering in %s after %d tokens; attempt %d runs on worker %s (the tokens already sent are checked, not sent again)",
				r.worker, r.stage, len(r.tokens), ev.Attempt, ev.Worker))
		}
		r.attempt, r.worker, r.seq, r.n = ev.Attempt, ev.Worker, 0, 0
	}
	if ev.Seq <= r.seq {
		return nil, nil, false // a final event sent again
	}
	r.seq = ev.Seq
	stage := pipeline.Stage(ev.Stage)
	switch ev.Type {
	case EvTaken:
		r.tr.OnPartDone(pipeline.StageQueued, fmt.Sprintf("taken by worker %s (attempt %d, cluster job %s)", ev.Worker, ev.Attempt, r.id), ev.Duration, pipeline.StageStats{})
	case EvStageStart:
		r.stage = stage
		r.tr.OnStageStart(stage)
	case EvStageDone:
		var st pipeline.StageStats
		if ev.Stats != nil {
			st = *ev.Stats
		}
		r.tr.OnStageDone(stage, st)
	case EvStageSkipped:
		r.tr.OnStageSkipped(stage, ev.Reason)
	case EvProgress:
		r.tr.OnProgress(stage, ev.Done, ev.Total)
	case EvToken:
		i := r.n
		r.n++
		if i < len(r.tokens) {
			if r.tokens[i] != ev.Token.ID {
				return nil, pipeline.Errorf(pipeline.StageGenerate, "",
					"cluster: attempt %d on worker %s sampled token %d as id %d where the attempt before streamed id %d; the text already sent cannot be replaced",
					ev.Attempt, ev.Worker, i+1, ev.Token.ID, r.tokens[i]), true
			}
			return nil, nil, false
		}
		r.tokens = append(r.tokens, ev.Token.ID)
		r.tr.OnTokenInfo(*ev.Token)
	case EvWarning:
		r.tr.OnWarning(ev.Code, ev.Message)
	case EvPart:
		var st pipeline.StageStats
		if ev.Stats != nil {
			st = *ev.Stats
		}
		r.tr.OnPartDone(stage, ev.Part, ev.Duration, st)
	case EvResult:
		res := *ev.Result
		res.Worker = ev.Worker
		return &res, nil, true
	case EvError:
		return nil, stageError(ev.Error, ev.Worker), true
	}
	return nil, nil, false
}

// errorEvent is the final event of a failed attempt.
func errorEvent(err error, stage pipeline.Stage) *api.Error { return pipeline.APIError(err, stage) }
