package main

import (
	"context"
	"errors"

	"github.com/glassbox-ai/glassbox/pipeline"
)

func init() {
	register(&command{name: "explain", summary: "explain a job: where the time went, what limited it, or why it failed", run: runExplain})
}

func runExplain(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "explain", "[JOB] [--home DIR]   (no JOB: the newest job)")
	dir := fs.String("home", "", "glassbox home holding journal.db (default $GLASSBOX_HOME or ~/.glassbox)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return errUsage
	}
	jr, err := openJournalRO(*dir)
	if err != nil {
		return err
	}
	defer jr.Close()
	var id string
	if len(pos) == 1 {
		id = pos[0]
	} else {
		newest, err := jr.Jobs(1)
		if err != nil {
			return err
		}
		if len(newest) == 0 {
			return errors.New("the journal has no jobs yet")
		}
		id = newest[0].ID
	}
	job, err := jr.Job(id)
	if err != nil {
		return err
	}
	evs, err := jr.Events(job.ID, 1)
	if err != nil {
		return err
	}
	return pipeline.Explain(env.stdout, job, evs)
}
