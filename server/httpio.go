package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// writeJSON writes v as a complete JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Our own response types always marshal; this is a broken invariant.
		b = []byte(`{"error":"deliver: cannot encode response"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// readBody reads the request body under the server's size limit and read
// deadline, then clears the deadline: a streaming response may last far
// longer than the body took to arrive, and a read deadline left on the
// connection would cancel the request context when it passes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	rc := http.NewResponseController(w)
	if s.cfg.ReadTimeout > 0 {
		rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		// The rest of the body is not worth waiting for: keep the
		// deadline so net/http's discard of it fails fast, and close.
		w.Header().Set("Connection", "close")
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Stage: "deliver", Code: "body_too_large",
				Message: fmt.Sprintf("request body exceeds the limit of %d bytes", mb.Limit),
				Hint:    "send a shorter prompt or raise --max-body"}
		case isTimeout(err):
			return nil, &Error{Status: http.StatusRequestTimeout, Stage: "deliver", Code: "read_timeout",
				Message: fmt.Sprintf("request body not received within %s (%d bytes arrived)", s.cfg.ReadTimeout, len(body))}
		}
		return nil, &Error{Status: http.StatusBadRequest, Stage: "deliver", Code: "bad_body",
			Message: "reading request body: " + err.Error()}
	}
	rc.SetReadDeadline(time.Time{})
	return body, nil
}

// decodeBody reads the body and decodes it as one JSON value into dst.
// Unknown fields are allowed: clients of both compatible APIs send fields
// glassbox does not use.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) *Error {
	body, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	return decodeJSON(body, dst)
}

func decodeJSON(body []byte, dst any) *Error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("invalid_json", "", "request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(dst); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return badRequest("invalid_json", "", "malformed JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			return badRequest("invalid_json", te.Field, "field %q: got JSON %s, want %s (at byte %d)",
				te.Field, te.Value, te.Type, te.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("invalid_json", "", "malformed JSON: body ends after %d bytes inside a value", len(body))
		}
		return badRequest("invalid_json", "", "malformed JSON: %v", err)
	}
	if dec.More() {
		return badRequest("invalid_json", "", "malformed JSON: extra data after the object at byte %d", dec.InputOffset())
	}
	return nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// streamWriter writes one streamed response (NDJSON or SSE), flushing each
// message and giving each write its own deadline, so a client that stops
// reading is dropped after WriteTimeout instead of holding a slot forever.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	err     error // first write error; every later write is skipped
}

func newStreamWriter(w http.ResponseWriter, contentType string, timeout time.Duration) *streamWriter {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	return &streamWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write sends b and flushes it.
func (sw *streamWriter) write(b []byte) error {
	if sw.err != nil {
		return sw.err
	}
	if sw.timeout > 0 {
		sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	}
	if _, err := sw.w.Write(b); err != nil {
		sw.err = fmt.Errorf("deliver: writing to client: %w", err)
		return sw.err
	}
	if err := sw.rc.Flush(); err != nil {
		sw.err = fmt.Errorf("deliver: flushing to client: %w", err)
	}
	return sw.err
}

// ndjson writes v as one line of newline-delimited JSON.
func (sw *streamWriter) ndjson(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("deliver: encoding chunk: %w", err)
	}
	return sw.write(append(b, '\n'))
}

// sse writes one Server-Sent Event (https://html.spec.whatwg.org/multipage/server-sent-events.html).
// id and event are omitted when empty; data must hold no newline (JSON
// without indentation never does).
func (sw *streamWriter) sse(id, event string, data []byte) error {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return sw.write(b.Bytes())
}
