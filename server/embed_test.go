package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
)

func TestOllamaEmbed(t *testing.T) {
	ts := start(t, newFake(), nil)
	long := strings.Repeat("w ", 70) // the fake's context holds 64 words
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		want   [][]float32 // before normalization
		check  func(t *testing.T, out map[string]any)
	}{
		{"one string", map[string]any{"model": "tiny", "input": "a bb"}, 200, [][]float32{{2, 4, 1}}, nil},
		{"strings", map[string]any{"model": "tiny", "input": []string{"a", "b c d"}}, 200, [][]float32{{1, 1, 1}, {3, 5, 1}}, nil},
		{"dimensions", map[string]any{"model": "tiny", "input": "a bb", "dimensions": 2}, 200, [][]float32{{2, 4}}, nil},
		{"too long", map[string]any{"model": "tiny", "input": []string{"a", long}}, 400, nil, func(t *testing.T, out map[string]any) {
			if msg, _ := out["error"].(string); !strings.Contains(msg, "input 1 has 70 tokens but the context holds 64") {
				t.Errorf("error %v", out)
			}
		}},
		{"truncated", map[string]any{"model": "tiny", "input": []string{"a", long}, "truncate": true}, 200, [][]float32{{1, 1, 1}, {64, 127, 1}},
			func(t *testing.T, out map[string]any) {
				if tr, _ := out["truncated"].([]any); len(tr) != 1 || tr[0] != 1.0 {
					t.Errorf("truncated %v", out["truncated"])
				}
			}},
		{"no input", map[string]any{"model": "tiny"}, 400, nil, nil},
		{"empty list", map[string]any{"model": "tiny", "input": []string{}}, 400, nil, nil},
		{"not text", map[string]any{"model": "tiny", "input": 7}, 400, nil, nil},
		{"no model", map[string]any{"input": "a"}, 400, nil, nil},
		{"unknown model", map[string]any{"model": "nope", "input": "a"}, 404, nil, nil},
		{"bad option", map[string]any{"model": "tiny", "input": "a", "options": map[string]any{"num_ctx": "big"}}, 400, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out map[string]any
			resp := ts.do("POST", "/api/embed", tc.body)
			decode(t, resp, tc.status, &out)
			if tc.check != nil {
				tc.check(t, out)
			}
			if tc.want == nil {
				return
			}
			var got struct {
				Model      string      `json:"model"`
				Embeddings [][]float32 `json:"embeddings"`
				Count      int         `json:"prompt_eval_count"`
				Total      int64       `json:"total_duration"`
			}
			b, _ := json.Marshal(out)
			json.Unmarshal(b, &got)
			if got.Model != "tiny" || got.Total <= 0 || len(got.Embeddings) != len(tc.want) {
				t.Fatalf("got %s", b)
			}
			words := 0
			for i, w := range tc.want {
				words += int(w[0])
				nearVec(t, got.Embeddings[i], normalized(w))
			}
			if got.Count != words {
				t.Errorf("prompt_eval_count %d, want %d", got.Count, words)
			}
			job := ts.m.Job(resp.Header.Get("X-Glassbox-Job"))
			if job == nil || job.Info().Kind != "embed" {
				t.Errorf("X-Glassbox-Job %q: %v", resp.Header.Get("X-Glassbox-Job"), job)
			}
		})
	}
	// Options reach the backend.
	decode(t, ts.do("POST", "/api/embed", map[string]any{"model": "tiny", "input": "a", "options": map[string]any{"num_ctx": 32, "num_thread": 1},
		"keep_alive": "1m"}), 200, nil)
	if r := ts.f.embeds[len(ts.f.embeds)-1]; r.NumCtx != 32 || r.NumThread != 1 || r.KeepAlive == nil || r.KeepAlive.Minutes() != 1 || !r.Normalize || r.Truncate {
		t.Errorf("request reached the backend as %+v", r)
	}
}

func TestOllamaEmbeddings(t *testing.T) {
	ts := start(t, newFake(), nil)
	var out struct {
		Embedding []float32 `json:"embedding"`
	}
	decode(t, ts.do("POST", "/api/embeddings", map[string]any{"model": "tiny", "prompt": "a bb"}), 200, &out)
	nearVec(t, out.Embedding, []float32{2, 4, 1}) // not normalized
}

func TestOpenAIEmbeddings(t *testing.T) {
	ts := start(t, newFake(), nil)
	type response struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string          `json:"object"`
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	var floats, b64 response
	decode(t, ts.do("POST", "/v1/embeddings", map[string]any{"model": "tiny", "input": []string{"a bb", "c"}}), 200, &floats)
	decode(t, ts.do("POST", "/v1/embeddings", map[string]any{"model": "tiny", "input": []string{"a bb", "c"}, "encoding_format": "base64"}), 200, &b64)
	if floats.Object != "list" || floats.Model != "tiny" || len(floats.Data) != 2 || floats.Usage.PromptTokens != 3 || floats.Usage.TotalTokens != 3 {
		t.Fatalf("got %+v", floats)
	}
	for i, want := range [][]float32{{2, 4, 1}, {1, 1, 1}} {
		var v []float32
		if err := json.Unmarshal(floats.Data[i].Embedding, &v); err != nil || floats.Data[i].Index != i || floats.Data[i].Object != "embedding" {
			t.Fatalf("data %d: %s (%v)", i, floats.Data[i].Embedding, err)
		}
		nearVec(t, v, normalized(want))
		var s string
		json.Unmarshal(b64.Data[i].Embedding, &s)
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != 4*len(v) {
			t.Fatalf("base64 %q: %v", s, err)
		}
		for k := range v {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])); got != v[k] {
				t.Errorf("base64 value %d: %g, float %g", k, got, v[k])
			}
		}
	}
	// Token ids: one array, or arrays of them.
	var ids response
	decode(t, ts.do("POST", "/v1/embeddings", map[string]any{"model": "tiny", "input": [][]int{{1, 2}, {3}}}), 200, &ids)
	if len(ids.Data) != 2 || len(ts.f.embeds[len(ts.f.embeds)-1].InputIDs) != 2 {
		t.Errorf("ids: %+v", ids)
	}
	for _, tc := range []struct {
		body   map[string]any
		status int
		param  string
	}{
		{map[string]any{"model": "tiny", "input": "a", "encoding_format": "int8"}, 400, "encoding_format"},
		{map[string]any{"model": "tiny", "input": "a", "dimensions": -1}, 400, "dimensions"},
		{map[string]any{"model": "tiny"}, 400, "input"},
		{map[string]any{"input": "a"}, 400, "model"},
		{map[string]any{"model": "tiny", "input": strings.Repeat("w ", 70)}, 400, ""},
		{map[string]any{"model": "nope", "input": "a"}, 404, ""},
	} {
		var out struct {
			Error struct {
				Message string `json:"message"`
				Param   string `json:"param"`
			} `json:"error"`
		}
		decode(t, ts.do("POST", "/v1/embeddings", tc.body), tc.status, &out)
		if out.Error.Message == "" || tc.param != "" && out.Error.Param != tc.param {
			t.Errorf("%v: error %+v", tc.body, out.Error)
		}
	}
}

// TestNativeEmbedJob: a jobs API request with input is an embedding job;
// its result event carries the vectors.
func TestNativeEmbedJob(t *testing.T) {
	ts := start(t, newFake(), nil)
	jc := createJob(t, ts, map[string]any{"model": "tiny", "input": []string{"a bb"}, "normalize": false, "pooling": "last"})
	if jc.Kind != "embed" {
		t.Errorf("kind %q", jc.Kind)
	}
	evs, ended := events(t, ts, jc.ID, 0)
	var res *EmbedResult
	for _, ev := range evs {
		if ev.Type == api.TypeResult {
			json.Unmarshal(ev.Result, &res)
		}
	}
	if !ended || res == nil || len(res.Embeddings) != 1 {
		t.Fatalf("events %v", evs)
	}
	nearVec(t, res.Embeddings[0], []float32{2, 4, 1})
	if r := ts.f.embeds[0]; r.Pooling != "last" || r.Normalize {
		t.Errorf("request reached the backend as %+v", r)
	}
	for _, body := range []map[string]any{
		{"model": "tiny", "input": "a", "prompt": "b"},
		{"model": "tiny", "input": "a", "pooling": "max"},
		{"model": "tiny", "input": 3},
	} {
		decode(t, ts.do("POST", "/v1/jobs", body), 400, nil)
	}
}

func normalized(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(ss))
	}
	return out
}

func nearVec(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("vector %v, want %v", got, want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("vector %v, want %v", got, want)
		}
	}
}
