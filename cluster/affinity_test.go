package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

// TestAffinity: with two workers holding model m, one with it resident,
// a job goes to the resident one while the other is held in its affinity
// delay; when the resident one is busy, the other takes the next job once
// its delay ends. No timing is asserted: the delay is a gate the test
// opens.
func TestAffinity(t *testing.T) {
	s := testServer(t)
	f := testFront(t, s)
	ctx := context.Background()
	models := []server.ModelInfo{{Name: "m"}}
	start := func(name string, cfg WorkerConfig) *fakeBackend {
		nc, err := Dial(s.URL(), "", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		cfg.Name = name
		w, err := NewWorker(ctx, nc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- w.Run(wctx) }()
		t.Cleanup(func() { stop(); <-ran })
		return cfg.Backend.(*fakeBackend)
	}
	hot := start("hot", WorkerConfig{Backend: &fakeBackend{models: models, stopped: make(chan struct{}),
		running: []server.RunningModel{{ModelInfo: server.ModelInfo{Name: "m"}}}}})
	waiting := make(chan string, 16) // the cold worker entered its delay
	open := make(chan struct{})      // closed: the cold worker's delay ends
	start("cold", WorkerConfig{Backend: &fakeBackend{models: models, stopped: make(chan struct{})},
		affinityWait: func(ctx context.Context, model string) {
			select {
			case waiting <- model:
			default:
			}
			select {
			case <-open:
			case <-ctx.Done():
			}
		}})
	guard := time.Now().Add(2 * time.Minute)
	for len(f.Workers()) < 2 {
		if time.Now().After(guard) {
			t.Fatal("the front never saw both workers")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// 1. Both idle: the resident one takes it.
	res, err := f.Generate(ctx, &server.GenerateRequest{Model: "m", Prompt: "hi"})
	if err != nil || res.Worker != "hot" {
		t.Fatalf("with both idle: %+v, %v (want worker hot)", res, err)
	}
	select {
	case m := <-waiting:
		if m != "m" {
			t.Fatalf("the cold worker waited for %q", m)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the cold worker never entered its affinity delay")
	}

	// 2. The resident one busy (its one slot): the cold one takes the
	// next job after its delay.
	tk := tokens{one: make(chan struct{})}
	bctx, cancel := context.WithCancel(pipeline.WithTrace(ctx, tk.trace()))
	busy := make(chan error, 1)
	go func() {
		_, err := f.Generate(bctx, &server.GenerateRequest{Model: "m", Prompt: "forever"})
		busy <- err
	}()
	select {
	case <-tk.one:
	case <-time.After(2 * time.Minute):
		t.Fatal("the busy job streamed no token within 2 minutes")
	}
	close(open)
	res, err = f.Generate(ctx, &server.GenerateRequest{Model: "m", Prompt: "hi"})
	if err != nil || res.Worker != "cold" {
		t.Fatalf("with the resident worker busy: %+v, %v (want worker cold)", res, err)
	}
	cancel()
	if err := <-busy; !errors.Is(err, context.Canceled) {
		t.Fatalf("the busy job: %v", err)
	}
	<-hot.stopped
}
