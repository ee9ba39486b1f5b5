package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sched"
)

// shapes caches each model file's plan.Shape by path, size and
// modification time: opening a file and reading its header (the
// vocabulary's strings included) took 5.3 ms for the 1B model, planning
// from the shape 6 µs, and every generation request plans.
var shapes sync.Map

// shape returns the plan.Shape of the model file at path.
func shape(path string) (*plan.Shape, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	key := fmt.Sprintf("%s@%d@%d", path, st.Size(), st.ModTime().UnixNano())
	if s, ok := shapes.Load(key); ok {
		return s.(*plan.Shape), nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer f.Close()
	s, err := plan.ReadShape(f)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	shapes.Store(key, s)
	return s, nil
}

// planFor plans one generation of the model file at path with opts.
func (b *Backend) planFor(path string, opts model.SessionOptions, parallel int, kv string) (*plan.Plan, error) {
	s, err := shape(path)
	if err != nil {
		return nil, err
	}
	if kv == "" {
		kv = opts.KVName()
	}
	p, err := plan.ForShape(s, plan.Options{Ctx: opts.CtxLen, Batch: opts.Batch, Parallel: parallel, KV: kv, Threads: opts.Threads}, b.device())
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return p, nil
}

// device returns this machine as it is now: available RAM read again
// (other programs come and go), plus what evicting the idle resident models
// would give back. It copies b.dev, which concurrent requests share.
func (b *Backend) device() *plan.Device {
	d := *b.dev
	if err := d.RefreshMemory(); err != nil {
		d = *b.dev // keep the figures read at start
	}
	return d.WithReclaimable(b.res.Reclaimable())
}

// acquire makes model name resident (loading it if needed) and returns the
// lease; the load stage is reported through ctx's trace.
func (b *Backend) acquire(ctx context.Context, name, path string, mem plan.Memory, keep *time.Duration) (*sched.Lease[*served], error) {
	bytes := mem.ModelBytes()
	draft := b.drafts[name]
	if draft != "" {
		// The draft is resident with its model: its weights, cache and
		// buffers count with the model's.
		dp, err := b.planFor(draft, b.session, 1, "")
		if err != nil {
			return nil, err
		}
		bytes += dp.Memory.ModelBytes()
	}
	req := sched.Request[*served]{Model: name, Bytes: bytes, Placement: "cpu",
		Load: func(ctx context.Context) (*served, int64, error) {
			sm, n, err := loadServed(ctx, path, draft, b.session, b.parallel, bytes)
			if sm != nil {
				sm.baseBytes = bytes - mem.KVCacheBytes - mem.ComputeBytes
				sm.plannedKV, sm.computeBytes = mem.KVCacheBytes, mem.ComputeBytes
			}
			return sm, n, err
		}}
	if keep != nil {
		req.KeepAlive = sched.Keep(*keep)
	}
	return b.res.Acquire(ctx, req)
}

// loadServed loads a model and checks its tokenizer, so a broken
// vocabulary fails the load rather than every request. With parallel > 1
// it starts the model's batcher: continuous batching, where a new request
// joins the decode loop at the next step and a finished one leaves it.
//
// bytes is the plan's prediction of the model's own memory (weights, KV
// cache, arena; not the process's base), which the residency budget counts.
func loadServed(ctx context.Context, path, draft string, opts model.SessionOptions, parallel int, bytes int64) (*served, int64, error) {
	t, d, err := engine.LoadTextDraft(ctx, path, draft)
	if err != nil {
		return nil, 0, err
	}
	if _, err := t.Tokenizer(); err != nil {
		t.Close()
		if d != nil {
			d.Close()
		}
		return nil, 0, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	_, terr := t.File.Meta.String(chat.KeyTemplate)
	sm := &served{text: t, template: terr == nil, cache: engine.NewSessionCache(1), draft: d}
	if d != nil {
		sm.draftKept = engine.NewSessionCache(1)
	}
	if parallel > 1 {
		sm.batch = engine.NewBatcher(t.Model, opts, parallel)
	}
	return sm, bytes, nil
}

// admit is plan → load for a request of model name with its context,
// batch and threads (0: the server's): it plans the model with them,
// admits the job and makes the model resident, returning the lease, the
// session options, the plan and the time the load took.
func (b *Backend) admit(ctx context.Context, name string, numCtx, numBatch, numThread int, keep *time.Duration) (
	*sched.Lease[*served], model.SessionOptions, *plan.Plan, time.Duration, error) {
	opts := b.session
	name, path, err := b.lookup(name)
	if err != nil {
		return nil, opts, nil, 0, err
	}
	name, path = b.resident(name, path)
	if numCtx > 0 {
		opts.CtxLen = numCtx
	}
	if numBatch > 0 {
		opts.Batch = numBatch
	}
	if numThread > 0 {
		opts.Threads = numThread
	}
	p, err := b.planFor(path, opts, b.parallel, "")
	if err != nil {
		return nil, opts, nil, 0, err
	}
	if err := plan.AdmitJob(ctx, p, b.budget); err != nil {
		return nil, opts, nil, 0, err
	}
	t0 := time.Now()
	lease, err := b.acquire(ctx, name, path, p.Memory, keep)
	if err != nil {
		return nil, opts, nil, 0, err
	}
	if b.metrics != nil {
		b.metrics.SetModelResident(name, lease.Value().text.File.TensorBytes())
	}
	return lease, opts, p, time.Since(t0), nil
}

// Load makes a model resident without a generation (Ollama's empty
// request), planned with the server's session options.
func (b *Backend) Load(ctx context.Context, name string, keep *time.Duration) error {
	name, path, err := b.lookup(name)
	if err != nil {
		return err
	}
	name, path = b.resident(name, path)
	p, err := b.planFor(path, b.session, b.parallel, "")
	if err != nil {
		return err
	}
	if err := plan.Admit(p, b.budget); err != nil {
		return err
	}
	lease, err := b.acquire(ctx, name, path, p.Memory, keep)
	if err != nil {
		return err
	}
	if b.metrics != nil {
		b.metrics.SetModelResident(name, lease.Value().text.File.TensorBytes())
	}
	lease.Release()
	return nil
}

// Unload drops a resident model; one that is not loaded is no error.
func (b *Backend) Unload(ctx context.Context, name string) error {
	name, path, err := b.lookup(name)
	if err != nil {
		return err
	}
	name, _ = b.resident(name, path)
	err = b.res.Unload(name)
	if errors.Is(err, sched.ErrNotResident) {
		return nil // unloading a model that is not loaded is a no-op, as in Ollama
	}
	return err
}
