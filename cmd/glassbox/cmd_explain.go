package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/compute/roofline"
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
	addRoofline(evs, roofline.Load)
	return pipeline.Explain(env.stdout, job, evs)
}

// addRoofline gives a generate stage that recorded the bytes it read but
// no roofline one from this machine's cached bandwidth probe (glassbox
// bench's roofline.json): decoding reads every weight once per token, so
// at best tokens/s = read bandwidth / bytes per token (Williams et al.
// 2009). Without a cached probe the stage is left as it is.
func addRoofline(evs []api.Event, load func(threads int) (roofline.Result, error)) {
	for i := range evs {
		ev := &evs[i]
		st := ev.Stats
		if ev.Type != api.TypeStageDone || ev.Stage != string(pipeline.StageGenerate) || st == nil ||
			st.Roofline > 0 || st.Bytes <= 0 || st.Items <= 0 {
			continue
		}
		threads := 0
		fmt.Sscanf(st.Placement, "cpu:%d", &threads)
		r, err := load(threads)
		if err != nil {
			continue
		}
		bw := r.ReadGBsN
		if r.Threads == 1 {
			bw = r.ReadGBs1
		}
		if bw <= 0 {
			continue
		}
		c := *st
		c.Roofline = bw * 1e9 / (float64(st.Bytes) / float64(st.Items))
		c.Limiter = fmt.Sprintf("memory bandwidth (%.1f GB/s measured)", bw)
		ev.Stats = &c
	}
}
