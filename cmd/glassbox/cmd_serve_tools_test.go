package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// startServe runs 'glassbox serve' in-process with args (after --addr and
// --home) and returns its base URL; it stops when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	t.Setenv(home.Env, t.TempDir()) // serve sets it from --home; restore it after
	var errb serveLog
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errb}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- runMain(ctx, env, append([]string{"serve", "--addr", "127.0.0.1:0", "--home", t.TempDir()}, args...))
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitServeLog(t, &errb, "listening on http://127.0.0.1:")
	return regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(errb.String())
}

// withChatTemplate writes a copy of the shared model rel with template as
// its tokenizer.chat_template, named name.gguf.
func withChatTemplate(t *testing.T, rel, template, name string) string {
	t.Helper()
	in, err := gguf.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var meta gguf.Metadata
	for _, kv := range in.Meta.KVs {
		if err := meta.Set(kv.Key, kv.Value.Any()); err != nil {
			t.Fatal(err)
		}
	}
	if err := meta.Set("tokenizer.chat_template", template); err != nil {
		t.Fatal(err)
	}
	var ts []gguf.WriteTensor
	for i := range in.Tensors {
		ti := &in.Tensors[i]
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type, Data: in.Data(ti)})
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := gguf.Write(f, &meta, ts); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeTools: on a model whose chat template takes tools (Qwen 2.5's
// real template over tiny-qwen2's weights), the tools reach the prompt,
// tool_choice "required" makes the reply a call of the schema the tool
// declares, parsed into tool_calls; a template without tools refuses them.
func TestServeTools(t *testing.T) {
	tmpl, err := os.ReadFile("../../chat/testdata/templates/qwen2.5.jinja")
	if err != nil {
		t.Fatal(err)
	}
	model := withChatTemplate(t, "models/tiny-qwen2-F32.gguf", string(tmpl), "toolq")
	base := startServe(t, "--ctx", "2048", "--model", model, "--model", shared.Path(t, "models/stories260K.gguf"))
	post := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return resp.StatusCode, m
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
