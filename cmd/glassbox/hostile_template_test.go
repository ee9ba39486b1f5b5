package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// issue31Template doubles a string 32 times: 40 GB, the end of a server
// that renders it without limits.
const issue31Template = `{% set s = "xxxxxxxxxx" %}{% for i in range(32) %}{% set s = s ~ s %}{% endfor %}{{ s }}`

// TestServeHostileTemplate: a model whose chat template would allocate
// without bound fails its /api/chat in the encode stage, naming the limit,
// and the server goes on to answer a normal request.
func TestServeHostileTemplate(t *testing.T) {
	hostile := shared.WithChatTemplate(t, "models/stories260K.gguf", issue31Template, "hostile")
	base := startServe(t, "--model", hostile, "--model", shared.Path(t, "models/stories260K.gguf"))
	chat := func(model string) (int, map[string]any) {
		t.Helper()
		code, b := postBody(t, base+"/api/chat", `{"model": "`+model+`", "stream": false, "options": {"num_predict": 3},
			"messages": [{"role": "user", "content": "hi"}]}`)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return code, m
	}
	code, r := chat("hostile")
	msg, _ := r["error"].(string)
	if code < 400 || r["stage"] != "encode" || !strings.HasPrefix(msg, "encode: ") || !strings.Contains(msg, "chat.Limits.MaxValue") {
		t.Fatalf("hostile template: %d %v; want an encode-stage error naming chat.Limits.MaxValue", code, r)
	}
	for range 2 { // the server lives: the hostile model fails again, the other answers
		if code, r = chat("hostile"); code < 400 {
			t.Fatalf("hostile template again: %d %v", code, r)
		}
		if code, r = chat("stories260K"); code != 200 || r["message"] == nil {
			t.Fatalf("normal request after the hostile one: %d %v", code, r)
		}
	}
}

// TestChatTemplateHostile: glassbox chat-template on the same template
// (from the model and from a file) exits with the encode-stage limit error.
func TestChatTemplateHostile(t *testing.T) {
	dir := t.TempDir()
	msgs := filepath.Join(dir, "m.json")
	tmpl := filepath.Join(dir, "t.jinja")
	for name, s := range map[string]string{msgs: `[{"role":"user","content":"hi"}]`, tmpl: issue31Template} {
		if err := os.WriteFile(name, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := shared.WithChatTemplate(t, "models/stories260K.gguf", issue31Template, "hostile")
	for _, args := range [][]string{{"-m", model, "--messages", msgs}, {"--template", tmpl, "--messages", msgs}} {
		out, errOut, code := runCmd(t, "", append([]string{"chat-template"}, args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "encode: chat template") || !strings.Contains(errOut, "chat.Limits.MaxValue") {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want exit 1 and the encode-stage limit", args, code, len(out), errOut)
		}
	}
}
