package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

// fakeBackend generates tokens "0", "1", … one a step, three of them, or
// until cancelled for the prompt "forever". Only the methods the front
// and the worker call are implemented.
type fakeBackend struct {
	server.Backend
	models  []server.ModelInfo
	stopped chan struct{} // closed when a generation saw its context end
	once    sync.Once
	running []server.RunningModel
}

func (f *fakeBackend) Models(context.Context) ([]server.ModelInfo, error) { return f.models, nil }
func (f *fakeBackend) Running(context.Context) ([]server.RunningModel, error) {
	return f.running, nil
}

func (f *fakeBackend) Generate(ctx context.Context, req *server.GenerateRequest) (*server.Result, error) {
	if len(f.models) == 0 {
		return nil, pipeline.Errorf(pipeline.StageLoad, "", "model %q: %w", req.Model, server.ErrModelNotFound)
	}
	tr := pipeline.TraceFrom(ctx)
	tr.OnStageStart(pipeline.StagePlan)
	tr.OnStageDone(pipeline.StagePlan, pipeline.StageStats{Bytes: 42})
	tr.OnStageStart(pipeline.StageGenerate)
	var text strings.Builder
	for i := 0; req.Prompt == "forever" || i < 3; i++ {
		if err := ctx.Err(); err != nil {
			f.once.Do(func() { close(f.stopped) })
			return nil, pipeline.Wrap(pipeline.StageGenerate, err, "")
		}
		s := strconv.Itoa(i)
		text.WriteString(s)
		tr.OnToken(i, s)
		time.Sleep(time.Millisecond) // one decode step
	}
	tr.OnStageDone(pipeline.StageGenerate, pipeline.StageStats{})
	return &server.Result{Text: text.String(), Tokens: 3, DoneReason: "length"}, nil
}

// testServer starts an embedded server on a loopback port.
func testServer(t *testing.T) *Server {
	t.Helper()
	s, err := StartServer(ServerConfig{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func testFront(t *testing.T, s *Server) *Front {
	t.Helper()
	nc, err := s.Connect("front")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	f, err := NewFront(nc, &fakeBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// waitHeld waits (2-minute hang guard) until the front sees a live
// worker holding model.
func waitHeld(t *testing.T, f *Front, model string) {
	t.Helper()
	guard := time.Now().Add(2 * time.Minute)
	for !f.held(model) {
		if time.Now().After(guard) {
			t.Fatalf("the front never saw a worker holding %s", model)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type tokens struct {
	mu   sync.Mutex
	text strings.Builder
	n    int
	one  chan struct{}
}

func (tk *tokens) trace() *pipeline.Trace {
	return &pipeline.Trace{Token: func(tok api.Token) {
		tk.mu.Lock()
		defer tk.mu.Unlock()
		tk.text.WriteString(tok.Text)
		if tk.n++; tk.n == 1 && tk.one != nil {
			close(tk.one)
		}
	}}
}

func TestFrontWorker(t *testing.T) {
	s := testServer(t)
	f := testFront(t, s)
	nc, err := Dial(s.URL(), "", "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	be := &fakeBackend{models: []server.ModelInfo{{Name: "tiny:1b", Path: "/w1/tiny.gguf"}}, stopped: make(chan struct{}),
		running: []server.RunningModel{{ModelInfo: server.ModelInfo{Name: "tiny:1b"}, Bytes: 1234, State: "idle"}}}
	w, err := NewWorker(context.Background(), nc, WorkerConfig{Name: "w1", Backend: be, Parallel: 2, MemBudget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	defer func() { stop(); <-ran }()

	// A model no worker holds runs locally (and the fake front has none).
	if _, err := f.Generate(context.Background(), &server.GenerateRequest{Model: "other"}); !errors.Is(err, server.ErrModelNotFound) {
		t.Fatalf("a model no worker holds: %v", err)
	}
	waitHeld(t, f, "tiny:1b")
	if ms, _ := f.Models(context.Background()); len(ms) != 1 || ms[0].Name != "tiny:1b" {
		t.Fatalf("the front's models: %+v", ms)
	}
	// The worker's entry as GET /v1/cluster/workers shows it.
	ws, err := f.ClusterWorkers(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("cluster workers: %+v, %v", ws, err)
	}
	if cw := ws[0]; cw.Name != "w1" || !cw.Live || cw.Parallel != 2 || cw.MemBudget != 1<<30 || cw.OS == "" || cw.Cores < 1 ||
		len(cw.Models) != 1 || cw.Models[0].Path != "" || len(cw.Resident) != 1 || cw.Resident[0].Name != "tiny:1b" ||
		cw.Resident[0].Bytes != 1234 || cw.HeartbeatAgeSec < 0 {
		t.Fatalf("cluster worker: %+v", cw)
	}

	var tk tokens
	res, err := f.Generate(pipeline.WithTrace(context.Background(), tk.trace()), &server.GenerateRequest{Model: "tiny:1b", Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "012" || res.Worker != "w1" || tk.text.String() != "012" {
		t.Fatalf("result %+v, tokens relayed %q", res, tk.text.String())
	}

	// Cancel: the worker's generation sees its context end.
	tk = tokens{one: make(chan struct{})}
	jctx, cancel := context.WithCancel(pipeline.WithTrace(context.Background(), tk.trace()))
	done := make(chan error, 1)
	go func() {
		_, err := f.Generate(jctx, &server.GenerateRequest{Model: "tiny:1b", Prompt: "forever"})
		done <- err
	}()
	select {
	case <-tk.one:
	case <-time.After(2 * time.Minute):
		t.Fatal("no token within 2 minutes")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled job returned %v", err)
	}
	select {
	case <-be.stopped:
	case <-time.After(2 * time.Minute):
		t.Fatal("the worker's generation did not stop within 2 minutes of the cancel")
	}
}

// TestMaxDeliveriesFailInStage: a worker that takes the job, reaches
// load and dies, three times: the front fails the job in load.
func TestMaxDeliveriesFailInStage(t *testing.T) {
	defer func(a time.Duration) { ackWait = a }(ackWait)
	ackWait = 300 * time.Millisecond
	s := testServer(t)
	f := testFront(t, s)
	nc, err := s.Connect("ghost")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	_, kv, err := setup(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "ghost", []byte(`{"name":"ghost","models":[{"name":"m"}]}`)); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, f, "m")
	cons, err := js.CreateOrUpdateConsumer(ctx, Stream, consumerConfig("m"))
	if err != nil {
		t.Fatal(err)
	}
	// The ghost: every delivery gets as far as load, then nothing.
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	deliveries := make(chan int, 16)
	go func() {
		for gctx.Err() == nil {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
			if err != nil {
				continue
			}
			for msg := range batch.Messages() {
				md, _ := msg.Metadata()
				job, err := DecodeJob(msg.Data())
				if err != nil {
					continue
				}
				p := &publisher{nc: nc, subject: EventsSubject(job.ID), attempt: int(md.NumDelivered), worker: "ghost"}
				p.send(Event{Type: EvTaken})
				p.send(Event{Type: EvStageStart, Stage: "load"})
				deliveries <- int(md.NumDelivered)
			}
		}
	}()
	_, err = f.Generate(ctx, &server.GenerateRequest{Model: "m", Prompt: "hi"})
	if st, _ := pipeline.StageOf(err); st != pipeline.StageLoad || !strings.Contains(err.Error(), "delivered 3 times") ||
		!strings.Contains(err.Error(), "worker ghost") {
		t.Fatalf("after %d deliveries: %v (stage %q)", len(deliveries), err, st)
	}
	for want := 1; want <= MaxDeliver; want++ {
		select {
		case got := <-deliveries:
			if got != want {
				t.Fatalf("delivery %d counted as %d", want, got)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("only %d deliveries", want-1)
		}
	}
}
