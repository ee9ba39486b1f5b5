package api

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event types. Every job's event log is a sequence of these, numbered from 1.
const (
	TypeState        = "state"         // the job changed state: State (and, when terminal, DurationMS)
	TypeStageStart   = "stage_start"   // Stage began
	TypeStageDone    = "stage_done"    // Stage finished: DurationMS, Stats
	TypeStageSkipped = "stage_skipped" // Stage does not apply: Reason
	TypeProgress     = "progress"      // Progress within Stage
	TypeToken        = "token"         // one generated token: Token
	TypeWarning      = "warning"       // Warning: something the user should know, the job goes on
	TypeResult       = "result"        // the job's output: Result
	TypeError        = "error"         // the job failed (or was cancelled): Error
	TypePart         = "part"          // a part of Stage finished (a component loaded, a sampling step): Part, DurationMS, Stats
	TypePreview      = "preview"       // a cheap look at an image being made: Preview
)

// Job states. A job is queued until its work starts, running until it ends,
// and then done, failed or cancelled for good.
const (
	StateQueued    = "queued"
	StateRunning   = "running"
	StateDone      = "done"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// Terminal reports whether state is one a job never leaves.
func Terminal(state string) bool {
	return state == StateDone || state == StateFailed || state == StateCancelled
}

// Event is one entry of a job's event log. Seq numbers start at 1 and have
// no gaps; Time is when the event happened (UTC, wall clock).
//
// Which optional fields are set depends on Type:
//
//	state          State; DurationMS (total) when the state is terminal;
//	               StopMS when cancelled (time from the cancel request to the stop)
//	stage_start    Stage
//	stage_done     Stage, DurationMS, Stats
//	stage_skipped  Stage, Reason
//	progress       Stage, Progress
//	token          Stage ("generate"), Token
//	warning        Stage (the current one, if any), Warning
//	result         Result (JSON, shape chosen by the job's kind)
//	error          Stage (where it failed), Error
//	part           Stage, Part (its name: "UNet", "step 3/20"), DurationMS, Stats
//	preview        Stage ("generate"), Preview
type Event struct {
	Seq   int64     `json:"seq"`
	Time  time.Time `json:"time"`
	Job   string    `json:"job"`
	Type  string    `json:"type"`
	Stage string    `json:"stage,omitempty"`

	State      string          `json:"state,omitempty"`
	DurationMS float64         `json:"duration_ms,omitempty"`
	StopMS     float64         `json:"stop_ms,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Part       string          `json:"part,omitempty"`
	Stats      *StageStats     `json:"stats,omitempty"`
	Progress   *Progress       `json:"progress,omitempty"`
	Token      *Token          `json:"token,omitempty"`
	Preview    *Preview        `json:"preview,omitempty"`
	Warning    *Warning        `json:"warning,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *Error          `json:"error,omitempty"`
}

// StageStats are the measurements a stage reports when it finishes. Every
// field is optional.
type StageStats struct {
	Bytes     int64  `json:"bytes,omitempty"`     // bytes read (load) or written (deliver)
	Items     int64  `json:"items,omitempty"`     // units of work done: tokens, steps, frames
	Cached    int64  `json:"cached,omitempty"`    // units a cache held, not counted in Items (prefill: prompt tokens whose KV an earlier request left)
	Unit      string `json:"unit,omitempty"`      // what Items counts: "tokens", "steps", "frames"
	PeakRSS   int64  `json:"peak_rss,omitempty"`  // resident memory high-water mark, bytes
	Placement string `json:"placement,omitempty"` // where it ran: "cpu", "cpu:8 threads", ...
	Note      string `json:"note,omitempty"`      // one human sentence, e.g. advice from the planner
	// EndToken says a text generation (stage "generate") stopped at an
	// end-of-generation token: sampled, and a decode pass, but no part of
	// the answer, so not counted in Items (which agree with the result's
	// token count).
	EndToken bool `json:"end_token,omitempty"`

	// Roofline is the best rate (Items per second) this machine could reach
	// for this stage (from the planner), and Limiter what bounds it
	// ("memory bandwidth", "compute", "disk"). Explain compares the measured
	// rate with it.
	Roofline float64 `json:"roofline,omitempty"`
	Limiter  string  `json:"limiter,omitempty"`
}

// Rate is a finished stage's rate in Items per second over its seconds.
// A text generation (stage "generate", unit "tokens") samples its first
// token from the prompt's last pass, so its time holds Items−1 decode
// passes, one more when it ended at an end-of-generation token (EndToken):
// the rate counts those (llama.cpp's eval rate) and is 0 for a one-token
// reply, whose stage is one sampling, not a pass.
func (st StageStats) Rate(stage string, seconds float64) float64 {
	n := st.Items
	if stage == "generate" && st.Unit == "tokens" {
		n--
		if st.EndToken {
			n++
		}
	}
	if n <= 0 || seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// Count is "n unit" with a plural unit ("tokens", "UNet calls") made
// singular for one ("1 token", "1 UNet call").
func Count(n int64, unit string) string {
	if n == 1 && len(unit) > 1 && unit[len(unit)-1] == 's' && unit != "bytes" {
		unit = unit[:len(unit)-1]
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// Progress is how far a stage has come: load bytes, prefill tokens,
// generated tokens, diffusion steps. Total is 0 when unknown. For the
// queued stage, Done is the job's position in the queue (0 = next) and
// Total the queue's length.
type Progress struct {
	Done  int64   `json:"done"`
	Total int64   `json:"total,omitempty"`
	Unit  string  `json:"unit,omitempty"`
	Rate  float64 `json:"rate,omitempty"` // Done per second since the stage started
}

// Preview is a small, cheap picture of an image while it is made (a
// diffusion latent projected to RGB at the latent's size), or of a video's
// frame as it is decoded (scaled down to at most 256 pixels a side): a PNG.
type Preview struct {
	Image  int    `json:"image,omitempty"` // 0-based index in a batch
	Step   int    `json:"step"`            // 1-based sampling step it shows (a video frame: the steps done)
	Steps  int    `json:"steps"`
	Frame  int    `json:"frame,omitempty"`  // a video's decode: the 1-based frame it shows
	Frames int    `json:"frames,omitempty"` // of how many
	Width  int    `json:"width"`
	Height int    `json:"height"`
	PNG    []byte `json:"png"` // base64 in JSON
}

// Token is one generated token: its vocabulary id and the text it adds
// (which may be empty while a multi-byte character is incomplete).
type Token struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
	// Thinking is the text the token adds to a reasoning model's thinking
	// (its <think> block), when the request separates it from the answer:
	// Text is then the answer's part only.
	Thinking string `json:"thinking,omitempty"`
	// Logprob, when the request asked for it, is how likely the model
	// found the token, and its most likely alternatives.
	Logprob *Logprob `json:"logprob,omitempty"`
}

// Logprob is a generated token's natural-log probability under the model:
// the softmax of its logits at temperature 1, before penalties, top-k/p,
// min-p and format constraints change them (what the model predicted, not
// what the sampler then allowed).
type Logprob struct {
	Piece   string  `json:"piece"` // the token's own text
	Logprob float64 `json:"logprob"`
	// Bytes are the piece's bytes when they are not valid UTF-8 (part of a
	// character: Piece then shows U+FFFD for them).
	Bytes []byte `json:"bytes,omitempty"`
	// Top are the most likely tokens at this step, most likely first
	// (lower id first on a tie); the picked one may be among them.
	Top []Alt `json:"top,omitempty"`
}

// Alt is one of the most likely tokens at a step.
type Alt struct {
	ID      int     `json:"id"`
	Piece   string  `json:"piece"`
	Logprob float64 `json:"logprob"`
	Bytes   []byte  `json:"bytes,omitempty"` // as Logprob.Bytes
}

// Warning is a condition worth telling the user about that does not stop
// the job: "ctx_nearly_full", "memory_tight", "reload", "eviction", ...
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error is a failure attributed to a stage: the cause, the numbers behind
// it (requested vs available memory, tokens vs context) and a hint.
type Error struct {
	Stage    string           `json:"stage"`
	Message  string           `json:"message"` // the whole error on one line
	Cause    string           `json:"cause"`   // the cause without stage and hint
	Hint     string           `json:"hint,omitempty"`
	Numbers  map[string]int64 `json:"numbers,omitempty"`
	Internal bool             `json:"internal,omitempty"` // a bug in glassbox (a recovered panic)
}
