package server

import (
	"strings"

	"context"
	"errors"
	"fmt"
	"github.com/glassbox-ai/glassbox/pipeline"
	"net/http"
	"strconv"
)

// Sentinel causes a Backend or Jobs implementation wraps so the server can
// pick the HTTP status.
var (
	// ErrModelNotFound: the requested model is not in the store (404).
	ErrModelNotFound = errors.New("model not found")
	// ErrJobNotFound: no job with that id (404).
	ErrJobNotFound = errors.New("job not found")
	// ErrShuttingDown: the server no longer admits work (503).
	ErrShuttingDown = errors.New("server is shutting down")
)

// BadRequest marks a Backend's error as the request's fault (a 400)
// without changing its text: a name that is taken, say.
func BadRequest(err error) error { return badRequestError{err} }

type badRequestError struct{ error }

func (e badRequestError) Unwrap() error { return e.error }

// Error is a refusal or failure as the client sees it: the HTTP status, the
// pipeline stage it belongs to, a machine-readable code, the message and an
// optional hint.
type Error struct {
	Status     int    // HTTP status
	Stage      string // pipeline stage: deliver, queued, plan, load, encode, prefill, generate, decode
	Code       string // machine-readable cause, e.g. "invalid_json", "queue_full"
	Message    string // one line, without the stage prefix
	Hint       string // what to try, if anything
	Param      string // the offending request field, if any
	RetryAfter int    // seconds, for 503 queue_full
	Err        error  // the underlying cause, if any
}

func (e *Error) Error() string { return e.Stage + ": " + e.Message }

func (e *Error) Unwrap() error { return e.Err }

// badRequest is a deliver-stage 400 about one request field.
func badRequest(code, param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Stage: "deliver", Code: code, Param: param,
		Message: fmt.Sprintf(format, args...)}
}

// toError turns any error from a Backend or Jobs into an *Error with a
// status and a stage.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	out := &Error{Status: http.StatusInternalServerError, Stage: "deliver", Code: "internal",
		Message: err.Error(), Err: err}
	if st, ok := pipeline.StageOf(err); ok {
		out.Stage = string(st)
	}
	var pe *pipeline.Error
	if errors.As(err, &pe) {
		out.Message, out.Hint = pe.Cause(), pe.Hint
	}
	switch {
	case errors.Is(err, ErrModelNotFound):
		out.Status, out.Code, out.Stage = http.StatusNotFound, "model_not_found", "load"
	case errors.Is(err, ErrJobNotFound):
		out.Status, out.Code = http.StatusNotFound, "job_not_found"
	case errors.Is(err, ErrShuttingDown):
		out.Status, out.Code, out.Stage = http.StatusServiceUnavailable, "shutting_down", "queued"
	case errors.Is(err, context.Canceled):
		// The client went away or the job was cancelled: nginx's 499.
		out.Status, out.Code = 499, "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		out.Status, out.Code = http.StatusGatewayTimeout, "timeout"
	case errors.Is(err, pipeline.ErrInternal):
		out.Code = "internal"
	case errors.As(err, new(badRequestError)):
		out.Status, out.Code = http.StatusBadRequest, "bad_request"
	case errors.Is(err, pipeline.ErrSettings):
		// Invalid settings, or ones the model cannot take (a q8_0 cache
		// on heads it cannot round): the request is at fault.
		out.Status, out.Code = http.StatusBadRequest, "bad_settings"
	case pe != nil && pe.Numbers["ctx"] > 0 && pe.Numbers["tokens"] > pe.Numbers["ctx"]:
		// A prompt longer than the context, whichever stage found it.
		out.Status, out.Code = http.StatusBadRequest, "bad_prompt"
	default:
		switch out.Stage {
		case "plan":
			// The workload does not fit in memory with this budget.
			out.Status, out.Code = http.StatusInsufficientStorage, "does_not_fit"
		case "encode":
			// Bad prompt (too long for the context, unencodable): the
			// request is at fault.
			out.Status, out.Code = http.StatusBadRequest, "bad_prompt"
		case "load":
			out.Code = "load_failed"
		}
	}
	// Messages from stage-aware causes already start with "stage: ".
	out.Message = strings.TrimPrefix(out.Message, out.Stage+": ")
	return out
}

// setRetryAfter adds the Retry-After header for errors that carry one.
func setRetryAfter(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
}

// nativeError is the native API's error body.
type nativeError struct {
	Error nativeErrorBody `json:"error"`
}

type nativeErrorBody struct {
	Stage   string `json:"stage"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	Param   string `json:"param,omitempty"`
}

func writeNativeError(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e)
	writeJSON(w, e.Status, nativeError{nativeErrorBody{Stage: e.Stage, Code: e.Code,
		Message: e.Message, Hint: e.Hint, Param: e.Param}})
}

// ollamaError is Ollama's error body: {"error": "..."}. The stage leads the
// message, and is repeated in its own field for programs.
type ollamaError struct {
	Error string `json:"error"`
	Stage string `json:"stage,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

func (e *Error) ollama() ollamaError {
	msg := e.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return ollamaError{Error: msg, Stage: e.Stage, Hint: e.Hint}
}

func writeOllamaError(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e)
	writeJSON(w, e.Status, e.ollama())
}

// openAIError is OpenAI's error body:
// {"error": {"message", "type", "param", "code"}}, plus our stage.
type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	Stage   string  `json:"stage"`
}

func (e *Error) openAI() openAIError {
	typ := "server_error"
	switch {
	case e.Status == http.StatusUnauthorized:
		typ = "authentication_error"
	case e.Status == http.StatusNotFound:
		typ = "invalid_request_error"
	case e.Status == http.StatusServiceUnavailable:
		typ = "server_overloaded"
	case e.Status >= 400 && e.Status < 500:
		typ = "invalid_request_error"
	}
	msg := e.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	body := openAIErrorBody{Message: msg, Type: typ, Stage: e.Stage}
	if e.Param != "" {
		p := e.Param
		body.Param = &p
	}
	if e.Code != "" {
		c := e.Code
		body.Code = &c
	}
	return openAIError{body}
}

func writeOpenAIError(w http.ResponseWriter, e *Error) {
	setRetryAfter(w, e)
	writeJSON(w, e.Status, e.openAI())
}
