package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// responseOut is a response object as a client reads it.
type responseOut struct {
	ID, Object, Status, Model string
	Background, Store         bool
	Error                     *responsesError
	IncompleteDetails         *responsesReason `json:"incomplete_details"`
	Instructions              *string
	PreviousResponseID        *string `json:"previous_response_id"`
	Temperature               float64
	Output                    []struct {
		Type, ID, Status, Role, Name, Arguments string
		CallID                                  string `json:"call_id"`
		Content                                 []struct{ Type, Text string }
	}
	Usage *responsesUsage
	Job   string `json:"glassbox_job"`
}

// text is what the SDKs' output_text gives: the message items' text.
func (r *responseOut) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		if o.Type == "message" {
			for _, c := range o.Content {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// TestResponses: /v1/responses in OpenAI's dialect — the conversation and
// options it builds from input items, whole and streamed responses,
// reasoning, function calls both ways, continuing a response, fetching
// one, background responses, and its errors.
func TestResponses(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	create := func(t *testing.T, body map[string]any) responseOut {
		t.Helper()
		var r responseOut
		decode(t, ts.do("POST", "/v1/responses", body), 200, &r)
		return r
	}
	weather := []any{map[string]any{"type": "function", "name": "get_weather", "description": "Weather",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}

	var first responseOut
	t.Run("whole", func(t *testing.T) {
		first = create(t, map[string]any{"model": "tiny", "input": "hi", "instructions": "Be brief.", "temperature": 0.7, "max_output_tokens": 4})
		if first.Object != "response" || first.ID != "resp_"+first.Job || first.Status != "incomplete" || first.IncompleteDetails == nil ||
			first.IncompleteDetails.Reason != "max_output_tokens" || first.text() != "Once upon a time" || first.Temperature != 0.7 ||
			first.Instructions == nil || *first.Instructions != "Be brief." || first.Usage == nil || first.Usage.OutputTokens != 4 ||
			first.Usage.TotalTokens != first.Usage.InputTokens+4 || first.Output[0].Role != "assistant" || first.Output[0].Content[0].Type != "output_text" {
			t.Errorf("response %+v", first)
		}
		q := last()
		if len(q.Messages) != 2 || q.Messages[0].Role != "system" || q.Messages[0].Content != "Be brief." || q.Messages[1].Content != "hi" ||
			q.Options.NumPredict != 4 || q.Options.Temperature != 0.7 || q.Options.TopP != 1 {
			t.Errorf("request %+v, options %+v", q.Messages, q.Options)
		}
	})
	t.Run("continued", func(t *testing.T) {
		r := create(t, map[string]any{"model": "tiny", "input": "more", "previous_response_id": first.ID, "max_output_tokens": 2})
		q := last()
		// The previous instructions are not carried over; its reply is.
		if len(q.Messages) != 3 || q.Messages[0].Content != "hi" || q.Messages[1].Role != "assistant" || q.Messages[1].Content != "Once upon a time" ||
			q.Messages[2].Content != "more" || r.PreviousResponseID == nil || *r.PreviousResponseID != first.ID || r.Instructions != nil {
			t.Errorf("continuation %+v; response %+v", q.Messages, r)
		}
	})
	var called responseOut
	t.Run("items and tools", func(t *testing.T) {
		called = create(t, map[string]any{"model": "tiny", "tools": weather, "tool_choice": "required", "input": []any{
			map[string]any{"role": "developer", "content": "Use tools."},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Weather in Paris?"}}},
			map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}},
			map[string]any{"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": `{"city":"Paris"}`},
			map[string]any{"type": "function_call_output", "call_id": "c1", "output": "sunny"},
			map[string]any{"role": "user", "content": "And Rome?"}}})
		q := last()
		if len(q.Messages) != 5 || q.Messages[0].Role != "system" || q.Messages[2].Role != "assistant" || len(q.Messages[2].ToolCalls) != 1 ||
			q.Messages[2].ToolCalls[0].ID != "c1" || string(q.Messages[2].ToolCalls[0].Arguments) != `{"city":"Paris"}` ||
			q.Messages[3].Role != "tool" || q.Messages[3].Name != "get_weather" || q.Messages[3].Content != "sunny" || q.Messages[4].Content != "And Rome?" {
			t.Errorf("conversation %+v", q.Messages)
		}
		if q.ToolChoice != ToolChoiceRequired || !strings.Contains(q.Options.Format, `"const":"get_weather"`) {
			t.Errorf("tool choice %q, format %s", q.ToolChoice, q.Options.Format)
		}
		n := len(called.Output)
		if n == 0 || called.Output[n-1].Type != "function_call" || called.Output[n-1].Name != "get_weather" ||
			called.Output[n-1].Arguments != `{"city":"Paris"}` || called.Output[n-1].CallID != "call_0" || called.Status != "completed" {
			t.Errorf("response %+v", called)
		}
	})
	t.Run("a function chosen", func(t *testing.T) {
		create(t, map[string]any{"model": "tiny", "input": "Weather?", "tools": weather, "tool_choice": map[string]any{"type": "function", "name": "get_weather"}})
		if q := last(); q.ToolChoice != "get_weather" {
			t.Errorf("tool choice %q", q.ToolChoice)
		}
	})
	t.Run("call answered", func(t *testing.T) {
		create(t, map[string]any{"model": "tiny", "previous_response_id": called.ID, "tools": weather,
			"input": []any{map[string]any{"type": "function_call_output", "call_id": "call_0", "output": "rainy"}}})
		q := last()
		n := len(q.Messages)
		if n < 3 || q.Messages[n-2].Role != "assistant" || len(q.Messages[n-2].ToolCalls) != 1 || q.Messages[n-2].ToolCalls[0].ID != "call_0" ||
			q.Messages[n-1].Role != "tool" || q.Messages[n-1].Name != "get_weather" || q.Messages[n-1].Content != "rainy" {
			t.Errorf("conversation %+v", q.Messages)
		}
	})
	t.Run("reasoning and format", func(t *testing.T) {
		r := create(t, map[string]any{"model": "tiny", "input": "hi", "reasoning": map[string]any{"effort": "low"},
			"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "x", "schema": map[string]any{"type": "object"}}}})
		q := last()
		if q.Options.Think == nil || !*q.Options.Think || q.Options.Format == "" {
			t.Errorf("think %v, format %q", q.Options.Think, q.Options.Format)
		}
		if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[0].Content[0].Text != "Hmm, a story." ||
			r.Usage.OutputTokensDetails.ReasoningTokens != 2 {
			t.Errorf("response %+v", r)
		}
		var got responseOut
		decode(t, ts.do("GET", "/v1/responses/"+r.ID, nil), 200, &got)
		if got.ID != r.ID || got.text() != r.text() || len(got.Output) != 2 || got.Usage.OutputTokensDetails.ReasoningTokens != 2 {
			t.Errorf("GET %s: %+v, created %+v", r.ID, got, r)
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp := ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "stream": true, "reasoning": map[string]any{"effort": "high"}})
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("content type %q", ct)
		}
		var kinds []string
		items := map[int]string{}
		text := map[string]string{}
		var final responseOut
		for i, ev := range readSSE(t, resp.Body, 0) {
			var v struct {
				Type        string
				Seq         int    `json:"sequence_number"`
				OutputIndex *int   `json:"output_index"`
				ItemID      string `json:"item_id"`
				Delta, Text string
				Item        struct{ Type, ID string }
				Response    responseOut
			}
			if err := json.Unmarshal([]byte(ev.data), &v); err != nil || v.Type != ev.event || v.Seq != i {
				t.Fatalf("event %d %q: %s (%v)", i, ev.event, ev.data, err)
			}
			kinds = append(kinds, strings.TrimPrefix(v.Type, "response."))
			switch v.Type {
			case "response.output_item.added":
				items[*v.OutputIndex] = v.Item.ID
			case "response.output_text.delta", "response.reasoning_text.delta":
				if items[*v.OutputIndex] != v.ItemID {
					t.Errorf("delta for item %s at output %d, which holds %s", v.ItemID, *v.OutputIndex, items[*v.OutputIndex])
				}
				text[v.ItemID] += v.Delta
			case "response.output_text.done", "response.reasoning_text.done":
				if text[v.ItemID] != v.Text {
					t.Errorf("%s: deltas %q, done %q", v.Type, text[v.ItemID], v.Text)
				}
			case "response.completed":
				final = v.Response
			}
		}
		want := "created in_progress output_item.added content_part.added reasoning_text.delta reasoning_text.delta reasoning_text.done content_part.done output_item.done " +
			"output_item.added content_part.added output_text.delta"
		if got := strings.Join(kinds, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "output_text.done content_part.done output_item.done completed") {
			t.Errorf("events %s", got)
		}
		if final.Status != "completed" || len(final.Output) != 2 || final.Output[1].Content[0].Text != text[final.Output[1].ID] ||
			final.Output[0].Content[0].Text != "Hmm, a story." || final.Usage.OutputTokensDetails.ReasoningTokens != 2 {
			t.Errorf("final %+v, streamed %v", final, text)
		}
	})
	t.Run("stream with a call", func(t *testing.T) {
		resp := ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "Weather?", "stream": true, "tools": weather, "max_output_tokens": 2})
		defer resp.Body.Close()
		var args string
		var kinds []string
		for _, ev := range readSSE(t, resp.Body, 0) {
			var v struct{ Type, Delta, Arguments string }
			json.Unmarshal([]byte(ev.data), &v)
			kinds = append(kinds, strings.TrimPrefix(v.Type, "response."))
			if v.Type == "response.function_call_arguments.delta" {
				args += v.Delta
			}
		}
		if got := strings.Join(kinds, " "); args != `{"city":"Paris"}` ||
			!strings.HasSuffix(got, "output_item.added function_call_arguments.delta function_call_arguments.done output_item.done completed") {
			t.Errorf("arguments %q, events %s", args, got)
		}
	})
	t.Run("logprobs", func(t *testing.T) {
		type lp struct {
			Token       string
			Logprob     float64
			TopLogprobs []struct{ Token string } `json:"top_logprobs"`
		}
		var r struct {
			Output []struct {
				Content []struct {
					Text     string
					Logprobs []lp
				}
			}
		}
		body := map[string]any{"model": "tiny", "input": "hi", "max_output_tokens": 4, "include": []string{"message.output_text.logprobs", "reasoning.encrypted_content"}, "top_logprobs": 2}
		decode(t, ts.do("POST", "/v1/responses", body), 200, &r)
		part := r.Output[0].Content[0]
		var text strings.Builder
		for _, l := range part.Logprobs {
			text.WriteString(l.Token)
			if len(l.TopLogprobs) != 2 || l.Logprob >= 0 {
				t.Errorf("token %+v", l)
			}
		}
		if text.String() != part.Text || len(part.Logprobs) == 0 || !last().Options.Logprobs || last().Options.TopLogprobs != 2 {
			t.Errorf("logprobs' tokens %q, text %q", text.String(), part.Text)
		}
		// Streamed: each delta carries its tokens', the final part all.
		body["stream"] = true
		resp := ts.do("POST", "/v1/responses", body)
		defer resp.Body.Close()
		var streamed []lp
		var final responseOut
		for _, ev := range readSSE(t, resp.Body, 0) {
			var v struct {
				Type     string
				Logprobs []lp
				Response responseOut
			}
			json.Unmarshal([]byte(ev.data), &v)
			if v.Type == "response.output_text.delta" {
				streamed = append(streamed, v.Logprobs...)
			}
			if v.Type == "response.incomplete" {
				final = v.Response
			}
		}
		if len(streamed) != len(part.Logprobs) || final.text() != part.Text {
			t.Errorf("streamed %d logprobs (text %q), whole %d", len(streamed), final.text(), len(part.Logprobs))
		}
		var e openAIError
		decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "top_logprobs": 30}), 400, &e)
		if !strings.Contains(e.Error.Message, "top_logprobs is 30") {
			t.Errorf("top_logprobs 30: %q", e.Error.Message)
		}
	})
	t.Run("background", func(t *testing.T) {
		r := create(t, map[string]any{"model": "tiny", "input": "hi", "background": true})
		if r.Status != "queued" {
			t.Errorf("background response %+v", r)
		}
		deadline := time.Now().Add(patience)
		for r.Status == "queued" || r.Status == "in_progress" {
			if time.Now().After(deadline) {
				t.Fatalf("still %s", r.Status)
			}
			time.Sleep(10 * time.Millisecond)
			decode(t, ts.do("GET", "/v1/responses/"+r.ID, nil), 200, &r)
		}
		if r.Status != "completed" || r.text() == "" {
			t.Errorf("background response ended %+v", r)
		}
	})
	t.Run("errors", func(t *testing.T) {
		jc := createJob(t, ts, map[string]any{"model": "tiny", "prompt": "a"})
		for _, tc := range []struct {
			body   map[string]any
			status int
			want   string
		}{
			{map[string]any{"input": "hi"}, 400, "model is required"},
			{map[string]any{"model": "tiny"}, 400, "input is required"},
			{map[string]any{"model": "tiny", "input": []any{}}, 400, "input is required"},
			{map[string]any{"model": "tiny", "input": "hi", "truncation": "auto"}, 400, `truncation "auto" is not supported`},
			{map[string]any{"model": "tiny", "input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}}, 400, `input[0].content[0]: a "input_image" part is not supported`},
			{map[string]any{"model": "tiny", "input": []any{map[string]any{"type": "item_reference", "id": "x"}}}, 400, `a "item_reference" item is not supported`},
			{map[string]any{"model": "tiny", "input": []any{map[string]any{"type": "function_call_output", "call_id": "nope", "output": "x"}}}, 400, `no function_call with call_id "nope"`},
			{map[string]any{"model": "tiny", "input": []any{map[string]any{"role": "tool", "content": "x"}}}, 400, `role "tool" is not`},
			{map[string]any{"model": "tiny", "input": "hi", "tools": []any{map[string]any{"type": "web_search_preview"}}}, 400, `built-in tool "web_search_preview"`},
			{map[string]any{"model": "tiny", "input": "hi", "tool_choice": "sometimes"}, 400, `tool_choice "sometimes"`},
			{map[string]any{"model": "tiny", "input": "hi", "text": map[string]any{"format": map[string]any{"type": "json_schema"}}}, 400, "needs a schema"},
			{map[string]any{"model": "tiny", "input": "hi", "previous_response_id": "resp_nope"}, 404, `previous response "resp_nope" not found`},
			{map[string]any{"model": "tiny", "input": "hi", "previous_response_id": "resp_" + jc.ID}, 400, "is not a response of /v1/responses"},
			{map[string]any{"model": "tiny", "input": "hi", "background": true, "stream": true}, 400, "not streamed"},
			{map[string]any{"model": "nope", "input": "hi"}, 404, "model"},
		} {
			var e openAIError
			decode(t, ts.do("POST", "/v1/responses", tc.body), tc.status, &e)
			if !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("%v: %q, want %q", tc.body, e.Error.Message, tc.want)
			}
		}
		for _, id := range []string{"resp_nope", "resp_" + jc.ID, jc.ID} {
			decode(t, ts.do("GET", "/v1/responses/"+id, nil), http.StatusNotFound, nil)
		}
	})
}

// TestResponsesStoreCancel: a response made with store false is not given
// back (GET and previous_response_id answer 404); a background response
// can be cancelled while it runs, and a cancel of an ended one or of a
// foreground one is answered as the API says.
func TestResponsesStoreCancel(t *testing.T) {
	fake := newFake()
	// Responses of up to 3 tokens end; a longer one runs until cancelled.
	fake.maxTokens = 100000
	fake.hold, fake.holdAt = make(chan struct{}), fake.prefill+3
	ts := start(t, fake, nil)
	var r responseOut
	decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "max_output_tokens": 3, "store": false}), 200, &r)
	if r.Store || r.Status != "incomplete" || r.text() == "" {
		t.Errorf("unstored response %+v", r)
	}
	var e openAIError
	decode(t, ts.do("GET", "/v1/responses/"+r.ID, nil), http.StatusNotFound, &e)
	if !strings.Contains(e.Error.Message, "store: false") {
		t.Errorf("GET of an unstored response: %q", e.Error.Message)
	}
	decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "more", "previous_response_id": r.ID}), http.StatusNotFound, &e)
	if !strings.Contains(e.Error.Message, "store: false") {
		t.Errorf("continuing an unstored response: %q", e.Error.Message)
	}
	decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "background": true, "store": false}), 400, &e)
	if !strings.Contains(e.Error.Message, "must be stored") {
		t.Errorf("background without store: %q", e.Error.Message)
	}
	decode(t, ts.do("POST", "/v1/responses/"+r.ID+"/cancel", nil), http.StatusNotFound, nil)

	// A foreground response cannot be cancelled by id.
	decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "max_output_tokens": 2}), 200, &r)
	if !r.Store {
		t.Errorf("stored response %+v", r)
	}
	decode(t, ts.do("POST", "/v1/responses/"+r.ID+"/cancel", nil), 400, &e)
	if !strings.Contains(e.Error.Message, "only a background response can be cancelled") {
		t.Errorf("cancel of a foreground response: %q", e.Error.Message)
	}

	// A background response generating without end is cancelled.
	decode(t, ts.do("POST", "/v1/responses", map[string]any{"model": "tiny", "input": "hi", "background": true}), 200, &r)
	if !r.Background || r.Status != "queued" {
		t.Fatalf("background response %+v", r)
	}
	decode(t, ts.do("POST", "/v1/responses/"+r.ID+"/cancel", nil), 200, &r)
	deadline := time.Now().Add(patience)
	for r.Status != "cancelled" {
		if time.Now().After(deadline) || r.Status == "completed" || r.Status == "incomplete" {
			t.Fatalf("after cancel: %+v", r)
		}
		time.Sleep(10 * time.Millisecond)
		decode(t, ts.do("GET", "/v1/responses/"+r.ID, nil), 200, &r)
	}
	// Cancelling it again leaves it as it is.
	decode(t, ts.do("POST", "/v1/responses/"+r.ID+"/cancel", nil), 200, &r)
	if r.Status != "cancelled" || !r.Background {
		t.Errorf("second cancel: %+v", r)
	}
}
