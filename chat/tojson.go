package chat

import (
	"fmt"
	"math"
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
// (1e+06) rather than Python's (1000000.0). A bounded template (bound.go)
// calls this implementation of json.dumps for every "x | tojson(args)";
// only a {% filter tojson %} block, whose input is text, gets the library's.

// guardToJSON is x | tojson(indent=…, separators=…, sort_keys=…,
// ensure_ascii=…), stopping at the meter's limits.
func guardToJSON(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return undef, fmt.Errorf("tojson: want one value, got %d", len(args))
	}
	if err := m.measure(line, args[0], "| tojson"); err != nil { // bounds the walk and its depth
		return undef, err
	}
	e := jsonEncoder{itemSep: ", ", keySep: ": ", m: m, line: line}
	if v, ok := kw["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			n := max(0, v.AsInt())
			if n > m.lim.MaxValue {
				return undef, m.limit(line, "MaxValue", "| tojson would indent by", n, m.lim.MaxValue, "bytes")
			}
			e.indent, e.indented = strings.Repeat(" ", int(n)), true
		case v.IsString():
			e.indent, e.indented = v.AsString(), true
		default:
			return undef, fmt.Errorf("tojson: indent must be an integer or a string")
		}
		e.itemSep = ","
	}
	if v, ok := kw["separators"]; ok && !v.IsNone() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return undef, fmt.Errorf("tojson: separators must be two strings")
		}
		e.itemSep, e.keySep = v.AsList().Items[0].AsString(), v.AsList().Items[1].AsString()
	}
	if v, ok := kw["sort_keys"]; ok {
		e.sortKeys = v.IsTruthy()
	}
	if v, ok := kw["ensure_ascii"]; ok {
		e.ascii = v.IsTruthy()
	}
	e.value(args[0], 0)
	if e.err != nil {
		return undef, e.err
	}
	return jinja.NewString(e.b.String()), m.build(line, "| tojson", int64(e.b.Len()))
}

// jsonEncoder writes JSON exactly as Python's json.dumps does.
type jsonEncoder struct {
	b               strings.Builder
	itemSep, keySep string
	indent          string
	indented        bool
	sortKeys, ascii bool

	m    *meter // stops the encoder past MaxValue bytes
	line int
	err  error
}

// full reports whether the output has passed the meter's MaxValue (the
// first time, as an error).
func (e *jsonEncoder) full() bool {
	if e.err == nil && int64(e.b.Len()) > e.m.lim.MaxValue {
		e.err = e.m.limit(e.line, "MaxValue", "| tojson would build a string of", int64(e.b.Len()), e.m.lim.MaxValue, "bytes")
	}
	return e.err != nil
}

func (e *jsonEncoder) newline(level int) {
	if e.indented {
		e.b.WriteByte('\n')
		for i := 0; i < level && !e.full(); i++ {
			e.b.WriteString(e.indent)
		}
	}
}

func (e *jsonEncoder) value(v jinja.Value, level int) {
	if e.full() {
		return
	}
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
			return
		}
		e.b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				e.b.WriteString(e.itemSep)
			}
			e.newline(level + 1)
			e.value(it, level+1)
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
			return
		}
		e.b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.b.WriteString(e.itemSep)
			}
			e.newline(level + 1)
			e.str(k)
			e.b.WriteString(e.keySep)
			e.value(d.Data[k], level+1)
		}
		e.newline(level)
		e.b.WriteByte('}')
	default:
		e.b.WriteString("null")
	}
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
