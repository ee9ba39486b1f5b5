package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
)

// benchConversation is a 20-turn conversation with a system prompt, the
// shape of a real chat session, for measuring render time.
func benchConversation() []Message {
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant. Answer briefly and cite sources."}}
	for i := range 10 {
		msgs = append(msgs,
			Message{Role: "user", Content: fmt.Sprintf("Question %d: %s", i, strings.Repeat("why is the sky blue? ", 8))},
			Message{Role: "assistant", Content: fmt.Sprintf("Answer %d: %s", i, strings.Repeat("Rayleigh scattering. ", 12))})
	}
	return append(msgs, Message{Role: "user", Content: "Thanks, and one more thing?"})
}

// realTemplates compiles the templates of testdata/templates with their
// BOS and EOS texts (templates.json).
func realTemplates(tb testing.TB) map[string]Template {
	tb.Helper()
	var tokens map[string]struct {
		BOS string `json:"bos_token"`
		EOS string `json:"eos_token"`
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "templates.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, &tokens); err != nil {
		tb.Fatal(err)
	}
	out := map[string]Template{}
	for name, tok := range tokens {
		src, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
		if err != nil {
			tb.Fatal(err)
		}
		if out[name], err = New(string(src), name, tok.BOS, tok.EOS); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// BenchmarkRender renders benchConversation with the real templates of
// testdata/templates (compiled once, as a server does per model): bounded
// is Template.Render, engine the same source rendered by the engine alone
// with no limits (what Render did before it was bounded), for comparing
// the two in one run. cpu-ns/op is the CPU time of the benchmark's thread,
// steadier than ns/op on a busy machine (Linux; 0 elsewhere).
func BenchmarkRender(b *testing.B) {
	templates := realTemplates(b)
	msgs := benchConversation()
	for _, name := range []string{"qwen3", "qwen2.5", "llama3.1", "llama3", "mistral", "chatml"} {
		b.Run(name, func(b *testing.B) {
			tmpl := templates[name]
			out, err := tmpl.Render(msgs, true, nil)
			if err != nil {
				b.Fatal(err)
			}
			engine, err := jinja.Compile(trimFinalNewline(tmpl.Source))
			if err != nil {
				b.Fatal(err)
			}
			data := func() map[string]jinja.Value {
				list := make([]jinja.Value, len(msgs))
				for i, m := range msgs {
					list[i], _ = m.value()
				}
				return map[string]jinja.Value{"messages": jinja.NewList(list), "add_generation_prompt": jinja.NewBool(true),
					"bos_token": jinja.NewString(tmpl.BOS), "eos_token": jinja.NewString(tmpl.EOS)}
			}
			if got, err := engine.RenderValues(data()); err != nil || got != out {
				b.Fatalf("the engine alone renders %q, %v; Render %q", got, err, out)
			}
			for _, v := range []struct {
				name   string
				render func() error
			}{
				{"bounded", func() error { _, err := tmpl.Render(msgs, true, nil); return err }},
				{"engine", func() error { _, err := engine.RenderValues(data()); return err }},
			} {
				b.Run(v.name, func(b *testing.B) {
					b.SetBytes(int64(len(out)))
					b.ReportAllocs()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPU()
					for b.Loop() {
						if err := v.render(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}

// BenchmarkCompile compiles the templates of testdata/templates: bounded
// is a first compile (bound, then the engine's compiler on its output),
// New what a server pays for every request after the first (the cache),
// engine the engine's compiler on the source alone (what New did before
// rendering was bounded).
func BenchmarkCompile(b *testing.B) {
	for name, tmpl := range realTemplates(b) {
		if name != "qwen3" && name != "llama3.1" && name != "chatml" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			for _, v := range []struct {
				name    string
				compile func() error
			}{
				{"bounded", func() error { return compileBounded(trimFinalNewline(tmpl.Source)).err }},
				{"New", func() error { _, err := New(tmpl.Source, name, "", ""); return err }},
				{"engine", func() error { _, err := jinja.Compile(trimFinalNewline(tmpl.Source)); return err }},
			} {
				b.Run(v.name, func(b *testing.B) {
					b.ReportAllocs()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					start := threadCPU()
					for b.Loop() {
						if err := v.compile(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(threadCPU()-start)/float64(b.N), "cpu-ns/op")
				})
			}
		})
	}
}
