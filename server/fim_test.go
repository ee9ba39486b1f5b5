package server

import (
	"reflect"
	"strings"
	"testing"
)

// TestFIM: fill in the middle from the three dialects that ask for it —
// Ollama's and OpenAI's suffix, llama-server's /infill — reaches the
// backend as the prompt before the cursor and a FIM suffix (and files),
// with no template; what cannot be done is a 400 that names the field.
func TestFIM(t *testing.T) {
	ts := start(t, newFake(), nil)
	var gen struct{ Response string }
	decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "prompt": "def add(a, b):", "suffix": "\nprint(add(1, 2))", "system": "ignored",
		"stream": false, "options": map[string]any{"num_predict": 3}}), 200, &gen)
	if q := ts.last(); q.FIM == nil || q.FIM.Suffix != "\nprint(add(1, 2))" || q.Prompt != "def add(a, b):" || q.System != "" || gen.Response == "" {
		t.Errorf("ollama suffix: request %+v (FIM %+v), response %q", q, q.FIM, gen.Response)
	}
	decode(t, ts.do("POST", "/api/generate", map[string]any{"model": "tiny", "prompt": "x", "stream": false, "options": map[string]any{"num_predict": 1}}), 200, nil)
	if q := ts.last(); q.FIM != nil {
		t.Errorf("no suffix, FIM %+v", q.FIM)
	}

	var c struct{ Choices []struct{ Text string } }
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "def add(a, b):", "suffix": "\n", "max_tokens": 2}), 200, &c)
	if q := ts.last(); q.FIM == nil || q.FIM.Suffix != "\n" || q.Prompt != "def add(a, b):" || len(c.Choices) != 1 {
		t.Errorf("openai suffix: request %+v, response %+v", q, c)
	}
	var e openAIError
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "a", "suffix": "b", "echo": true}), 400, &e)
	if !strings.Contains(e.Error.Message, "suffix (fill in the middle) takes a text prompt, without echo") {
		t.Errorf("suffix with echo: %q", e.Error.Message)
	}

	var in struct {
		Content string
		Prompt  string
	}
	decode(t, ts.do("POST", "/infill", map[string]any{"model": "tiny", "input_prefix": "def add(a, b):\n", "prompt": "    return", "input_suffix": "\n\nprint(add(1, 2))",
		"input_extra": []any{map[string]any{"filename": "util.py", "text": "def sub(a, b):\n    return a - b\n"}}, "n_predict": 3}), 200, &in)
	want := &FIM{Suffix: "\n\nprint(add(1, 2))", Files: []FIMFile{{Name: "util.py", Text: "def sub(a, b):\n    return a - b\n"}}}
	if q := ts.last(); !reflect.DeepEqual(q.FIM, want) || q.Prompt != "def add(a, b):\n    return" || !q.Raw || q.Options.NumPredict != 3 || in.Content == "" {
		t.Errorf("infill: request %+v (FIM %+v), response %+v", q, q.FIM, in)
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"model": "tiny", "input_prefix": []int{1, 2}, "input_suffix": "x"}, "input_prefix must be a string"},
		{map[string]any{"model": "tiny", "input_prefix": "a", "input_suffix": 3}, "input_suffix must be a string"},
		{map[string]any{"model": "tiny", "input_prefix": "a", "input_extra": "x"}, "input_extra must be an array"},
	} {
		decode(t, ts.do("POST", "/infill", tc.body), 400, &e)
		if !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%v: %q, want %q", tc.body, e.Error.Message, tc.want)
		}
	}
}
