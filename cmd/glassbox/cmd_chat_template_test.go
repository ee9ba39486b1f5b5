package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestChatTemplateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	msgs := write("m.json", `[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}]`)
	phi3 := shared.Path(t, "vocab/ggml-vocab-phi-3.gguf")
	stories := shared.Path(t, "models/stories260K.gguf")
	tmpl := write("t.jinja", "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}{% if add_generation_prompt %}>{% endif %}{{ tools | tojson }}")
	vars := write("v.json", `{"tools": [{"name": "f", "b": 1, "a": 2.0}]}`)
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		// This vocabulary's template drops system turns and always ends
		// with the assistant header (checked against Python jinja2).
		{"phi-3 template from the GGUF", "", []string{"-m", phi3, "--messages", msgs},
			"<s><|user|>\nHello<|end|>\n<|assistant|>\n", "", 0},
		{"no generation prompt", "", []string{"-m", stories, "--messages", msgs, "--no-generation-prompt"},
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n", "", 0},
		{"model without template: ChatML", "", []string{"-m", stories, "--messages", msgs},
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "", 0},
		{"messages from stdin", `[{"role":"user","content":"x"}]`, []string{"-m", stories, "--messages", "-"},
			"<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n", "", 0},
		{"template file with the model's BOS and ordered vars", "", []string{"--template", tmpl, "-m", stories, "--messages", msgs, "--vars", vars},
			`<s>[system:Be brief.][user:Hello]>[{"name": "f", "b": 1, "a": 2.0}]`, "", 0},
		{"inline vars", "", []string{"--template", tmpl, "--messages", msgs, "--vars", `{"tools": {"z": 1, "a": null}}`},
			`[system:Be brief.][user:Hello]>{"z": 1, "a": null}`, "", 0},
		{"bad inline vars", "", []string{"--template", tmpl, "--messages", msgs, "--vars", `{"tools": `}, "", "--vars (inline): want a JSON object", 1},
		{"named variant missing", "", []string{"-m", phi3, "--messages", msgs, "--template-name", "tool_use"}, "", "named templates in this model: none", 1},
		{"missing --messages", "", []string{"-m", stories}, "", "--messages is required", 2},
		{"neither model nor template", "", []string{"--messages", msgs}, "", "give -m MODEL or --template FILE", 2},
		{"bad JSON", "[{", []string{"-m", stories, "--messages", "-"}, "", "want a JSON array", 1},
		{"content not a string", `[{"role":"user","content":[1]}]`, []string{"-m", stories, "--messages", "-"}, "", `message 0: "content" must be a string`, 1},
		{"unknown field", `[{"role":"user","content":"x","images":[]}]`, []string{"-m", stories, "--messages", "-"}, "", `unknown field "images"`, 1},
		{"tool calls with null content", `[{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":{"b":1,"a":2}}}]}]`,
			[]string{"--template", write("tc.jinja", "{% for m in messages %}[{{ m.content }}]{{ m.tool_calls[0].function.arguments | tojson }}{% endfor %}"), "--messages", "-"},
			`[]{"b": 1, "a": 2}`, "", 0},
		{"template raises", `[{"role":"assistant","content":"x"}]`, []string{"--template", write("r.jinja", "{{ raise_exception('roles must alternate') }}"), "--messages", "-"}, "", "roles must alternate", 1},
		{"no such model", "", []string{"-m", filepath.Join(dir, "nope.gguf"), "--messages", msgs}, "", "load:", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, tt.stdin, append([]string{"chat-template"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
		})
	}
}
