package pipeline

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
)

// FuzzExplain feeds Explain arbitrary job summaries and event logs (as a
// journal from another version, or a damaged one, might hold): it must
// never panic.
func FuzzExplain(f *testing.F) {
	f.Add(`{"id":"j","state":"done","duration_ms":10}`,
		`[{"seq":1,"type":"stage_start","stage":"load"},{"seq":2,"type":"stage_done","stage":"load","duration_ms":20,"stats":{"items":5,"roofline":1}}]`)
	f.Add(`{"id":"j","state":"failed","error":{"stage":"encode","numbers":{"a":1}}}`,
		`[{"seq":1,"type":"stage_done","stage":"encode","duration_ms":-5},{"seq":2,"type":"progress","stage":"queued","progress":{"done":-1}}]`)
	f.Add(`{"id":"j","state":"cancelled","duration_ms":-3}`, `[{"type":"error"},{"type":"state","state":"cancelled"}]`)
	f.Fuzz(func(t *testing.T, jobJSON, eventsJSON string) {
		var job api.Job
		var evs []api.Event
		if json.Unmarshal([]byte(jobJSON), &job) != nil || json.Unmarshal([]byte(eventsJSON), &evs) != nil {
			return
		}
		if err := Explain(io.Discard, job, evs); err != nil {
			t.Fatal(err)
		}
	})
}
