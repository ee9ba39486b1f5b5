package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestLlamaServer: llama-server's dialect — /completion's prompt forms,
// options and answers, whole and streamed; /tokenize, /detokenize,
// /apply-template, /props, /health; and the errors.
func TestLlamaServer(t *testing.T) {
	ts := start(t, newFake(), func(c *Config) { c.DefaultCtx = 96 })
	last := ts.last
	type completion struct {
		Content         string
		Stop            bool
		StopType        string `json:"stop_type"`
		StoppingWord    string `json:"stopping_word"`
		TokensPredicted int    `json:"tokens_predicted"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		Tokens          []int
		Probs           []struct {
			ID          int
			Token       string
			TopLogprobs []struct{ ID int } `json:"top_logprobs"`
		} `json:"completion_probabilities"`
		Timings struct {
			PredictedN int `json:"predicted_n"`
		}
	}
	t.Run("completion", func(t *testing.T) {
		var c completion
		decode(t, ts.do("POST", "/completion", map[string]any{"model": "tiny", "prompt": "ab", "n_predict": 4, "temperature": 0.5,
			"top_k": 7, "min_p": 0, "stop": []string{"zzz"}, "mirostat": 0, "typical_p": 1, "logit_bias": [][]any{{5, false}, {6, 2}},
			"n_probs": 2, "return_tokens": true, "cache_prompt": true}), 200, &c)
		if c.Content != "Once upon a time" || !c.Stop || c.StopType != "limit" || c.TokensPredicted != 4 || c.TokensEvaluated != 3 || c.Timings.PredictedN != 4 {
			t.Errorf("completion %+v", c)
		}
		if len(c.Tokens) != len(c.Probs) || len(c.Tokens) < 4 || c.Probs[0].ID != c.Tokens[0] || len(c.Probs[0].TopLogprobs) != 2 {
			t.Errorf("tokens %v, probabilities %+v", c.Tokens, c.Probs)
		}
		q := last()
		if !slices.Equal(q.PromptIDs, []int{fakeBOS, 'a', 'b'}) || !q.Raw || q.Options.NumPredict != 4 || q.Options.Temperature != 0.5 ||
			q.Options.TopK != 7 || q.Options.MinP != 0 || q.Options.LogitBias[5] != llamaNever || q.Options.LogitBias[6] != 2 || q.Options.TopLogprobs != 2 {
			t.Errorf("request %+v, options %+v", q.PromptIDs, q.Options)
		}
	})
	t.Run("prompt forms", func(t *testing.T) {
		for _, tc := range []struct {
			prompt any
			want   []int
		}{
			{[]int{5, 6, 7}, []int{5, 6, 7}},
			{[]any{1, "ab", 2}, []int{1, 'a', 'b', 2}},
			{"x<s>", []int{fakeBOS, 'x', fakeBOS}},
		} {
			decode(t, ts.do("POST", "/completion", map[string]any{"model": "tiny", "prompt": tc.prompt, "n_predict": 1}), 200, nil)
			if got := last().PromptIDs; !slices.Equal(got, tc.want) {
				t.Errorf("prompt %v: ids %v, want %v", tc.prompt, got, tc.want)
			}
		}
	})
	t.Run("stream", func(t *testing.T) {
		var whole completion
		decode(t, ts.do("POST", "/completion", map[string]any{"model": "tiny", "prompt": "ab", "n_predict": 6, "stop": []string{"a time"}}), 200, &whole)
		resp := ts.do("POST", "/completions", map[string]any{"model": "tiny", "prompt": "ab", "n_predict": 6, "stop": []string{"a time"}, "stream": true})
		defer resp.Body.Close()
		var text strings.Builder
		var final completion
		evs := readSSE(t, resp.Body, 0)
		for i, ev := range evs {
			var c completion
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil || c.Stop != (i == len(evs)-1) {
				t.Fatalf("chunk %d: %s (%v)", i, ev.data, err)
			}
			text.WriteString(c.Content)
			final = c
		}
		if text.String() != whole.Content || whole.Content != "Once upon a" || final.StopType != "word" || final.StoppingWord != "a time" ||
			final.TokensPredicted != whole.TokensPredicted {
			t.Errorf("streamed %q, final %+v; whole %+v", text.String(), final, whole)
		}
	})
	t.Run("tokenize", func(t *testing.T) {
		var out struct{ Tokens []any }
		decode(t, ts.do("POST", "/tokenize", map[string]any{"model": "tiny", "content": "é<s>", "add_special": true, "with_pieces": true}), 200, &out)
		got, _ := json.Marshal(out.Tokens)
		if string(got) != `[{"id":256,"piece":"\u003cs\u003e"},{"id":195,"piece":[195]},{"id":169,"piece":[169]},{"id":256,"piece":"\u003cs\u003e"}]` {
			t.Errorf("tokens %s", got)
		}
		decode(t, ts.do("POST", "/tokenize", map[string]any{"model": "tiny", "content": "<s>", "parse_special": false}), 200, &out)
		if got, _ := json.Marshal(out.Tokens); string(got) != `[60,115,62]` {
			t.Errorf("tokens without parse_special %s", got)
		}
		var d struct{ Content string }
		decode(t, ts.do("POST", "/detokenize", map[string]any{"model": "tiny", "tokens": []int{fakeBOS, 'h', 'i'}}), 200, &d)
		if d.Content != "<s>hi" {
			t.Errorf("detokenized %q", d.Content)
		}
		var p struct{ Prompt string }
		decode(t, ts.do("POST", "/apply-template", map[string]any{"model": "tiny", "messages": []any{
			map[string]any{"role": "developer", "content": "Be brief."}, map[string]any{"role": "user", "content": "hi"}}}), 200, &p)
		if p.Prompt != "<|system|>Be brief.\n<|user|>hi\n<|assistant|>" {
			t.Errorf("prompt %q", p.Prompt)
		}
	})
	t.Run("props and health", func(t *testing.T) {
		var p struct {
			Settings struct {
				NCtx int `json:"n_ctx"`
			} `json:"default_generation_settings"`
			Slots    int    `json:"total_slots"`
			Template string `json:"chat_template"`
			Train    int    `json:"n_ctx_train"`
		}
		decode(t, ts.do("GET", "/props?model=tiny", nil), 200, &p)
		if p.Settings.NCtx != 96 || p.Slots != 1 || p.Template == "" || p.Train != 128 {
			t.Errorf("props %+v", p)
		}
		var h map[string]string
		decode(t, ts.do("GET", "/health", nil), 200, &h)
		if h["status"] != "ok" {
			t.Errorf("health %v", h)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			path   string
			body   map[string]any
			status int
			want   string
		}{
			{"/completion", map[string]any{"prompt": "a"}, 400, "model is required: this server has 2 models (tiny, other)"},
			{"/completion", map[string]any{"model": "tiny"}, 400, "prompt is required"},
			{"/completion", map[string]any{"model": "tiny", "prompt": []any{[]int{1}}}, 400, "one prompt per request"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "mirostat": 2}, 400, "mirostat is not supported: send 0 (off)"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "grammar": "root ::= \"a\""}, 400, "GBNF grammars are not supported"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "ignore_eos": true}, 400, "ignore_eos is not supported"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "temperature": "hot"}, 400, "temperature must be a number"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "n_probs": 50}, 400, "n_probs is 50"},
			{"/completion", map[string]any{"model": "tiny", "prompt": "a", "logit_bias": [][]any{{"the", 1}}}, 400, "logit_bias must be"},
			{"/completion", map[string]any{"model": "nope", "prompt": "a"}, 404, "model"},
			{"/detokenize", map[string]any{"model": "tiny", "tokens": []int{999}}, 400, "outside the vocabulary of 257"},
			{"/apply-template", map[string]any{"model": "tiny"}, 400, "messages must hold at least one message"},
		} {
			var e openAIError
			decode(t, ts.do("POST", tc.path, tc.body), tc.status, &e)
			if !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("%s %v: %q, want %q", tc.path, tc.body, e.Error.Message, tc.want)
			}
		}
	})
}
