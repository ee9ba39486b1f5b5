package cluster

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/glassbox-ai/glassbox/server"
)

// TestConnectFrontExternal: a front on an "external" NATS server (one this
// test starts, with a token) queues a job a worker on the same server runs.
func TestConnectFrontExternal(t *testing.T) {
	s, err := StartServer(ServerConfig{Listen: "127.0.0.1:0", Token: "sekret", StoreDir: t.TempDir(), Name: "external"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := ConnectFront(ctx, s.URL(), "wrong"); err == nil || !strings.Contains(err.Error(), "refused the credential") {
		t.Fatalf("a wrong token: %v", err)
	}
	nc, err := ConnectFront(ctx, s.URL(), "sekret")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f, err := NewFront(nc, &fakeBackend{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wc, err := Dial(s.URL(), "sekret", "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	w, err := NewWorker(ctx, wc, WorkerConfig{Name: "w1", Backend: &fakeBackend{models: []server.ModelInfo{{Name: "m"}}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	defer func() { stop(); <-ran }()
	waitHeld(t, f, "m")
	res, err := f.Generate(ctx, &server.GenerateRequest{Model: "m", Prompt: "hi"})
	if err != nil || res.Text != "012" || res.Worker != "w1" {
		t.Fatalf("result %+v, %v", res, err)
	}
}

// TestConnectFrontRefuses: an address nothing listens on, and a NATS
// server without JetStream, are refused with one line saying which.
func TestConnectFrontRefuses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + l.Addr().String()
	l.Close()
	ctx := context.Background()
	if _, err := ConnectFront(ctx, dead, ""); err == nil || !strings.Contains(err.Error(), "cannot be reached") ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("nothing listening: %v", err)
	}

	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(2 * time.Minute) {
		t.Fatal("the plain NATS server did not start within 2 minutes")
	}
	if _, err := ConnectFront(ctx, ns.ClientURL(), ""); err == nil || !strings.Contains(err.Error(), "has no JetStream") ||
		strings.Contains(err.Error(), "\n") {
		t.Fatalf("no JetStream: %v", err)
	}
}
