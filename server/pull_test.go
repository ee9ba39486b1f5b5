package server

import (
	"strings"
	"testing"
)

func TestOllamaPull(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("POST", "/api/pull", map[string]any{"model": "hf.co/owner/repo:Q4_K_M"})
	job := ts.m.Job(resp.Header.Get("X-Glassbox-Job"))
	lines := ndjson(t, resp)
	var status []string
	last := int64(0)
	for _, l := range lines {
		status = append(status, l["status"].(string))
		if c, ok := l["completed"].(float64); ok {
			if int64(c) <= last || l["total"] != 300.0 {
				t.Errorf("progress %v after %d", l, last)
			}
			last = int64(c)
		}
	}
	want := "pulling manifest|pulling hf.co/owner/repo:Q4_K_M|pulling hf.co/owner/repo:Q4_K_M|pulling hf.co/owner/repo:Q4_K_M|verifying sha256 digest|writing manifest|success"
	if got := strings.Join(status, "|"); got != want || last != 300 || lines[len(lines)-1]["model"] != "pulled" {
		t.Errorf("statuses %s, last %d: %v", got, last, lines)
	}
	if job == nil || job.Info().Kind != "pull" {
		t.Errorf("job %v", job)
	}

	var out map[string]any
	decode(t, ts.do("POST", "/api/pull", map[string]any{"name": "hf.co/owner/repo", "stream": false}), 200, &out)
	if out["status"] != "success" {
		t.Errorf("not streamed: %v", out)
	}
	// A failure after the first chunk arrives as a final error line.
	lines = ndjson(t, ts.do("POST", "/api/pull", map[string]any{"model": "bad/ref"}))
	if e, _ := lines[len(lines)-1]["error"].(string); !strings.HasPrefix(e, "load: pull bad/ref: HTTP 404") {
		t.Errorf("failed pull: %v", lines)
	}
	decode(t, ts.do("POST", "/api/pull", map[string]any{"model": "bad/ref", "stream": false}), 502, &out)
	decode(t, ts.do("POST", "/api/pull", map[string]any{}), 400, &out)
}

func TestOllamaCopy(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("POST", "/api/copy", map[string]any{"source": "tiny", "destination": "tiny-2"})
	resp.Body.Close()
	if resp.StatusCode != 200 || len(ts.f.copied) != 1 || ts.f.copied[0] != "tiny>tiny-2" {
		t.Errorf("HTTP %d, copied %v", resp.StatusCode, ts.f.copied)
	}
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "nope", "destination": "x"}), 404, nil)
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "tiny"}), 400, nil)
	var out map[string]any
	decode(t, ts.do("POST", "/api/copy", map[string]any{"source": "other", "destination": "tiny"}), 400, &out)
	if out["error"] != `load: model "tiny" already exists` {
		t.Errorf("taken name: %v", out)
	}
}

func TestOllamaDelete(t *testing.T) {
	ts := start(t, newFake(), nil)
	resp := ts.do("DELETE", "/api/delete", map[string]any{"model": "tiny"})
	resp.Body.Close()
	if resp.StatusCode != 200 || len(ts.f.deleted) != 1 || ts.f.deleted[0] != "tiny" {
		t.Errorf("HTTP %d, deleted %v", resp.StatusCode, ts.f.deleted)
	}
	decode(t, ts.do("DELETE", "/api/delete", map[string]any{"model": "nope"}), 404, nil)
	decode(t, ts.do("DELETE", "/api/delete", map[string]any{}), 400, nil)
}
