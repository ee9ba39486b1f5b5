package journal

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/testhome"
	"github.com/glassbox-ai/glassbox/pipeline"
)

const childEnv = "GLASSBOX_JOURNAL_CHILD"

// TestMain lets the test binary act as the child process of TestKill9.
func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(child(path))
	}
	testhome.Main(m)
}

// child runs one job to completion and then one that generates tokens
// until the process is killed, telling the parent when it is mid-generation.
func child(path string) int {
	jr, err := Open(path, Options{FlushInterval: 10 * time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr}})
	first := m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "m"}, work("", "", nil))
	first.Wait(context.Background())
	m.Submit(context.Background(), pipeline.Params{Kind: "text", Model: "m"}, func(ctx context.Context) (any, error) {
		tr := pipeline.TraceFrom(ctx)
		tr.OnStageSkipped(pipeline.StageLoad, "model already loaded, 0 ms")
		tr.OnStageStart(pipeline.StagePrefill)
		tr.OnStageDone(pipeline.StagePrefill, pipeline.StageStats{Items: 3, Unit: "tokens"})
		tr.OnStageStart(pipeline.StageGenerate)
		for i := 0; ; i++ {
			tr.OnToken(i, " x")
			if i == 100 {
				if err := jr.Flush(); err != nil {
					fmt.Println("ERR", err)
				}
				fmt.Println("READY", first.ID())
			}
			time.Sleep(200 * time.Microsecond)
		}
	})
	select {} // until killed
}

func TestKill9MidGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	ready := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if f := strings.Fields(lines.Text()); len(f) == 2 && f[0] == "READY" {
				ready <- f[1]
				return
			}
			t.Log("child:", lines.Text())
		}
		close(ready)
	}()
	var firstID string
	select {
	case id, ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("child exited before generating")
		}
		firstID = id
	case <-time.After(time.Minute): // a bound on a failing test, not a measurement
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("child did not start generating within a minute")
	}
	time.Sleep(100 * time.Millisecond)         // let more batches land, one maybe half-written
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs in the child
		t.Fatal(err)
	}
	cmd.Wait()

	jr, err := Open(path, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	var integrity string
	if err := jr.db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check = %q, %v", integrity, err)
	}
	rec := jr.Recovered()
	if len(rec) != 1 {
		t.Fatalf("recovered %v, want one job", rec)
	}
	job, err := jr.Job(rec[0])
	if err != nil {
		t.Fatal(err)
	}
	if job.State != api.StateFailed || job.Stage != "generate" || job.Error == nil ||
		job.Error.Stage != "generate" || job.Error.Cause != Interrupted {
		t.Fatalf("interrupted job = %+v, error %+v", job, job.Error)
	}
	evs, err := jr.Events(job.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	tokens := 0
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap", i, ev.Seq)
		}
		if ev.Type == api.TypeToken {
			tokens++
		}
	}
	if tokens < 101 || job.LastSeq != int64(len(evs)) {
		t.Errorf("%d tokens survived (want >= 101), last_seq %d of %d events", tokens, job.LastSeq, len(evs))
	}
	n := len(evs)
	if evs[n-2].Type != api.TypeError || evs[n-1].Type != api.TypeState || evs[n-1].State != api.StateFailed {
		t.Errorf("log ends with %+v, %+v", evs[n-2], evs[n-1])
	}
	first, err := jr.Job(firstID)
	if err != nil || first.State != api.StateDone || string(first.Result) != `{"text":" t0 t1 t2 t3 t4"}` {
		t.Errorf("the finished job = %+v, %v", first, err)
	}
	var b strings.Builder
	if err := pipeline.Explain(&b, job, evs); err != nil {
		t.Fatal(err)
	}
	if want := "verdict: failed in generate after"; !strings.Contains(b.String(), want) ||
		!strings.Contains(b.String(), "interrupted by shutdown") {
		t.Errorf("explanation of the interrupted job:\n%s", b.String())
	}
	t.Logf("recovered job %s: %d events, %d tokens, stopped in %s\n%s", job.ID, len(evs), tokens, job.Stage, b.String())
}
