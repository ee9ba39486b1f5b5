package chat

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLimits: each limit, lowered, stops a template that passes it, with
// a *LimitError naming it and the line; a template within it renders.
func TestLimits(t *testing.T) {
	tests := []struct {
		name  string
		lim   Limits
		src   string
		limit string // "" when the template renders
		line  int
	}{
		{"output", Limits{MaxOutput: 100}, "{% for i in range(20) %}{{ 'abcdefghij' }}{% endfor %}", "MaxOutput", 1},
		{"output of text", Limits{MaxOutput: 100}, "{% for i in range(20) %}abcdefghij{% endfor %}", "MaxOutput", 1},
		{"output fits", Limits{MaxOutput: 200}, "{% for i in range(20) %}{{ 'abcdefghij' }}{% endfor %}", "", 0},
		{"top-level text", Limits{MaxOutput: 10}, "0123456789abc", "MaxOutput", 0},
		{"concatenation", Limits{MaxValue: 1000}, "{% set ns = namespace(s='x') %}\n{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "MaxValue", 2},
		{"plus", Limits{MaxValue: 1000}, "{{ 'x' * 600 + 'y' * 600 }}", "MaxValue", 1},
		{"repeat", Limits{MaxValue: 1000}, "\n\n{{ 'ab' * 501 }}", "MaxValue", 3},
		{"repeat fits", Limits{MaxValue: 1000}, "{{ ('ab' * 500) | length }}", "", 0},
		{"join", Limits{MaxValue: 1000}, "{{ range(400) | join(',') }}", "MaxValue", 1},
		{"replace", Limits{MaxValue: 1000}, "{{ ('x' * 40).replace('x', 'y' * 40) }}", "MaxValue", 1},
		{"macro output", Limits{MaxValue: 1000}, "{% macro m() %}{% for i in range(200) %}xxxxxx{% endfor %}{% endmacro %}{{ m() | length }}", "MaxValue", 1},
		{"set block", Limits{MaxValue: 1000}, "{% set b %}{% for i in range(200) %}{{ 'xxxxxx' }}{% endfor %}{% endset %}{{ b | length }}", "MaxValue", 1},
		{"printing a list", Limits{MaxValue: 1000}, "{{ range(300) | list }}", "MaxValue", 1},
		{"range", Limits{MaxItems: 100}, "{{ range(101) | length }}", "MaxItems", 0},
		{"list growth", Limits{MaxItems: 100}, "{% set l = [] %}{% for i in range(20) %}{% for j in range(10) %}{{ l.append(i) }}{% endfor %}{% endfor %}", "MaxItems", 1},
		{"split", Limits{MaxItems: 100}, "{{ ('a,' * 200).split(',') | length }}", "MaxItems", 1},
		{"built", Limits{MaxBuilt: 100000}, "{% set s = 'x' * 10000 %}{% for i in range(20) %}{% set t = s ~ i %}{% endfor %}", "MaxBuilt", 1},
		{"steps", Limits{MaxSteps: 1000}, "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "MaxSteps", 1},
		{"recursion", Limits{MaxDepth: 10}, "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "MaxDepth", 1},
		{"recursion fits", Limits{MaxDepth: 10}, "{% macro f(n) %}{% if n < 9 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}", "", 0},
		{"nested value", Limits{MaxDepth: 10}, "{% set ns = namespace(l=1) %}{% for i in range(11) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}", "MaxDepth", 1},
		{"nested value fits", Limits{MaxDepth: 10}, "{% set ns = namespace(l=1) %}{% for i in range(9) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := New(tt.src, "test", "", "")
			if err != nil {
				t.Fatal(err)
			}
			tmpl.Limits = tt.lim
			out, err := tmpl.Render(nil, false, nil)
			if tt.limit == "" {
				if err != nil {
					t.Fatalf("rendered %q, %v; want no error", out, err)
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tt.limit || le.Line != tt.line {
				t.Fatalf("got %v, want the limit %s at line %d", err, tt.limit, tt.line)
			}
			if !strings.Contains(err.Error(), "chat.Limits."+tt.limit) || le.Need <= le.Max {
				t.Errorf("error %q", err)
			}
		})
	}
}

// TestTimeLimit: a render that passes MaxTime stops, on a clock that
// advances a second each time it is read (no real time involved).
func TestTimeLimit(t *testing.T) {
	tmpl, err := New("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "test", "", "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmpl.Now = func() time.Time { return start }
	_, m, err := tmpl.render(nil, false, nil)
	if err != nil || m.steps < 20000 {
		t.Fatalf("on a stopped clock: %v after %d steps", err, m.steps)
	}
	now := start
	tmpl.Now = func() time.Time { now = now.Add(time.Second); return now }
	tmpl.Limits = Limits{MaxTime: 5 * time.Second}
	_, m, err = tmpl.render(nil, false, nil)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxTime" || le.Need <= 5000 {
		t.Fatalf("got %v, want MaxTime", err)
	}
	if m.steps > 1000 { // 5 readings of the clock, one every clockEvery steps
		t.Errorf("stopped after %d steps", m.steps)
	}
}

// TestStickyLimit: once a limit is reached, every later operation fails
// with it, so the engine cannot swallow it (it ignores errors in some
// places) and render on.
func TestStickyLimit(t *testing.T) {
	tmpl, err := New("{% set ns = namespace(ok=1) %}{{ ('x' * 2000) | length }}{{ 'a' ~ 'b' }}", "test", "", "")
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Limits = Limits{MaxValue: 1000}
	_, m, err := tmpl.render(nil, false, nil)
	if m.failed == nil || !errors.Is(err, m.failed) {
		t.Fatalf("error %v, meter failed %v", err, m.failed)
	}
	data := map[string]any{}
	if _, err := tmpl.Render(nil, false, data); err == nil {
		t.Fatal("no error")
	}
}

// TestRealTemplatesWithinLimits: the templates of testdata/templates over
// benchConversation use a small part of the default limits.
func TestRealTemplatesWithinLimits(t *testing.T) {
	for name, tmpl := range realTemplates(t) {
		_, m, err := tmpl.render(benchConversation(), true, nil)
		if err != nil {
			if name == "gemma2" { // refuses system messages
				continue
			}
			t.Fatalf("%s: %v", name, err)
		}
		if m.steps > DefaultLimits.MaxSteps/1000 || m.built > DefaultLimits.MaxBuilt/1000 {
			t.Errorf("%s: %d steps, %d bytes built", name, m.steps, m.built)
		}
	}
}

// TestCompileCache: a source is compiled once, renders of it run at once
// (go test -race), and the cache stays within cacheBytes.
func TestCompileCache(t *testing.T) {
	src := "{% for m in messages %}{{ m.role ~ ':' ~ m.content }}{% endfor %}"
	a, err := New(src, "a", "", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(src+"\n", "b", "", "") // the final newline is dropped before compiling
	if a.compiled != b.compiled {
		t.Error("the same source compiled twice")
	}
	done := make(chan string)
	for i := range 4 {
		go func() {
			out, err := a.Render([]Message{{Role: "user", Content: strings.Repeat("x", i)}}, false, nil)
			if err != nil {
				out = err.Error()
			}
			done <- out
		}()
	}
	for range 4 {
		if out := <-done; !strings.HasPrefix(out, "user:") {
			t.Errorf("render: %q", out)
		}
	}
	big := strings.Repeat("x", cacheBytes/10)
	for i := range 12 {
		if _, err := New(big+strings.Repeat("y", i+1), "big", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if compiled.bytes > cacheBytes || len(compiled.entries) != len(compiled.order) {
		t.Errorf("cache of %d bytes in %d entries (%d in order)", compiled.bytes, len(compiled.entries), len(compiled.order))
	}
}
