package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/journal"
)

func init() {
	register(&command{name: "events", summary: "print a job's event log from the journal (--follow to watch it)", run: runEvents})
}

// followPoll is how often --follow looks for new events, and followWait
// how long it waits for a job that is not in the journal yet.
var (
	followPoll = 200 * time.Millisecond
	followWait = 5 * time.Second
)

func runEvents(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "events", "JOB [--follow] [--json] [--from SEQ] [--home DIR]")
	follow := fs.Bool("follow", false, "keep printing new events until the job ends")
	asJSON := fs.Bool("json", false, "print one JSON event per line (the api.Event schema, see docs/API.md)")
	from := fs.Int64("from", 1, "first sequence number to print")
	dir := fs.String("home", "", "glassbox home holding journal.db (default $GLASSBOX_HOME or ~/.glassbox)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	jr, err := openJournalRO(*dir)
	if err != nil {
		return err
	}
	defer jr.Close()
	job, err := jr.Job(pos[0])
	// A job just submitted to a server reaches the journal with its first
	// batch: --follow waits a little for it.
	for wait := time.Now().Add(followWait); err != nil && errors.Is(err, journal.ErrNotFound) && *follow && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
		job, err = jr.Job(pos[0])
	}
	if err != nil {
		return err
	}
	next := *from
	enc := json.NewEncoder(env.stdout)
	for {
		evs, err := jr.Events(job.ID, next)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if *asJSON {
				if err := enc.Encode(ev); err != nil {
					return err
				}
			} else {
				printEvent(env.stdout, ev)
			}
			next = ev.Seq + 1
			if ev.Type == api.TypeState && api.Terminal(ev.State) {
				return nil
			}
		}
		if !*follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

// printEvent writes one event as a line: seq, time, type, stage, details.
func printEvent(w io.Writer, ev api.Event) {
	fmt.Fprintf(w, "%5d  %s  %-13s %-9s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Type, ev.Stage, eventDetail(ev))
}

func eventDetail(ev api.Event) string {
	switch ev.Type {
	case api.TypeState:
		s := ev.State
		if ev.DurationMS > 0 {
			s += fmt.Sprintf(" after %.1f ms", ev.DurationMS)
		}
		if ev.State == api.StateCancelled {
			s += fmt.Sprintf(" (%s; stopped in %.1f ms)", ev.Reason, ev.StopMS)
		}
		return s
	case api.TypeStageDone:
		s := fmt.Sprintf("%.1f ms", ev.DurationMS)
		if st := ev.Stats; st != nil {
			if st.Items > 0 {
				s += ", " + api.Count(st.Items, st.Unit)
			}
			if st.Bytes > 0 {
				s += ", " + humanBytes(st.Bytes)
			}
			if st.PeakRSS > 0 {
				s += ", peak " + humanBytes(st.PeakRSS)
			}
			if st.Placement != "" {
				s += ", " + st.Placement
			}
		}
		return s
	case api.TypeStageSkipped:
		return ev.Reason
	case api.TypeProgress:
		if p := ev.Progress; p != nil {
			s := strconv.FormatInt(p.Done, 10)
			if p.Total > 0 {
				s += "/" + strconv.FormatInt(p.Total, 10)
			}
			if p.Unit != "" {
				s += " " + p.Unit
			}
			if p.Rate > 0 {
				s += fmt.Sprintf(" (%.1f/s)", p.Rate)
			}
			return s
		}
	case api.TypeToken:
		if t := ev.Token; t != nil {
			s := fmt.Sprintf("%d %q", t.ID, t.Text)
			if t.Thinking != "" {
				s += fmt.Sprintf(" thinking %q", t.Thinking)
			}
			if lp := t.Logprob; lp != nil {
				s += fmt.Sprintf(" p=%.4f", math.Exp(lp.Logprob))
			}
			return s
		}
	case api.TypeWarning:
		if wn := ev.Warning; wn != nil {
			return wn.Code + ": " + wn.Message
		}
	case api.TypeResult:
		s := string(ev.Result)
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		return s
	case api.TypeError:
		if e := ev.Error; e != nil {
			return e.Message
		}
	}
	return ""
}
