package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestOpenAIChat(t *testing.T) {
	ts := start(t, newFake(), nil)
	msgs := []map[string]any{{"role": "developer", "content": "be brief"},
		{"role": "user", "content": []map[string]any{{"type": "text", "text": "tell"}, {"type": "text", "text": " a story"}}}}
	t.Run("stream", func(t *testing.T) {
		resp := ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "max_tokens": 3, "seed": 7})
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("content type %q", ct)
		}
		evs := readSSE(t, resp.Body, 0)
		resp.Body.Close()
		// 3 content chunks, the finish chunk, the usage chunk, [DONE].
		if len(evs) != 6 || evs[5].data != "[DONE]" {
			t.Fatalf("events %v", evs)
		}
		var text strings.Builder
		var id string
		for i, ev := range evs[:5] {
			var c openAIChatResponse
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatal(err)
			}
			if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
				t.Errorf("chunk %d: %+v", i, c)
			}
			if id == "" {
				id = c.ID
			} else if c.ID != id {
				t.Errorf("chunk %d id %s, want %s", i, c.ID, id)
			}
			switch {
			case i < 3:
				if d := c.Choices[0].Delta.Content; d != nil {
					text.WriteString(*d)
				}
				if (i == 0) != (c.Choices[0].Delta.Role == "assistant") {
					t.Errorf("chunk %d role %q", i, c.Choices[0].Delta.Role)
				}
			case i == 3:
				if *c.Choices[0].FinishReason != "length" {
					t.Errorf("finish %v", *c.Choices[0].FinishReason)
				}
			case i == 4:
				if len(c.Choices) != 0 || c.Usage == nil || c.Usage.PromptTokens != 5 || c.Usage.CompletionTokens != 3 || c.Usage.TotalTokens != 8 {
					t.Errorf("usage chunk %+v %+v", c, c.Usage)
				}
			}
		}
		if text.String() != "Once upon a" {
			t.Errorf("text %q", text.String())
		}
		req := ts.f.requests[len(ts.f.requests)-1]
		if req.Messages[0].Role != "system" || req.Messages[1].Content != "tell a story" || req.Options.Temperature != 1 || *req.Options.Seed != 7 {
			t.Errorf("request %+v", req)
		}
	})
	t.Run("no stream", func(t *testing.T) {
		var c openAIChatResponse
		decode(t, ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs,
			"stop": "cat", "temperature": 0}), 200, &c)
		if c.Object != "chat.completion" || *c.Choices[0].Message.Content != "Once upon a time, there was a" ||
			*c.Choices[0].FinishReason != "stop" || c.Usage.CompletionTokens != 8 {
			t.Errorf("%+v %+v", c, c.Choices[0].Message)
		}
	})
}

// TestOpenAIChoices: n choices are n generations (a seed s gives choice i
// the seed s+i), in one answer with the usage summed, or streamed one
// after another with their indexes.
func TestOpenAIChoices(t *testing.T) {
	ts := start(t, newFake(), nil)
	msgs := []map[string]any{{"role": "user", "content": "tell a story"}}
	var c openAIChatResponse
	decode(t, ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "n": 3, "seed": 40, "max_tokens": 2}), 200, &c)
	if len(c.Choices) != 3 || c.Usage.CompletionTokens != 6 || c.Usage.PromptTokens != 3 {
		t.Fatalf("%+v, usage %+v", c, c.Usage)
	}
	for i, ch := range c.Choices {
		if ch.Index != i || *ch.Message.Content != "Once upon" || *ch.FinishReason != "length" {
			t.Errorf("choice %d: %+v %+v", i, ch, ch.Message)
		}
	}
	ts.f.mu.Lock()
	reqs := ts.f.requests[len(ts.f.requests)-3:]
	ts.f.mu.Unlock()
	for i, r := range reqs {
		if *r.Options.Seed != uint64(40+i) {
			t.Errorf("choice %d ran with seed %d", i, *r.Options.Seed)
		}
	}
	var l openAICompletionResponse
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Once", "n": 2, "max_tokens": 1, "echo": true}), 200, &l)
	if len(l.Choices) != 2 || l.Choices[1].Index != 1 || l.Choices[1].Text != "OnceOnce" || l.Usage.CompletionTokens != 2 {
		t.Errorf("%+v", l)
	}
	resp := ts.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "n": 2, "max_tokens": 2, "stream": true,
		"stream_options": map[string]any{"include_usage": true}})
	evs := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	var got []string // index:content or index:finish per chunk
	for _, ev := range evs[:len(evs)-2] {
		var ch openAIChatResponse
		if err := json.Unmarshal([]byte(ev.data), &ch); err != nil {
			t.Fatal(err)
		}
		d := ch.Choices[0]
		switch {
		case d.FinishReason != nil:
			got = append(got, fmt.Sprintf("%d:%s", d.Index, *d.FinishReason))
		case d.Delta.Content != nil:
			got = append(got, fmt.Sprintf("%d:%q%s", d.Index, *d.Delta.Content, d.Delta.Role))
		}
	}
	// With no room to wait, the choices that cannot start at once start
	// as the first ones finish.
	solo := start(t, newFake(), func(c *Config) { c.MaxQueue = -1 })
	var c3 openAIChatResponse
	decode(t, solo.do("POST", "/v1/chat/completions", map[string]any{"model": "tiny", "messages": msgs, "n": 3, "max_tokens": 1}), 200, &c3)
	if len(c3.Choices) != 3 || c3.Choices[2].Index != 2 {
		t.Errorf("no queue: %+v", c3)
	}
	want := `0:"Once"assistant 0:" upon" 0:length 1:"Once"assistant 1:" upon" 1:length`
	if strings.Join(got, " ") != want || !strings.Contains(evs[len(evs)-2].data, `"completion_tokens":4`) || evs[len(evs)-1].data != "[DONE]" {
		t.Errorf("stream %v, usage %s; want %s", got, evs[len(evs)-2].data, want)
	}
}

func TestOpenAICompletion(t *testing.T) {
	ts := start(t, newFake(), nil)
	var c openAICompletionResponse
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "Once", "echo": true}), 200, &c)
	// max_tokens defaults to 16 for the legacy endpoint; the fake stops at 10.
	if c.Object != "text_completion" || c.Choices[0].Text != "OnceOnce upon a time, there was a cat." || c.Usage.CompletionTokens != 10 {
		t.Errorf("%+v", c)
	}
	if req := ts.f.requests[0]; !req.Raw || req.Options.NumPredict != 16 {
		t.Errorf("request %+v", req)
	}
	resp := ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": []string{"Once"}, "stream": true, "max_tokens": 2})
	evs := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	if len(evs) != 4 || evs[3].data != "[DONE]" || !strings.Contains(evs[2].data, `"finish_reason":"length"`) {
		t.Errorf("events %v", evs)
	}
}

// TestOpenAIScoring: echo with logprobs scores the prompt's tokens as
// OpenAI's legacy completions do (the first one's null), max_tokens 0
// generates nothing (with echo only), and a prompt may be token ids.
func TestOpenAIScoring(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	var c struct {
		Choices []struct {
			Text         string
			FinishReason string `json:"finish_reason"`
			Logprobs     struct {
				Tokens        []string
				TokenLogprobs []*float64       `json:"token_logprobs"`
				TopLogprobs   []map[string]any `json:"top_logprobs"`
				TextOffset    []int            `json:"text_offset"`
			}
		}
		Usage openAIUsage
	}
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "the cat sat", "echo": true, "logprobs": 1, "max_tokens": 0}), 200, &c)
	ch := c.Choices[0]
	lp := ch.Logprobs
	if ch.Text != "the cat sat" || ch.FinishReason != "length" || c.Usage.CompletionTokens != 0 || c.Usage.PromptTokens != 3 ||
		strings.Join(lp.Tokens, "|") != "the|cat|sat" || lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil ||
		lp.TokenLogprobs[1] == nil || *lp.TokenLogprobs[1] != -1.0/3 || lp.TopLogprobs[2]["the"] != -0.1 || lp.TextOffset[1] != 3 {
		t.Errorf("scored prompt %+v, usage %+v", c.Choices, c.Usage)
	}
	if q := last(); !q.Options.PromptLogprobs || !q.Options.NoGenerate {
		t.Errorf("options %+v", q.Options)
	}
	// Scored and continued: the prompt's logprobs, then the generated ones.
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": "the cat", "echo": true, "logprobs": 0, "max_tokens": 2}), 200, &c)
	if lp := c.Choices[0].Logprobs; len(lp.Tokens) < 4 || lp.Tokens[2] != "Once" || lp.TokenLogprobs[0] != nil || lp.TextOffset[2] != len("the cat") {
		t.Errorf("scored and continued %+v", c.Choices[0])
	}
	decode(t, ts.do("POST", "/v1/completions", map[string]any{"model": "tiny", "prompt": [][]int{{104, 105}}, "echo": true, "max_tokens": 1}), 200, &c)
	if q := last(); !slices.Equal(q.PromptIDs, []int{104, 105}) || !strings.HasPrefix(c.Choices[0].Text, "hi") {
		t.Errorf("prompt ids %v, text %q", q.PromptIDs, c.Choices[0].Text)
	}
	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"model": "tiny", "prompt": "a", "max_tokens": 0}, "max_tokens 0 generates nothing: give it with echo"},
		{map[string]any{"model": "tiny", "prompt": "a", "echo": true, "logprobs": 1, "stream": true}, "echo with logprobs (scoring the prompt) is not streamed"},
		{map[string]any{"model": "tiny", "prompt": []any{1, "a"}}, "prompt must be a string, token ids"},
		{map[string]any{"model": "tiny", "prompt": "a", "echo": true, "max_tokens": 0, "n": 2}, "n must be 1"},
	} {
		var e openAIError
		decode(t, ts.do("POST", "/v1/completions", tc.body), 400, &e)
		if !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%v: %q, want %q", tc.body, e.Error.Message, tc.want)
		}
	}
}

func TestOpenAIModels(t *testing.T) {
	ts := start(t, newFake(), nil)
	var list openAIModelList
	decode(t, ts.do("GET", "/v1/models", nil), 200, &list)
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "tiny" || list.Data[0].Object != "model" ||
		list.Data[0].Verdict != "fits, ~9000 tok/s" {
		t.Errorf("%+v", list)
	}
	var m openAIModel
	decode(t, ts.do("GET", "/v1/models/tiny", nil), 200, &m)
	if m.ID != "tiny" {
		t.Errorf("%+v", m)
	}
	var e openAIError
	decode(t, ts.do("GET", "/v1/models/nope", nil), http.StatusNotFound, &e)
	if e.Error.Type != "invalid_request_error" || *e.Error.Code != "model_not_found" {
		t.Errorf("%+v", e)
	}
}
