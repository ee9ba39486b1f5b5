package chat

import (
	"testing"
	"time"
)

// FuzzRender feeds arbitrary template sources (GGUF files are untrusted)
// through compile and render: errors are fine, panics are not.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		FallbackSource,
		"{{ bos_token }}{% for m in messages %}{{ m.role }}{% endfor %}",
		"{{ x | tojson(indent=2) }}{{ raise_exception('no') }}",
		"{% set ns = namespace(a=1) %}{{ ns.a }}{{ messages[::-1] | length }}",
		"{{ strftime_now('%d %b %Y') }}{{ '{' }}",
		"{%- if messages[0]['role'] == 'system' %}{{ messages[0]['content'] | trim }}{% endif -%}",
	} {
		f.Add(s, "hello")
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		if len(src) > 2000 {
			return
		}
		tmpl, err := New(src, "fuzz", "<s>", "</s>")
		if err != nil {
			return
		}
		tmpl.Now = func() time.Time { return time.Unix(0, 0) }
		tmpl.Render([]Message{{Role: "system", Content: "s"}, {Role: "user", Content: content}, {Role: "assistant", Content: "a"}}, true, map[string]any{"x": []any{1, "a", nil}})
	})
}
