package chat

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "regenerate testdata/golden with testdata/gen.py (needs python3 + jinja2)")

// goldenNow is the fixed clock gen.py gives strftime_now.
var goldenNow = time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)

type goldenCase struct {
	Name     string                     `json:"name"`
	Messages []Message                  `json:"messages"`
	Vars     map[string]json.RawMessage `json:"vars"`
}

type goldenResult struct {
	Case                string  `json:"case"`
	AddGenerationPrompt bool    `json:"add_generation_prompt"`
	Output              *string `json:"output"`
	Error               *string `json:"error"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestGolden renders every real template over every conversation and
// compares with Python jinja2's output byte for byte.
func TestGolden(t *testing.T) {
	if *update {
		cmd := exec.Command("python3", filepath.Join("testdata", "gen.py"))
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("gen.py: %v", err)
		}
	}
	var tokens map[string]struct {
		BOS string `json:"bos_token"`
		EOS string `json:"eos_token"`
	}
	readJSON(t, filepath.Join("testdata", "templates.json"), &tokens)
	var cases []goldenCase
	readJSON(t, filepath.Join("testdata", "cases.json"), &cases)
	byName := map[string]goldenCase{}
	for _, c := range cases {
		byName[c.Name] = c
	}
	if len(tokens) < 9 {
		t.Fatalf("only %d templates in templates.json", len(tokens))
	}
	for name, tok := range tokens {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "templates", name+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := New(string(src), name, tok.BOS, tok.EOS)
			if err != nil {
				t.Fatal(err)
			}
			tmpl.Now = func() time.Time { return goldenNow }
			var want []goldenResult
			readJSON(t, filepath.Join("testdata", "golden", name+".json"), &want)
			if len(want) != 2*len(cases) {
				t.Fatalf("golden has %d results, want %d (run go test -update)", len(want), 2*len(cases))
			}
			for _, w := range want {
				c, ok := byName[w.Case]
				if !ok {
					t.Fatalf("golden case %q not in cases.json (run go test -update)", w.Case)
				}
				vars := map[string]any{}
				for k, v := range c.Vars {
					vars[k] = v
				}
				got, err := tmpl.Render(c.Messages, w.AddGenerationPrompt, vars)
				label := w.Case
				if !w.AddGenerationPrompt {
					label += "/no-generation-prompt"
				}
				switch {
				case w.Error != nil && err == nil:
					t.Errorf("%s: rendered %q, want the error %q", label, got, *w.Error)
				case w.Error != nil:
					if !strings.Contains(err.Error(), *w.Error) {
						t.Errorf("%s: error %q, want it to contain %q", label, err, *w.Error)
					}
				case err != nil:
					t.Errorf("%s: %v", label, err)
				case got != *w.Output:
					t.Errorf("%s:\n got %q\nwant %q", label, got, *w.Output)
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		name, tmpl string
		want       string
	}{
		{"empty", "", "template is empty"},
		{"syntax", "{% for m in messages %}", "compile"},
		{"unclosed tag", "{{ messages", "unclosed"},
		{"raise_exception", "{{ raise_exception('no system role') }}", "no system role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tt.tmpl, msgs, true, nil)
			if err == nil {
				t.Fatal("no error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *chat.Error", err)
			}
			if !strings.HasPrefix(err.Error(), "encode: chat template") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want the encode stage and %q", err, tt.want)
			}
		})
	}
}

func TestVars(t *testing.T) {
	const src = "{{ bos_token }}{% if enable_thinking is defined and not enable_thinking %}no-think{% endif %}|{{ messages[0].content }}|{{ strftime_now('%Y-%m-%d %a %b %e %I%p %j') }}"
	tmpl, err := New(src, "test", "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	tmpl.Now = func() time.Time { return time.Date(2024, 7, 6, 15, 4, 5, 0, time.UTC) }
	tests := []struct {
		vars map[string]any
		want string
	}{
		{nil, "<s>|x|2024-07-06 Sat Jul  6 03PM 188"},
		{map[string]any{"enable_thinking": false}, "<s>no-think|x|2024-07-06 Sat Jul  6 03PM 188"},
		{map[string]any{"bos_token": "[B]"}, "[B]|x|2024-07-06 Sat Jul  6 03PM 188"},
	}
	for _, tt := range tests {
		got, err := tmpl.Render([]Message{{Role: "user", Content: "x"}}, false, tt.vars)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("vars %v: got %q, want %q", tt.vars, got, tt.want)
		}
	}
}
