package chat

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardanlabs/jinja"
)

// agreeVars are the variables of the agreement tests, of every kind.
var agreeVars = map[string]any{
	"s": "Hello, World", "u": "héllo wörld ✓", "e": "", "sp": "  a b\tc \n", "num": "42", "fl": "2.5x",
	"n": 7, "z": 0, "neg": -3, "f": 2.5, "big": 1 << 40, "t": true, "no": false, "nil": nil,
	"l": []any{1, "two", 3.0, nil, true, []any{4, 5}}, "ls": []any{"b", "a", "c", "a"}, "li": []any{3, 1, 2},
	"d":  map[string]any{"a": 1, "b": "x", "items": "shadow", "nested": map[string]any{"k": []any{1, 2}}},
	"ld": []any{map[string]any{"role": "user", "n": 1}, map[string]any{"role": "bot", "n": 2}, map[string]any{"n": 3}},
}

// agreeTemplates exercise every construct the bounded form rewrites:
// each renders the same, or fails alike, with and without the meter.
var agreeTemplates = []string{
	// arithmetic and concatenation of every kind of operand
	"{{ n + 1 }} {{ n + f }} {{ f + n }} {{ s + n }} {{ n + s }} {{ l + l }} {{ n + t }} {{ n + nil }} {{ num + 1 }} {{ l + n }} {{ d + n }}",
	"{{ n - 1 }} {{ n - f }} {{ num - 1 }} {{ fl - 1 }} {{ s - 1 }} {{ t - no }} {{ nil - 1 }}",
	"{{ n * 2 }} {{ n * f }} {{ s * 2 }} {{ 2 * s }} {{ s * f }} {{ l * 2 }} {{ s * 0 }} {{ '' * 5 }} {{ s * t }}",
	"{{ n / 2 }} {{ n / 0 }} {{ n // 2 }} {{ n // 0 }} {{ neg // 2 }} {{ n % 3 }} {{ neg % 3 }} {{ n % 0 }} {{ f // 1 }} {{ num // 5 }}",
	"{{ n ** 2 }} {{ 2 ** 0.5 }} {{ f ** n }} {{ num ** 2 }} {{ -n }} {{ -f }} {{ -s }} {{ +s }} {{ - - n }} {{ -(n + 1) }}",
	"{{ s ~ n ~ f ~ t ~ nil ~ l ~ d }} {{ 1 ~ 2 }} {{ (n ~ '') + 'x' }} {{ s ~ u ~ e }}",
	"{{ 'a' + 'b' + 'c' + n ~ 'd' ~ f }} {{ n + 1 + 2 + 3 }} {{ l + [1] + [2] }} {{ n + 'x' + 1 }}",
	// comparisons, membership, logic
	"{{ n == 7 }} {{ n == 7.0 }} {{ n == '7' }} {{ l == l }} {{ d == d }} {{ nil == nil }} {{ nil == none }} {{ l != [1] }} {{ s == s }}",
	"{{ n < 8 }} {{ f > n }} {{ s < 'Z' }} {{ s > u }} {{ num < 5 }} {{ num >= 42 }} {{ t <= no }} {{ l < n }} {{ e < s }}",
	"{{ 'a' in 'cat' }} {{ 'World' in s }} {{ 1 in l }} {{ [4, 5] in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ n in l }} {{ s in l }} {{ 3 in 'x3' }}",
	"{{ n and s }} {{ z or e or 'x' }} {{ not n }} {{ not not e }} {{ n if t else s }} {{ s if no }} {{ (n > 3) != (z > 3) }}",
	// tests
	"{{ n is defined }} {{ zz is undefined }} {{ nil is none }} {{ t is boolean }} {{ n is integer }} {{ f is float }} {{ n is number }} {{ s is string }} {{ d is mapping }} {{ l is iterable }} {{ l is sequence }} {{ range is callable }} {{ t is true }} {{ no is false }} {{ n is odd }} {{ n is even }}",
	"{{ n is eq 7 }} {{ n is eq(7) }} {{ n is ne(7) }} {{ n is gt(3) }} {{ n is ge(7) }} {{ n is lt(3) }} {{ n is le(7) }} {{ 'a' is in('cat') }} {{ s is upper }} {{ 'X' is upper }} {{ 'x' is lower }} {{ l is sameas(l) }} {{ s is not string }} {{ n is not eq(1) }}",
	// subscripts and slices
	"{{ l[0] }} {{ l[-1] }} {{ l[5][1] }} {{ l[99] }} {{ l['1'] }} {{ l[1.9] }} {{ d['a'] }} {{ d['nested']['k'][1] }} {{ d[1] }} {{ s[0] }} {{ s[-1] }} {{ u[1] }} {{ u[-2] }} {{ s[99] }} {{ n[0] }} {{ d[nil] }}",
	"{{ l[1:3] }} {{ l[:2] }} {{ l[4:] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[10:] }} {{ l[-100:2] }} {{ l[5:1:-1] }} {{ l[::-2] }} {{ l[1:1] }} {{ l[::0] }}",
	"{{ s[1:4] }} {{ s[:-1] }} {{ s[::-1] }} {{ s[::2] }} {{ s[-5:] }} {{ s[100:] }} {{ u[1:4] }} {{ u[::-1] }} {{ u[::3] }} {{ s[3:1:-1] }} {{ s[-100:-90] }} {{ e[::-1] }} {{ n[1:] }}",
	"{{ l[100:0:-1] }} {{ s[100:0:-2] }} {{ l[-100::3] }} {{ s[:100:4] }} {{ li[1:] | sum }}",
	// methods
	"{{ sp.strip() }}|{{ sp.lstrip() }}|{{ sp.rstrip() }}|{{ s.strip('Hd') }}|{{ s.lstrip('eH') }}|{{ s.rstrip('dl') }}|{{ s.strip(1) }}",
	"{{ s.split() }} {{ sp.split() }} {{ s.split(', ') }} {{ s.split('') }} {{ s.split('o') | length }} {{ e.split(',') }}",
	"{{ s.startswith('He') }} {{ s.startswith() }} {{ s.endswith('ld') }} {{ s.count('l') }} {{ s.count('') }} {{ s.count() }} {{ s.find('o') }} {{ s.find('q') }} {{ s.find() }}",
	"{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ s.replace('', '-') }} {{ s.replace('l') }} {{ s.replace('o', n) }} {{ s.replace('l', '', '1') }} {{ e.replace('', 'x') }}",
	"{{ s.upper() }} {{ s.lower() }} {{ u.upper() }} {{ 'hello big world'.title() }} {{ u.title() }} {{ 'hELLO'.capitalize() }} {{ e.capitalize() }} {{ ' a  b'.title() }}",
	"{{ '{0}-{1}-{}'.format('a', 'b') }} {{ '{}{}'.format(1, 2) }} {{ '{0}{0}'.format(s) }} {{ 'x'.format() }} {{ s.nosuch is defined }}",
	"{% set m = [1] %}{{ m.append(2) }}{{ m.append(m | length) }}{{ m }} {{ m.pop() }} {{ m.pop(0) }} {{ m }} {{ m.insert(0, 9) }}{{ m.insert(99, 8) }}{{ m.insert(-5, 7) }}{{ m }} {{ m.pop(-1) }}",
	"{% set m = {'a': 1, 'b': 2} %}{{ m.items() }} {{ m.keys() }} {{ m.values() }} {{ m.get('a') }} {{ m.get('z') }} {{ m.get('z', 5) }} {{ m.get() }} {{ m.pop('a') }} {{ m.pop('q', 0) }} {{ m }} {{ m.update({'c': 3}) }}{{ m }} {{ d.items }}",
	"{{ d.items() }}",
	// filters
	"{{ l | length }} {{ s | length }} {{ u | count }} {{ d | length }} {{ l | first }} {{ l | last }} {{ e | first }} {{ s | list | first }} {{ zz | default('dflt') }} {{ e | default('x', true) }} {{ s | d('q') }}",
	"{{ li | sort }} {{ ls | sort(reverse=true) }} {{ ls | unique }} {{ li | reverse }} {{ s | reverse }} {{ li | sum }} {{ li | max }} {{ ls | min }} {{ [] | max }} {{ l | map(attribute='x') | list | length }}",
	"{{ ls | join }} {{ ls | join(', ') }} {{ ld | join('|', attribute='role') }} {{ s | join('-') }} {{ li | join(d='+') }}",
	"{{ s | replace('l', 'L') }} {{ s | replace('l', 'L', 1) }} {{ s | replace('l', 'L', count=2) }} {{ s | upper }} {{ s | lower }} {{ u | title }} {{ 'aBC def' | capitalize }} {{ sp | trim }} {{ s | trim('Hd') }}",
	"{{ ('a\\nb\\n\\nc' | indent) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\nb' | indent(width=1) }}|{{ s | wordcount }} {{ '<a href=\"x\">&' | escape }} {{ '<>' | e }} {{ n | string }} {{ l | string }}",
	"{{ num | int }} {{ fl | float }} {{ f | int }} {{ s | int }} {{ 2.567 | round(2) }} {{ neg | abs }} {{ f | abs }} {{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }}",
	"{{ ld | selectattr('role') | list | length }} {{ ld | selectattr('role', 'equalto', 'user') | list }} {{ ld | rejectattr('role', 'eq', 'bot') | map(attribute='n') | list }} {{ li | select('odd') | list }} {{ li | reject('gt', 1) | list }} {{ l | select | list }}",
	"{{ li | batch(2) | list }} {{ range(7) | batch(3) | list }} {{ '{\"a\": [1, 2.5, \"x\"]}' | fromjson }} {{ 'nope' | from_json is defined }} {{ s | safe }}",
	// statements
	"{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}:{{ x }} {% endfor %}",
	"{% for x in ls if x != 'a' %}{{ x }}{{ loop.cycle('+', '-') }}{% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}|{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
	"{% for c in u %}[{{ c }}]{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for i in range(10) %}{% if i == 3 %}{% continue %}{% endif %}{% if i > 5 %}{% break %}{% endif %}{{ i }}{% endfor %}",
	"{% set ns = namespace(total=0, names=[]) %}{% for x in ld %}{% set ns.total = ns.total + x.n %}{{ ns.names.append(x.role | default('?')) }}{% endfor %}{{ ns.total }} {{ ns.names }}",
	"{% macro m(a, b=2, c=n + 1) %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ m(1) }} {{ m(1, 3) }} {{ m(1, c=9) }} {{ m() }} {{ m(1, 2, 3, 4) }}",
	"{% macro m(x=s ~ '!', y=l[0], z=d.get('a')) %}{{ x }}{{ y }}{{ z }}{% endmacro %}{{ m() }}",
	"{% macro m(k=[n]) %}{{ k }}{% endmacro %}{{ m() }}{% macro w(x=n+1, y=-n) %}{{ x }}{{ y }}{% endmacro %}{{ w() }}",
	"{% macro card(title) %}<{{ title }}:{{ caller() }}>{% endmacro %}{% call card('T') %}body {{ n }}{% endcall %}{% macro list2(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) list2(li) %}[{{ x }}]{% endcall %}",
	"{% set b %}block {{ n }}{% endset %}{{ b }}|{{ b | length }}|{% filter upper %}up {{ s }}{% endfilter %}|{% filter trim %}  t  {% endfilter %}|{% filter upper | trim %} raw {% endfilter %}",
	"{% raw %}{{ not rendered }}{% if %}{% endraw %}|{% generation %}gen {{ n }}{% endgeneration %}",
	"{%- if n > 3 -%}\n  big\n{%- elif n > 1 %}\n  mid\n{% else %}\n  small\n{% endif %}\n  {% for x in li %}\n    {{ x }}\n  {% endfor %}\n{# comment #}\n{{- ' end' }}",
	"{{ {'a': 1, n: 2, s: 3, 1.5: 4, nil: 5, t: 6}  }} {{ {} }} {{ [] }} {{ () }} {{ (1,) }} {{ (1, 2) }} {{ [1, [2, [3]]] }} {{ [n, s, l] | length }}",
	"{{ dict(a=1, b=n) | dictsort }} {{ namespace(x=1).x }} {% set j = joiner(', ') %}{% for x in li %}{{ j() }}{{ x }}{% endfor %} {% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}",
	"{{ range(3) }} {{ range(2, 5) }} {{ range(5, 0, -2) }} {{ range(2**3) | length }} {{ raise_exception is defined }}",
	"{{ messages[0].role }} {{ messages | length }} {{ messages[-1]['content'] }} {{ add_generation_prompt }} {{ bos_token }}",
	" {%0%%}after{{ never }}",
	"a {% %} b",
	// errors both must report
	"{{ raise_exception('stop here') }}",
	"{{ s.nosuch() }}",
	"{{ undefined_function(1) }}",
	"{{ x | nosuchfilter }}",
	"{{ [].pop() }}",
	"{{ n is nosuchtest }}",
	"{{ s | replace('a') }}",
	"{% for x in %}{% endfor %}",
	"{% if n %}unclosed",
	"{{ 1 +* 2 }}",
}

// TestBoundAgrees renders agreeTemplates through the meter (Render) and
// through the engine alone, which must agree byte for byte.
func TestBoundAgrees(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hi <b>"}}
	for _, src := range agreeTemplates {
		want, wantErr := engineRender(t, src, msgs, agreeVars)
		got, err := Render(src, msgs, true, agreeVars)
		switch {
		case wantErr != nil && err == nil:
			t.Errorf("%s\n the engine fails (%v), the bounded render gives %q", src, wantErr, got)
		case wantErr == nil && err != nil:
			t.Errorf("%s\n the engine gives %q, the bounded render fails: %v", src, want, err)
		case got != want:
			t.Errorf("%s\n bounded %q\n  engine %q", src, got, want)
		}
	}
}

// engineRender renders src with the engine alone, with Render's variables
// and functions (strftime_now on the clock time.Unix(0, 0)).
func engineRender(t testing.TB, src string, msgs []Message, vars map[string]any) (string, error) {
	c, err := safeCompile(trimFinalNewline(src))
	if err != nil {
		return "", err
	}
	list := make([]jinja.Value, len(msgs))
	for i, m := range msgs {
		if list[i], err = m.value(); err != nil {
			t.Fatal(err)
		}
	}
	data := map[string]jinja.Value{
		"messages": jinja.NewList(list), "add_generation_prompt": jinja.NewBool(true),
		"bos_token": jinja.NewString(""), "eos_token": jinja.NewString(""),
		"range": jinja.NewCallable("range", newMeter(Limits{}, time.Now).rangeFn),
		"strftime_now": jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Undefined(), errors.New("strftime_now: want one format string")
			}
			return jinja.NewString(strftime(args[0].AsString(), time.Unix(0, 0))), nil
		}),
	}
	for k, v := range vars {
		if data[k], err = toValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return safeRender(c, data)
}

// TestBoundErrors: what bound refuses at compile time.
func TestBoundErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"reserved variable", "{{ __gb_out }}", "reserved"},
		{"reserved filter table", "{{ __filter_replace(s, '', 'x') }}", "reserved"},
		{"reserved set", "{% set __gb_x = 1 %}", "reserved"},
		{"reserved loop variable", "{% for __gb_i in l %}{% endfor %}", "reserved"},
		{"reserved macro", "{% macro __gb_m() %}{% endmacro %}", "reserved"},
		{"reserved parameter", "{% macro m(__gb_a) %}{% endmacro %}", "reserved"},
		{"reserved filter", "{{ x | __gb_f }}", "reserved"},
		{"deep parentheses", "{{ " + strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000) + " }}", "nested more than"},
		{"a macro parameter split inside a string", "{% macro w(x='a,b') %}{% endmacro %}", "is not a name"},
		{"long chain", "{{ 1" + strings.Repeat(" + 1", 300) + " }}", "nested more than"},
		{"deep blocks", strings.Repeat("{% if 1 %}", 300) + strings.Repeat("{% endif %}", 300), "nested more than"},
		{"long attribute chain", "{{ x" + strings.Repeat(".a", 300) + " }}", "nested more than"},
		{"many nots", "{{ " + strings.Repeat("not ", 1000) + "x }}", "nested more than"},
		{"too many tags", strings.Repeat("{{ 1 }}", maxTags+1), "tags, more than"},
		{"too long", strings.Repeat("x", maxSource+1), "bytes, more than"},
		{"unclosed tag", "{{ x", "unclosed"},
		{"unclosed block", "{% for x in l %}", "unclosed for block"},
		{"unknown statement", "{% frobnicate %}", "unknown statement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.src, "test", "", "")
			var ce *Error
			if !errors.As(err, &ce) || ce.Op != "compile" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a compile error with %q", err, tt.want)
			}
		})
	}
	if _, err := Render("{{ x }}", nil, false, map[string]any{"__gb_x": 1}); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("a reserved variable name: %v", err)
	}
}

// TestIndirectMethods: a string's replace, format and split make results
// far larger than the string, so the meter refuses them when it cannot see
// the string.
func TestIndirectMethods(t *testing.T) {
	for _, src := range []string{
		"{% set r = 'abc'.replace %}{{ r('', 'x') }}",
		"{% set ns = namespace(f='{}'.format) %}{{ ns.f('x') }}",
		"{% set sp = 'abc'.split %}{{ sp('') }}",
	} {
		if _, err := Render(src, nil, false, nil); err == nil || !strings.Contains(err.Error(), "called through a variable") {
			t.Errorf("%s: %v", src, err)
		}
	}
	if out, err := Render("{% set u = 'abc'.upper %}{{ u() }}", nil, false, nil); err != nil || out != "ABC" {
		t.Errorf("upper through a variable: %q, %v", out, err)
	}
}

// slowSlice is the engine's slicing loop (resolveSlice and evalSlice's
// general path), walked position by position: sliceOf's specification.
func slowSlice(n int, b [3]*jinja.Value) []int {
	step := 1
	if b[2] != nil {
		if step = int(toInt(*b[2])); step == 0 {
			step = 1
		}
	}
	start, stop := 0, n
	if step < 0 {
		start, stop = n-1, -n-1
	}
	if b[0] != nil {
		if start = int(toInt(*b[0])); start < 0 {
			start += n
		}
	}
	if b[1] != nil {
		if stop = int(toInt(*b[1])); stop < 0 {
			stop += n
		}
	}
	var idx []int
	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		if i >= 0 && i < n {
			idx = append(idx, i)
		}
	}
	return idx
}

func TestSliceOf(t *testing.T) {
	vals := []*jinja.Value{nil}
	for _, v := range []int64{-40, -9, -7, -5, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 11, 40} {
		x := jinja.NewInt(v)
		vals = append(vals, &x)
	}
	for n := range 8 {
		for _, a := range vals {
			for _, b := range vals {
				for _, c := range vals {
					bounds := [3]*jinja.Value{a, b, c}
					r := sliceOf(n, bounds)
					var got []int
					for k := range r.count {
						got = append(got, r.at(k))
					}
					if want := slowSlice(n, bounds); !slices.Equal(got, want) {
						t.Fatalf("n %d bounds %v %v %v: %v, want %v", n, show(a), show(b), show(c), got, want)
					}
				}
			}
		}
	}
	big := func(v int64) *jinja.Value { x := jinja.NewInt(v); return &x }
	for _, tt := range []struct {
		n          int
		b          [3]*jinja.Value
		first, cnt int
	}{
		{10, [3]*jinja.Value{big(0), big(1 << 62), big(3)}, 0, 4},
		{10, [3]*jinja.Value{big(1 << 62), nil, big(-3)}, 7, 3}, // 2^62 ≡ 1 (mod 3): 7, 4, 1
		{10, [3]*jinja.Value{big(-1 << 62), nil, big(7)}, 6, 1}, // -2^62 + 10 ≡ 6 (mod 7)
		{10, [3]*jinja.Value{nil, nil, big(math.MinInt64)}, 9, 1},
		{10, [3]*jinja.Value{nil, nil, big(math.MaxInt64)}, 0, 1},
	} {
		if r := sliceOf(tt.n, tt.b); r.count != tt.cnt || r.count > 0 && r.first != tt.first {
			t.Errorf("n %d bounds %v %v %v: %+v, want first %d count %d", tt.n, show(tt.b[0]), show(tt.b[1]), show(tt.b[2]), r, tt.first, tt.cnt)
		}
	}
}

func show(v *jinja.Value) string {
	if v == nil {
		return "_"
	}
	return v.String()
}
