package chat

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzLimits are small, so that a fuzzed template that builds or loops
// meets them at once.
var fuzzLimits = Limits{MaxOutput: 1 << 16, MaxValue: 1 << 16, MaxItems: 1 << 12, MaxBuilt: 1 << 20, MaxSteps: 1 << 14, MaxDepth: 32}

// FuzzRender feeds arbitrary template sources (GGUF files are untrusted)
// through compile and render. Errors are fine; panics are not, nor a
// template the engine compiles and bound refuses (or the reverse), nor a
// prompt longer than MaxOutput. A template that renders within the limits
// must render the same through the engine alone (unless it slices, which
// the engine does with unbounded allocations, or prints tojson, which is
// Python's here). The seeds are the agreement templates and the hostile
// ones of testdata/hostile.
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
	for _, s := range agreeTemplates {
		f.Add(s, "hi")
	}
	hostile, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.jinja"))
	for _, file := range hostile {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b), "x")
		}
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		if len(src) > 2000 {
			return
		}
		msgs := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: content}, {Role: "assistant", Content: "a"}}
		tmpl, err := New(src, "fuzz", "", "")
		_, engineErr := safeCompile(trimFinalNewline(src))
		switch {
		case err != nil && engineErr == nil && !refused(err):
			t.Fatalf("the engine compiles %q, bound refuses it: %v", src, err)
		case err == nil && engineErr != nil:
			t.Fatalf("the engine refuses %q (%v), bound compiles it", src, engineErr)
		case err != nil:
			return
		}
		tmpl.Now = func() time.Time { return time.Unix(0, 0) }
		tmpl.Limits = fuzzLimits
		vars := map[string]any{"x": []any{1, "a", nil}, "s": "str", "n": 3, "d": map[string]any{"k": "v"}, "bos_token": "<s>", "eos_token": "</s>"}
		out, m, err := tmpl.render(msgs, true, vars)
		if err == nil && int64(len(out)) > fuzzLimits.MaxOutput {
			t.Fatalf("a prompt of %d bytes", len(out))
		}
		var le *LimitError
		if errors.As(err, &le) || slices.Contains(tmpl.meters, "slice") || slices.Contains(tmpl.meters, "tojson") ||
			err != nil && strings.Contains(err.Error(), "called through a variable") || m == nil {
			return
		}
		want, wantErr := engineRender(t, src, msgs, vars)
		switch {
		case err == nil && wantErr != nil:
			t.Fatalf("%q: the engine fails (%v), the bounded render gives %q", src, wantErr, out)
		case err != nil && wantErr == nil:
			t.Fatalf("%q: the engine gives %q, the bounded render fails: %v", src, want, err)
		case out != want:
			if again, _ := engineRender(t, src, msgs, vars); again != want {
				return // the engine is not deterministic here (dict() and namespace() keep Go's map order)
			}
			t.Fatalf("%q:\nbounded %q\n engine %q", src, out, want)
		}
	})
}

// refused reports a compile error of bound's own: a limit or a reserved name.
func refused(err error) bool {
	s := err.Error()
	return errors.Is(err, errNesting) || errors.Is(err, ErrEmpty) || strings.Contains(s, "reserved") || strings.Contains(s, "is not a name") ||
		strings.Contains(s, "more than")
}
