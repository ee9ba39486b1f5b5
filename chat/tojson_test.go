package chat

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestPyFloat(t *testing.T) {
	// Expected strings are Python 3's repr(float(x)).
	tests := []struct {
		x    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-2.5, "-2.5"}, {0.1, "0.1"},
		{1e6, "1000000.0"}, {1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {1.5e16, "1.5e+16"},
		{123456789.125, "123456789.125"}, {1e-4, "0.0001"}, {1e-5, "1e-05"}, {1.25e-7, "1.25e-07"},
		{1e22, "1e+22"}, {1e100, "1e+100"}, {5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
	}
	for _, tt := range tests {
		if got := pyFloat(tt.x); got != tt.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}

// TestToJSONAnySubject: every "x | tojson" is Python's json.dumps,
// whatever x is (the library's filter prints 1e+06 for 1000000.0).
func TestToJSONAnySubject(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "a<b>"}}
	tests := []struct{ tmpl, want string }{
		{"{{ [1.0, 1000000.0] | tojson }}", "[1.0, 1000000.0]"},
		{"{{ messages[0]['content'] | tojson }}", `"a<b>"`},
		{"{{ (messages | first).content | tojson }}", `"a<b>"`},
		{"{{ {'x': 2.5e20} | tojson(indent=1) }}", "{\n \"x\": 2.5e+20\n}"},
		{"{{ 'x | tojson' }} x | tojson", "x | tojson x | tojson"},
		{"{{ 'a' ~ messages[0].role | tojson | length }}", "a6"},
	}
	for _, tt := range tests {
		got, err := Render(tt.tmpl, msgs, false, nil)
		if err != nil {
			t.Errorf("%q: %v", tt.tmpl, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.tmpl, got, tt.want)
		}
	}
}

func TestRenderSmall(t *testing.T) {
	// Expected outputs are Python jinja2 3.1.6 with the environment of
	// testdata/gen.py.
	tests := []struct{ tmpl, want string }{
		{"x\n", "x"},
		{"{{ 'a' }}\n\n", "a\n"},
		{"{% if true %}\n  yes\n{% endif %}\n", "  yes\n"},
		{"  {% if true %}y{% endif %}", "y"},
		{`{% set d = {"b": 1, "a": [1.0, "<&>"]} %}{{ d | tojson }}`, `{"b": 1, "a": [1.0, "<&>"]}`},
		{`{% set d = {"b": 1, "a": {}} %}{{ d | tojson(indent=2) }}`, "{\n  \"b\": 1,\n  \"a\": {}\n}"},
		{`{% set d = {"b": 1, "a": 2} %}{{ d | tojson(sort_keys=true) }}`, `{"a": 2, "b": 1}`},
		{"{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}|{{ range(2, 2) | length }}", "012|531|0"},
		{`{% set d = {"k": "é\n"} %}{{ d | tojson(ensure_ascii=true, separators=[",", ":"]) }}`, `{"k":"\u00e9\n"}`},
	}
	for _, tt := range tests {
		got, err := Render(tt.tmpl, nil, false, nil)
		if err != nil {
			t.Errorf("%q: %v", tt.tmpl, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.tmpl, got, tt.want)
		}
	}
}

func TestRangeLimit(t *testing.T) {
	for _, src := range []string{"{% for i in range(10**12) %}x{% endfor %}", "{{ range(0, 1000000000000) | length }}", "{{ range(5, -1000000000000, -1) | length }}"} {
		_, err := Render(src, nil, false, nil)
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "MaxItems" || !strings.Contains(err.Error(), "range(") {
			t.Errorf("%s: err = %v, want the MaxItems limit of range", src, err)
		}
	}
	if out, err := Render("{{ range(2**3) | length }}", nil, false, nil); err != nil || out != "8" {
		t.Errorf("range(2**3): %q, %v", out, err)
	}
	if _, err := Render("{{ range(1, 2, 0) }}", nil, false, nil); err == nil {
		t.Error("range with step 0 rendered")
	}
}
