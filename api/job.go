package api

import (
	"encoding/json"
	"time"
)

// Job is a job's summary: what was asked, how far it got and how it ended.
// The journal stores one per job; job lists and GET /v1/jobs/{id} return it.
type Job struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind,omitempty"`  // "text", "chat", "image", ...
	Model    string    `json:"model,omitempty"` // model name or path
	State    string    `json:"state"`           // one of the State constants
	Stage    string    `json:"stage,omitempty"` // the last stage started
	Created  time.Time `json:"created"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// DurationMS is the time from creation to the end (or to now, while running).
	DurationMS float64         `json:"duration_ms,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"` // the request, as given
	Result     json.RawMessage `json:"result,omitempty"` // the output, once done
	Error      *Error          `json:"error,omitempty"`  // why it failed or was cancelled
	LastSeq    int64           `json:"last_seq"`         // the sequence number of its last event
}
