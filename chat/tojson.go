package chat

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Chat templates print tool definitions with tojson, and Hugging Face
// defines that filter as Python's json.dumps(x, ensure_ascii=False,
// indent=..., separators=..., sort_keys=...). The jinja library's filter
// differs in two ways that change prompts: with indent= it sorts object
// keys and HTML-escapes <, > and &, and it prints floats in Go's form
// (1e+06) rather than Python's (1000000.0). So before compiling, the
// wrapper rewrites "SUBJECT | tojson(ARGS)" — where SUBJECT is a name, a
// dotted/indexed path or a literal-free call-free expression such as
// tool_call.arguments or messages[0] — into a call of pyToJSON, which
// implements json.dumps exactly. Other shapes keep the library's filter
// (a documented gap; none of the templates in testdata uses one).

// toJSONName is the global the rewritten calls go to.
const toJSONName = "__glassbox_tojson"

// subjectFilter matches "SUBJECT | tojson" with optional "(args" after it.
var subjectFilter = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\[\]'"]*\])*)\s*\|\s*tojson\b(\s*\()?`)

// rewriteToJSON applies the rewrite inside {{ }} and {% %} tags, outside
// quoted strings.
func rewriteToJSON(src string) string {
	if !strings.Contains(src, "tojson") {
		return src
	}
	var b strings.Builder
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			b.WriteString(src[i:])
			break
		}
		j += i
		closer := ""
		switch src[j+1] {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		}
		if closer == "" {
			b.WriteString(src[i : j+1])
			i = j + 1
			continue
		}
		b.WriteString(src[i : j+2])
		end := tagEnd(src, j+2, closer)
		b.WriteString(rewriteTag(src[j+2 : end]))
		i = end
	}
	return b.String()
}

// tagEnd returns the index of closer after from, skipping quoted strings,
// or len(src) if the tag is unclosed (the compiler reports that).
func tagEnd(src string, from int, closer string) int {
	for k := from; k < len(src); k++ {
		switch c := src[k]; {
		case c == '\'' || c == '"':
			for k++; k < len(src) && src[k] != c; k++ {
				if src[k] == '\\' {
					k++
				}
			}
		case strings.HasPrefix(src[k:], closer):
			return k
		}
	}
	return len(src)
}

// rewriteTag rewrites the unquoted parts of one tag's content.
func rewriteTag(tag string) string {
	var b strings.Builder
	start := 0
	flush := func(end int) { b.WriteString(rewriteCode(tag[start:end])) }
	for k := 0; k < len(tag); k++ {
		c := tag[k]
		if c != '\'' && c != '"' {
			continue
		}
		flush(k)
		q := k
		for k++; k < len(tag) && tag[k] != c; k++ {
			if tag[k] == '\\' {
				k++
			}
		}
		k = min(k, len(tag)-1)
		b.WriteString(tag[q : k+1])
		start = k + 1
	}
	flush(len(tag))
	return b.String()
}

// rewriteCode rewrites "X | tojson" and "X | tojson(" in code without
// string literals.
func rewriteCode(code string) string {
	if !strings.Contains(code, "tojson") {
		return code
	}
	var b strings.Builder
	last := 0
	for _, m := range subjectFilter.FindAllStringSubmatchIndex(code, -1) {
		s, e := m[0], m[1]
		if s > 0 {
			switch p := code[s-1]; {
			case p == '.' || p == ')' || p == ']' || p == '_' || isAlnum(p):
				continue // part of a longer expression: leave it to the library
			}
		}
		subject := code[m[2]:m[3]]
		b.WriteString(code[last:s])
		b.WriteString(toJSONName + "(" + subject)
		if m[4] >= 0 { // "tojson(" with arguments: continue the call
			b.WriteString(", ")
		} else {
			b.WriteString(")")
		}
		last = e
	}
	b.WriteString(code[last:])
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// toJSONCallable is json.dumps(value, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) as a template function.
var toJSONCallable = jinja.NewCallable(toJSONName, func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("tojson: want one value, got %d", len(args))
	}
	e := jsonEncoder{itemSep: ", ", keySep: ": "}
	if v, ok := kw["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			e.indent, e.indented = strings.Repeat(" ", int(max(0, v.AsInt()))), true
		case v.IsString():
			e.indent, e.indented = v.AsString(), true
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string")
		}
		e.itemSep = ","
	}
	if v, ok := kw["separators"]; ok && !v.IsNone() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings")
		}
		e.itemSep, e.keySep = v.AsList().Items[0].AsString(), v.AsList().Items[1].AsString()
	}
	if v, ok := kw["sort_keys"]; ok {
		e.sortKeys = v.IsTruthy()
	}
	if v, ok := kw["ensure_ascii"]; ok {
		e.ascii = v.IsTruthy()
	}
	if err := e.value(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.b.String()), nil
})

// jsonEncoder writes JSON exactly as Python's json.dumps does.
type jsonEncoder struct {
	b               strings.Builder
	itemSep, keySep string
	indent          string
	indented        bool
	sortKeys, ascii bool
}

func (e *jsonEncoder) newline(level int) {
	if e.indented {
		e.b.WriteByte('\n')
		for i := 0; i < level; i++ {
			e.b.WriteString(e.indent)
		}
	}
}

func (e *jsonEncoder) value(v jinja.Value, level int) error {
	switch {
	case v.IsUndefined(), v.IsNone(), v.IsCallable():
		e.b.WriteString("null")
	case v.IsBool():
		e.b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		e.b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.b.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		e.str(v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			e.b.WriteString("[]")
			return nil
		}
		e.b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				e.b.WriteString(e.itemSep)
			}
			e.newline(level + 1)
			if err := e.value(it, level+1); err != nil {
				return err
			}
		}
		e.newline(level)
		e.b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.Keys
		if e.sortKeys {
			keys = slices.Sorted(slices.Values(keys)) // code-point order, as Python's sort
		}
		if len(keys) == 0 {
			e.b.WriteString("{}")
			return nil
		}
		e.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.b.WriteString(e.itemSep)
			}
			e.newline(level + 1)
			e.str(k)
			e.b.WriteString(e.keySep)
			if err := e.value(d.Data[k], level+1); err != nil {
				return err
			}
		}
		e.newline(level)
		e.b.WriteByte('}')
	default:
		e.b.WriteString("null")
	}
	return nil
}

// str writes s as a JSON string the way json.dumps does: only ", \ and
// control characters are escaped (plus everything non-ASCII with
// ensure_ascii); invalid UTF-8 bytes become U+FFFD.
func (e *jsonEncoder) str(s string) {
	const hex = "0123456789abcdef"
	u := func(r rune) {
		e.b.WriteString(`\u`)
		e.b.WriteByte(hex[r>>12&15])
		e.b.WriteByte(hex[r>>8&15])
		e.b.WriteByte(hex[r>>4&15])
		e.b.WriteByte(hex[r&15])
	}
	e.b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			e.b.WriteString(`\"`)
		case r == '\\':
			e.b.WriteString(`\\`)
		case r == '\n':
			e.b.WriteString(`\n`)
		case r == '\r':
			e.b.WriteString(`\r`)
		case r == '\t':
			e.b.WriteString(`\t`)
		case r == '\b':
			e.b.WriteString(`\b`)
		case r == '\f':
			e.b.WriteString(`\f`)
		case r < 0x20:
			u(r)
		case e.ascii && r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				u(0xd800 + r>>10)
				u(0xdc00 + r&0x3ff)
			} else {
				u(r)
			}
		default:
			e.b.WriteRune(r)
		}
	}
	e.b.WriteByte('"')
}

// pyFloat formats f like Python's repr(float): the shortest digits that
// round-trip, in fixed notation with ".0" for integral values when the
// decimal exponent is in [-4, 16), otherwise as d.ddde±XX. json.dumps
// prints NaN and infinities as NaN, Infinity and -Infinity.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	mant, exps, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(exps)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp < -4 || exp >= 16 {
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, out, es, exp)
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}
