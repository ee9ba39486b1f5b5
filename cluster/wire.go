// Package cluster shares text jobs between glassbox processes over NATS
// JetStream: the front (glassbox serve --cluster-listen) runs an embedded
// NATS server (or, with --nats, uses an external one) and publishes each text job whose model a live worker holds
// to a work-queue stream, one subject per model; workers (glassbox worker)
// announce themselves in a key-value bucket, pull the jobs of their models
// from a durable consumer per model, run them with their own backend and
// send the job's pipeline events back on job.<id>.events, which the front
// replays into its own pipeline job. This file is the wire: subjects,
// names and the messages' JSON.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
)

// The JetStream names the front creates and the workers use.
const (
	// Stream is the work queue of jobs, subjects jobs.<model token>.
	Stream = "GLASSBOX_JOBS"
	// Bucket is the key-value bucket of workers: key = worker name token,
	// value = a WorkerInfo, renewed every HeartbeatEvery.
	Bucket = "glassbox_workers"
	// jobsPrefix begins every job subject.
	jobsPrefix = "jobs."
)

// Timings of the protocol. A worker renews its entry every HeartbeatEvery
// and is live while its entry is younger than WorkerTTL; a running job's
// message is kept with InProgress every AckWait/4, and redelivered by
// JetStream AckWait after its worker stopped doing that, up to MaxDeliver
// deliveries in all.
const (
	HeartbeatEvery = 2 * time.Second
	WorkerTTL      = 10 * time.Second
	AckWait        = 15 * time.Second
	MaxDeliver     = 3
)

// ackWait and heartbeatEvery are AckWait and HeartbeatEvery, shortened
// by this package's tests.
var (
	ackWait        = AckWait
	heartbeatEvery = HeartbeatEvery
)

// Token turns a model name into one subject token and consumer name:
// letters, digits and '-' are kept, every other byte is '_' and its two
// hex digits ("llama3.2:1b" → "llama3_2e2_3a1b"), so distinct names stay
// distinct and no name can add a subject level or a wildcard.
func Token(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// Untoken is Token's inverse.
func Untoken(tok string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		if tok[i] != '_' {
			b.WriteByte(tok[i])
			continue
		}
		if i+2 >= len(tok) {
			return "", fmt.Errorf("cluster: model token %q: '_' at byte %d needs two hex digits", tok, i)
		}
		var c byte
		if _, err := fmt.Sscanf(tok[i+1:i+3], "%02x", &c); err != nil {
			return "", fmt.Errorf("cluster: model token %q: bad escape %q at byte %d", tok, tok[i:i+3], i)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

// JobSubject is the queue subject of a model's jobs.
func JobSubject(model string) string { return jobsPrefix + Token(model) }

// Consumer is the durable pull consumer every worker holding model shares.
func Consumer(model string) string { return "model-" + Token(model) }

// EventsSubject carries job id's events from its worker to the front.
func EventsSubject(id string) string { return "job." + id + ".events" }

// CancelSubject carries the front's cancel of job id to its worker.
func CancelSubject(id string) string { return "job." + id + ".cancel" }

// maxDeliveriesSubject is the advisory JetStream publishes when a message
// of Stream has been delivered MaxDeliver times without an ack.
const maxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + Stream + ".*"

// Job is a queued job: the front's id for it and the generation.
type Job struct {
	ID      string                  `json:"id"`
	Kind    string                  `json:"kind"` // "text"
	Request *server.GenerateRequest `json:"request"`
	Queued  time.Time               `json:"queued"`
}

// WorkerInfo is a worker's entry in Bucket.
type WorkerInfo struct {
	Name     string             `json:"name"`
	Host     string             `json:"host,omitempty"`
	PID      int                `json:"pid,omitempty"`
	Models   []server.ModelInfo `json:"models"`             // the models it takes jobs for
	Resident []string           `json:"resident,omitempty"` // those loaded now
	// Loaded describes the resident models (memory, state, keep-alive).
	Loaded   []server.RunningModel `json:"loaded,omitempty"`
	Running  int                   `json:"running"`            // jobs it runs now
	Parallel int                   `json:"parallel,omitempty"` // jobs it may run at once
	Started  time.Time             `json:"started"`
	Beat     time.Time             `json:"heartbeat"` // the worker's clock at this renewal

	// The machine: its OS and architecture, cores, CPU model, memory
	// (total, available at this renewal) and the worker's --mem-budget.
	OS           string `json:"os,omitempty"`
	Arch         string `json:"arch,omitempty"`
	Cores        int    `json:"cores,omitempty"`
	CPU          string `json:"cpu,omitempty"`
	RAMTotal     int64  `json:"ram_total_bytes,omitempty"`
	RAMAvailable int64  `json:"ram_available_bytes,omitempty"`
	MemBudget    int64  `json:"mem_budget_bytes,omitempty"`
}

// HasResident reports whether model is loaded on w.
func (w *WorkerInfo) HasResident(model string) bool {
	for _, m := range w.Resident {
		if m == model {
			return true
		}
	}
	return false
}

// Holds reports whether w takes jobs for model.
func (w *WorkerInfo) Holds(model string) bool {
	for _, m := range w.Models {
		if m.Name == model {
			return true
		}
	}
	return false
}

// The kinds of Event.
const (
	EvTaken        = "taken" // a worker took the job (attempt Attempt)
	EvStageStart   = "stage_start"
	EvStageDone    = "stage_done"
	EvStageSkipped = "stage_skipped"
	EvProgress     = "progress"
	EvToken        = "token"
	EvWarning      = "warning"
	EvPart         = "part"
	EvResult       = "result" // the last event of a successful attempt
	EvError        = "error"  // the last event of a failed attempt
)

// Event is one of a running job's events, as its worker sends it: the
// pipeline.Trace hook it came from and that hook's arguments.
type Event struct {
	Seq     int64  `json:"seq"`     // from 1 within one attempt
	Attempt int    `json:"attempt"` // JetStream's delivery count, from 1
	Worker  string `json:"worker"`
	Type    string `json:"type"`
	Stage   string `json:"stage,omitempty"`

	Stats    *api.StageStats `json:"stats,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Done     int64           `json:"done,omitempty"`
	Total    int64           `json:"total,omitempty"`
	Token    *api.Token      `json:"token,omitempty"`
	Code     string          `json:"code,omitempty"`
	Message  string          `json:"message,omitempty"`
	Part     string          `json:"part,omitempty"`
	Duration time.Duration   `json:"duration_ns,omitempty"`
	Result   *server.Result  `json:"result,omitempty"`
	Error    *api.Error      `json:"error,omitempty"`
}

// Final reports whether ev ends its attempt.
func (ev *Event) Final() bool { return ev.Type == EvResult || ev.Type == EvError }

// check refuses an event a front cannot replay.
func (ev *Event) check() error {
	switch ev.Type {
	case EvTaken, EvStageStart, EvStageDone, EvStageSkipped, EvProgress, EvWarning, EvPart:
	case EvToken:
		if ev.Token == nil {
			return errors.New("a token event without its token")
		}
	case EvResult:
		if ev.Result == nil {
			return errors.New("a result event without its result")
		}
	case EvError:
		if ev.Error == nil {
			return errors.New("an error event without its error")
		}
	default:
		return fmt.Errorf("unknown event type %q", ev.Type)
	}
	if ev.Stage != "" && !pipeline.Stage(ev.Stage).Known() {
		return fmt.Errorf("%s event: unknown stage %q", ev.Type, ev.Stage)
	}
	if ev.Attempt < 1 || ev.Seq < 1 {
		return fmt.Errorf("%s event: attempt %d, seq %d: both count from 1", ev.Type, ev.Attempt, ev.Seq)
	}
	return nil
}

// DecodeEvent reads one event message.
func DecodeEvent(data []byte) (*Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("cluster: event of %d bytes: %w", len(data), err)
	}
	if err := ev.check(); err != nil {
		return nil, fmt.Errorf("cluster: event: %w", err)
	}
	return &ev, nil
}

// DecodeJob reads one queued job.
func DecodeJob(data []byte) (*Job, error) {
	var j Job
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("cluster: job of %d bytes: %w", len(data), err)
	}
	switch {
	case j.ID == "":
		return nil, errors.New("cluster: job without an id")
	case j.Kind != "text":
		return nil, fmt.Errorf("cluster: job %s: kind %q (workers run text jobs only)", j.ID, j.Kind)
	case j.Request == nil || j.Request.Model == "":
		return nil, fmt.Errorf("cluster: job %s: no request or no model", j.ID)
	}
	return &j, nil
}

// DecodeWorker reads one bucket entry.
func DecodeWorker(data []byte) (*WorkerInfo, error) {
	var w WorkerInfo
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("cluster: worker entry of %d bytes: %w", len(data), err)
	}
	if w.Name == "" {
		return nil, errors.New("cluster: worker entry without a name")
	}
	return &w, nil
}

// stageError turns a worker's error back into a stage-attributed error.
func stageError(ae *api.Error, worker string) error {
	stage := pipeline.Stage(ae.Stage)
	if !stage.Known() {
		stage = pipeline.StagePlan
	}
	cause := ae.Cause
	if cause == "" {
		cause = strings.TrimPrefix(ae.Message, ae.Stage+": ")
	}
	return &pipeline.Error{Stage: stage, Err: fmt.Errorf("on worker %s: %s", worker, cause), Hint: ae.Hint, Numbers: ae.Numbers}
}
