package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() {
	register(&command{name: "jobs", summary: "list recent jobs from the journal (state, stage reached, duration)", run: runJobs})
}

// openJournalRO opens the journal in dir (default: the glassbox home)
// for reading.
func openJournalRO(dir string) (*journal.Journal, error) {
	if dir == "" {
		dir = home.Home()
	}
	return journal.Open(filepath.Join(dir, journal.FileName), journal.Options{ReadOnly: true})
}

// runJournaled runs fn as a pipeline job recorded in the journal of the
// glassbox home, waits for it and returns it (Info, Events and Explain
// then describe it). Hooks already in ctx (a live printer) see every
// report too. When the journal cannot be opened the job still runs,
// unrecorded, with a warning on stderr. The error is the job's.
func runJournaled(ctx context.Context, env *cmdEnv, p pipeline.Params, fn pipeline.Func) (*pipeline.Job, error) {
	var sinks []pipeline.Sink
	jr, err := journal.OpenDefault(journal.Options{})
	if err != nil {
		fmt.Fprintf(env.stderr, "glassbox: warning: the job will not be journaled: %v\n", err)
	} else {
		sinks = append(sinks, jr)
		defer func() {
			if err := jr.Close(); err != nil {
				fmt.Fprintf(env.stderr, "glassbox: warning: journal: %v\n", err)
			}
		}()
	}
	m := pipeline.NewManager(pipeline.Options{Sinks: sinks})
	job := m.Submit(ctx, p, fn)
	<-job.Done()
	_, err = job.Wait(context.Background())
	return job, err
}

func runJobs(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "jobs", "[--json] [-n N] [--home DIR]")
	asJSON := fs.Bool("json", false, "print a JSON array of job summaries")
	n := fs.Int("n", 20, "how many jobs, newest first (0: all)")
	dir := fs.String("home", "", "glassbox home holding journal.db (default $GLASSBOX_HOME or ~/.glassbox)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fs.Usage()
		return errUsage
	}
	jr, err := openJournalRO(*dir)
	if err != nil {
		return err
	}
	defer jr.Close()
	jobs, err := jr.Jobs(*n)
	if err != nil {
		return err
	}
	if *asJSON {
		if jobs == nil {
			jobs = []api.Job{}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(env.stdout, "no jobs yet")
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tKIND\tMODEL\tSTATE\tSTAGE\tDURATION")
	for _, j := range jobs {
		stage := j.Stage
		if j.Error != nil && j.Error.Stage != "" {
			stage = j.Error.Stage // where it failed or stopped
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Created.Local().Format(time.DateTime),
			orDash(j.Kind), orDash(j.Model), j.State, orDash(stage), jobDuration(j))
	}
	return tw.Flush()
}

func jobDuration(j api.Job) string {
	d := time.Duration(j.DurationMS * float64(time.Millisecond))
	switch {
	case !api.Terminal(j.State):
		return "running"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
