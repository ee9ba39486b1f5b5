package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// TestTools: on a model whose chat template takes tools (Qwen 2.5's
// real template over tiny-qwen2's weights), the tools reach the prompt,
// tool_choice "required" makes the reply a call of the schema the tool
// declares, parsed into tool_calls; a template without tools refuses them.
func TestTools(t *testing.T) {
	tmpl, err := os.ReadFile("../chat/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	model := shared.WithChatTemplate(t, "models/tiny-qwen2-F32.gguf", string(tmpl), "toolq")
	base, _ := serve(t, Config{Session: withCtx(2048), Models: []string{model, shared.Path(t, "models/stories260K.gguf")}})
	post := func(body string) (int, map[string]any) {
		t.Helper()
		code, b := postBody(t, base+"/v1/chat/completions", body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return code, m
	}
	const tools = `[{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
		"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}}]`
	ask := `{"model": "toolq", "temperature": 0, "max_tokens": 120, "messages": [{"role": "user", "content": "Weather in Paris?"}]`
	code, plain := post(ask + `}`)
	if code != 200 {
		t.Fatalf("without tools: %d %v", code, plain)
	}
	code, r := post(ask + `, "tools": ` + tools + `, "tool_choice": "required"}`)
	if code != 200 {
		t.Fatalf("with tools: %d %v", code, r)
	}
	usage := func(m map[string]any) float64 { return m["usage"].(map[string]any)["prompt_tokens"].(float64) }
	if usage(r) <= usage(plain)+20 {
		t.Errorf("prompt tokens %v with the tool, %v without: the template did not write the tool", usage(r), usage(plain))
	}
	choice := r["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	calls, _ := msg["tool_calls"].([]any)
	if choice["finish_reason"] != "tool_calls" || len(calls) != 1 {
		t.Fatalf("choice %v: want one tool call", choice)
	}
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	var args struct{ City *string }
	if err := json.Unmarshal([]byte(fn["arguments"].(string)), &args); fn["name"] != "get_weather" || err != nil || args.City == nil || len([]rune(*args.City)) > 12 {
		t.Errorf("call %v: want get_weather with a city of at most 12 characters", fn)
	}
	// With two tools offered, the call is one of either, its arguments
	// of that tool's schema (the alternatives are told apart by name).
	const two = `[{"type": "function", "function": {"name": "add", "parameters": {"type": "object",
		"properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["a", "b"]}}},
		{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}}]`
	for _, seed := range []int{1, 2, 3, 4} {
		code, r = post(fmt.Sprintf(`{"model": "toolq", "temperature": 1.5, "seed": %d, "max_tokens": 120, "messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": %s, "tool_choice": "required"}`, seed, two))
		if code != 200 {
			t.Fatalf("two tools: %d %v", code, r)
		}
		choice := r["choices"].([]any)[0].(map[string]any)
		calls, _ := choice["message"].(map[string]any)["tool_calls"].([]any)
		if choice["finish_reason"] != "tool_calls" || len(calls) != 1 {
			t.Fatalf("two tools, seed %d: choice %v: want one tool call", seed, choice)
		}
		fn := calls[0].(map[string]any)["function"].(map[string]any)
		dec := json.NewDecoder(strings.NewReader(fn["arguments"].(string)))
		dec.DisallowUnknownFields()
		var args struct {
			A, B *int
			City *string
		}
		err := dec.Decode(&args)
		switch fn["name"] {
		case "add":
			if err != nil || args.A == nil || args.B == nil || *args.A > 99 || *args.B > 99 || args.City != nil {
				t.Errorf("two tools, seed %d: call %v (%v): want add of two integers 0..99", seed, fn, err)
			}
		case "get_weather":
			if err != nil || args.City == nil || len([]rune(*args.City)) > 12 || args.A != nil || args.B != nil {
				t.Errorf("two tools, seed %d: call %v (%v): want get_weather of a city", seed, fn, err)
			}
		default:
			t.Errorf("two tools, seed %d: call %v", seed, fn)
		}
	}
	// Anthropic's Messages API: tool_choice any gives a tool_use block whose
	// input fits the tool's input_schema; its tool_result goes back.
	code, b := postBody(t, base+"/v1/messages", `{"model": "toolq", "max_tokens": 120, "temperature": 0,
		"messages": [{"role": "user", "content": "Weather in Paris?"}], "tool_choice": {"type": "any"},
		"tools": [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}]}`)
	var am struct {
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, ID, Name string
			Input          struct{ City *string }
		}
	}
	if err := json.Unmarshal(b, &am); code != 200 || err != nil || am.StopReason != "tool_use" || len(am.Content) == 0 {
		t.Fatalf("/v1/messages with a required tool: %d %s", code, b)
	}
	use := am.Content[len(am.Content)-1]
	if use.Type != "tool_use" || use.Name != "get_weather" || use.ID == "" || use.Input.City == nil || len([]rune(*use.Input.City)) > 12 {
		t.Fatalf("tool_use block %+v: %s", use, b)
	}
	code, b = postBody(t, base+"/v1/messages", `{"model": "toolq", "max_tokens": 8, "temperature": 0,
		"tools": [{"name": "get_weather", "input_schema": {"type": "object"}}], "messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "`+use.ID+`", "name": "get_weather", "input": {"city": "Paris"}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "`+use.ID+`", "content": "sunny, 21 C"}]}]}`)
	if code != 200 || !strings.Contains(string(b), `"type":"message"`) {
		t.Errorf("/v1/messages with the tool's result: %d %s", code, b)
	}
	// OpenAI's Responses API: a required call is a function_call item whose
	// arguments fit the schema; its output continues the response by
	// previous_response_id, the conversation's start from the KV cache.
	code, b = postBody(t, base+"/v1/responses", `{"model": "toolq", "max_output_tokens": 120, "temperature": 0,
		"input": "Weather in Paris?", "tool_choice": "required",
		"tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}}]}`)
	var resp struct {
		ID, Status string
		Output     []struct {
			Type, Name, Arguments string
			CallID                string `json:"call_id"`
		}
		Usage struct {
			InputTokens int `json:"input_tokens"`
			Details     struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		}
	}
	if err := json.Unmarshal(b, &resp); code != 200 || err != nil || resp.Status != "completed" || len(resp.Output) == 0 {
		t.Fatalf("/v1/responses with a required tool: %d %s", code, b)
	}
	fc := resp.Output[len(resp.Output)-1]
	var fcArgs struct{ City *string }
	if fc.Type != "function_call" || fc.Name != "get_weather" || fc.CallID == "" || json.Unmarshal([]byte(fc.Arguments), &fcArgs) != nil ||
		fcArgs.City == nil || len([]rune(*fcArgs.City)) > 12 {
		t.Fatalf("function_call item %+v: %s", fc, b)
	}
	code, b = postBody(t, base+"/v1/responses", `{"model": "toolq", "max_output_tokens": 8, "temperature": 0, "previous_response_id": "`+resp.ID+`",
		"tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
		"input": [{"type": "function_call_output", "call_id": "`+fc.CallID+`", "output": "sunny, 21 C"}]}`)
	if err := json.Unmarshal(b, &resp); code != 200 || err != nil || resp.Usage.Details.CachedTokens == 0 || resp.Usage.Details.CachedTokens >= resp.Usage.InputTokens {
		t.Errorf("/v1/responses continued with the call's output: %d %s", code, b)
	}
	// llama-server's /apply-template: the prompt a chat would encode, tools
	// in Qwen 2.5's system block.
	code, b = postBody(t, base+"/apply-template", `{"model": "toolq", "tools": `+tools+`, "messages": [{"role": "user", "content": "Weather in Paris?"}]}`)
	var at struct{ Prompt string }
	if err := json.Unmarshal(b, &at); code != 200 || err != nil || !strings.Contains(at.Prompt, `"name": "get_weather"`) ||
		!strings.HasSuffix(at.Prompt, "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n") {
		t.Errorf("/apply-template: %d %s", code, b)
	}
	// The answer to the call goes back in the history.
	code, r = post(`{"model": "toolq", "temperature": 0, "max_tokens": 8, "tools": ` + tools + `, "messages": [{"role": "user", "content": "Weather in Paris?"},
		{"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
		{"role": "tool", "tool_call_id": "call_0", "content": "sunny, 21 C"}]}`)
	if code != 200 {
		t.Errorf("a conversation with a call and its answer: %d %v", code, r)
	}
	code, r = post(`{"model": "stories260K", "max_tokens": 4, "tools": ` + tools + `, "messages": [{"role": "user", "content": "hi"}]}`)
	if e, _ := r["error"].(map[string]any); code == 200 || e == nil || !strings.Contains(e["message"].(string), "does not use tools") {
		t.Errorf("tools on a template without them: %d %v", code, r)
	}
}

// TestThinking: a template that opens a <think> block in its
// generation prompt (DeepSeek-R1's way) makes the reply thinking until
// </think> — here, all of the story model's 12 tokens, none in the
// content; think false reaches Qwen3's real template (its generation
// prompt then holds an empty block).
func TestThinking(t *testing.T) {
	r1 := shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1")
	qwen3, err := os.ReadFile("../chat/testdata/templates/qwen3.jinja")
	if err != nil {
		t.Fatal(err)
	}
	q3 := shared.WithChatTemplate(t, "models/tiny-qwen2-F32.gguf", string(qwen3), "q3")
	base, _ := serve(t, Config{Session: withCtx(512), Models: []string{r1, q3}})
	type reply struct {
		Message   struct{ Content, Thinking string }
		EvalCount int `json:"eval_count"`
	}
	chat := func(body string) reply {
		t.Helper()
		code, b := postBody(t, base+"/api/chat", body)
		var r reply
		if code != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%d %s", code, b)
		}
		return r
	}
	r := chat(`{"model": "r1", "stream": false, "options": {"temperature": 0, "num_predict": 12}, "messages": [{"role": "user", "content": "Once upon a time"}]}`)
	if r.Message.Thinking == "" || r.Message.Content != "" || r.EvalCount != 12 {
		t.Errorf("reply %+v: want 12 tokens of thinking and no content", r)
	}
	// Prompt tokens in all (Ollama's prompt_eval_count leaves out those the
	// KV cache held): OpenAI's usage, with llama-server's switch.
	prompt := func(think string) float64 {
		t.Helper()
		_, b := postBody(t, base+"/v1/chat/completions",
			`{"model": "q3", "max_tokens": 2, "chat_template_kwargs": {"enable_thinking": `+think+`}, "messages": [{"role": "user", "content": "hi"}]}`)
		var r struct {
			Usage struct {
				PromptTokens float64 `json:"prompt_tokens"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return r.Usage.PromptTokens
	}
	if on, off := prompt("true"), prompt("false"); off <= on {
		t.Errorf("prompt tokens %v with enable_thinking false, %v with true: the template did not get the switch", off, on)
	}
}

// TestLogitBias: banning the greedy reply's first token (found with the
// engine alone, as run does) makes the served greedy reply start with
// another one; a token id outside the vocabulary is refused.
func TestLogitBias(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	text, err := engine.LoadText(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := text.Generate(context.Background(), engine.TextRequest{Prompt: "Once upon a time", MaxTokens: 1,
		Session: model.SessionOptions{Threads: 1}})
	text.Close()
	if err != nil || len(res.Tokens) != 1 {
		t.Fatalf("the engine's first token: %v, %v", res, err)
	}
	first := []string{"", strconv.Itoa(res.Tokens[0])}
	base, _ := serve(t, Config{Models: []string{m}})
	complete := func(bias string) (int, string) {
		t.Helper()
		code, b := postBody(t, base+"/v1/completions",
			`{"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 1, "temperature": 0, "logit_bias": {`+bias+`}}`)
		var r struct{ Choices []struct{ Text string } }
		if json.Unmarshal(b, &r) == nil && len(r.Choices) == 1 {
			return code, r.Choices[0].Text
		}
		return code, string(b)
	}
	_, plain := complete("")
	code, banned := complete(`"` + first[1] + `": -100`)
	if code != 200 || plain == "" || plain == banned {
		t.Errorf("banning token %s: %d %s, unbanned %s", first[1], code, banned, plain)
	}
	if code, body := complete(`"100000": 1`); code == 200 || !strings.Contains(body, "vocabulary has 512 tokens") {
		t.Errorf("a bias outside the vocabulary: %d %s", code, body)
	}
}
