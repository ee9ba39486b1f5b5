package chat

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// The methods of strings, lists and dicts, as the engine's stringMethod,
// listMethod and dictMethod define them (github.com/ardanlabs/jinja
// v1.8.0, eval.go), each after checking what its result will cost: a
// bounded template calls obj.name(args) as __gb_m(line, obj, 'name', args).
// A dict's own key comes first (d.get is d['get'] if there is one), as in
// the engine.

func guardMethod(m *meter, line int, args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[1].IsString() {
		return undef, m.fail(fmt.Errorf("line %d: malformed method call", line))
	}
	obj, name, args := args[0], args[1].AsString(), args[2:]
	if err := m.step(line, 1); err != nil {
		return undef, err
	}
	switch {
	case obj.IsDict():
		if v, ok := obj.AsDict().Get(name); ok {
			return callValue(m, line, "."+name, v, args, kw)
		}
		return dictMethod(m, line, obj.AsDict(), name, args)
	case obj.IsString():
		return stringMethod(m, line, obj.AsString(), name, args)
	case obj.IsList():
		return listMethod(m, line, obj.AsList(), name, args)
	}
	return undef, notCallable("."+name, undef)
}

func notCallable(name string, v jinja.Value) error {
	kind := "Undefined"
	switch {
	case v.IsString():
		kind = "a string"
	case v.IsList():
		kind = "a list"
	case v.IsDict():
		kind = "a dict"
	case v.IsNumber():
		kind = "a number"
	case v.IsBool():
		kind = "a boolean"
	case v.IsNone():
		kind = "None"
	}
	return fmt.Errorf("%s is not callable: %s", name, kind)
}

func dictMethod(m *meter, line int, d *jinja.Dict, name string, args []jinja.Value) (jinja.Value, error) {
	n := int64(d.Len())
	switch name {
	case "items", "keys", "values":
		per := int64(1)
		if name == "items" {
			per = 3 // a pair per key
		}
		if err := m.items(line, "."+name+"()", n*per); err != nil {
			return undef, err
		}
		items := make([]jinja.Value, 0, n)
		for _, k := range d.Keys {
			switch name {
			case "items":
				items = append(items, jinja.NewList([]jinja.Value{jinja.NewString(k), d.Data[k]}))
			case "keys":
				items = append(items, jinja.NewString(k))
			default:
				items = append(items, d.Data[k])
			}
		}
		return jinja.NewList(items), nil
	case "get":
		if len(args) == 0 {
			return undef, nil
		}
		k, err := m.textOf(line, args[0], ".get()")
		if err != nil {
			return undef, err
		}
		if v, ok := d.Get(k); ok {
			return v, nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return jinja.None(), nil
	case "pop":
		if len(args) == 0 {
			return undef, nil
		}
		k, err := m.textOf(line, args[0], ".pop()")
		if err != nil {
			return undef, err
		}
		if v, ok := d.Get(k); ok {
			if err := m.step(line, 1+n>>6); err != nil { // the keys are copied
				return undef, err
			}
			delete(d.Data, k)
			keys := make([]string, 0, len(d.Keys)-1)
			for _, key := range d.Keys {
				if key != k {
					keys = append(keys, key)
				}
			}
			d.Keys = keys
			return v, nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return undef, nil
	case "update":
		if len(args) > 0 && args[0].IsDict() {
			o := args[0].AsDict()
			if err := m.grow(line, ".update()", n+int64(o.Len()), int64(o.Len())); err != nil {
				return undef, err
			}
			for _, k := range o.Keys {
				d.Set(k, o.Data[k])
			}
		}
		return jinja.None(), nil
	}
	return undef, notCallable("."+name, undef)
}

func listMethod(m *meter, line int, l *jinja.List, name string, args []jinja.Value) (jinja.Value, error) {
	switch name {
	case "append":
		if len(args) > 0 {
			if err := m.grow(line, ".append()", int64(l.Len())+1, 1); err != nil {
				return undef, err
			}
			l.Append(args[0])
		}
		return jinja.None(), nil
	case "pop":
		if l.Len() == 0 {
			return undef, fmt.Errorf("pop from empty list")
		}
		i := l.Len() - 1
		if len(args) > 0 {
			if err := m.scanNum(line, args[0]); err != nil {
				return undef, err
			}
			if i = int(toInt(args[0])); i < 0 {
				i += l.Len()
			}
		}
		if i < 0 || i >= l.Len() {
			return undef, fmt.Errorf("pop index out of range")
		}
		if err := m.step(line, 1+int64(l.Len()-i)>>6); err != nil {
			return undef, err
		}
		v := l.Items[i]
		l.Items = append(l.Items[:i], l.Items[i+1:]...)
		return v, nil
	case "insert":
		if len(args) < 2 {
			return jinja.None(), nil
		}
		if err := m.scanNum(line, args[0]); err != nil {
			return undef, err
		}
		if err := m.grow(line, ".insert()", int64(l.Len())+1, 1); err != nil {
			return undef, err
		}
		if err := m.step(line, int64(l.Len())>>6); err != nil { // the items after i move
			return undef, err
		}
		i := min(max(int(toInt(args[0])), 0), l.Len())
		l.Items = append(l.Items, undef)
		copy(l.Items[i+1:], l.Items[i:])
		l.Items[i] = args[1]
		return jinja.None(), nil
	}
	return undef, notCallable("."+name, undef)
}

func stringMethod(m *meter, line int, s, name string, args []jinja.Value) (jinja.Value, error) {
	if err := m.scan(line, len(s)); err != nil {
		return undef, err
	}
	arg := func(i int) (string, error) { return m.textOf(line, args[i], "."+name+"()") }
	str := func(s string) (jinja.Value, error) { return jinja.NewString(s), nil }
	isSpace := func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
	switch name {
	case "strip", "lstrip", "rstrip":
		if len(args) == 0 {
			switch name {
			case "strip":
				return str(strings.TrimSpace(s))
			case "lstrip":
				return str(strings.TrimLeftFunc(s, isSpace))
			}
			return str(strings.TrimRightFunc(s, isSpace))
		}
		cut, err := arg(0)
		if err != nil {
			return undef, err
		}
		switch name {
		case "strip":
			return str(strings.Trim(s, cut))
		case "lstrip":
			return str(strings.TrimLeft(s, cut))
		}
		return str(strings.TrimRight(s, cut))
	case "split":
		var parts []string
		if len(args) == 0 {
			if err := m.items(line, ".split()", int64(len(s)+1)/2); err != nil {
				return undef, err
			}
			parts = strings.Fields(s)
		} else {
			sep, err := arg(0)
			if err != nil {
				return undef, err
			}
			n := int64(strings.Count(s, sep)) + 1
			if sep == "" {
				n = runeCount(s)
			}
			if err := m.items(line, ".split()", n); err != nil {
				return undef, err
			}
			parts = strings.Split(s, sep)
		}
		items := make([]jinja.Value, len(parts))
		for i, p := range parts {
			items[i] = jinja.NewString(p)
		}
		return jinja.NewList(items), nil
	case "startswith", "endswith", "count", "find":
		if len(args) == 0 {
			switch name {
			case "count":
				return jinja.NewInt(0), nil
			case "find":
				return jinja.NewInt(-1), nil
			}
			return jinja.NewBool(false), nil
		}
		x, err := arg(0)
		if err != nil {
			return undef, err
		}
		switch name {
		case "startswith":
			return jinja.NewBool(strings.HasPrefix(s, x)), nil
		case "endswith":
			return jinja.NewBool(strings.HasSuffix(s, x)), nil
		case "count":
			return jinja.NewInt(int64(strings.Count(s, x))), nil
		}
		return jinja.NewInt(int64(strings.Index(s, x))), nil
	case "replace":
		if len(args) < 2 {
			return str(s)
		}
		old, err := arg(0)
		if err != nil {
			return undef, err
		}
		repl, err := arg(1)
		if err != nil {
			return undef, err
		}
		count := -1
		if len(args) > 2 {
			if err := m.scanNum(line, args[2]); err != nil {
				return undef, err
			}
			count = int(toInt(args[2]))
		}
		if err := m.str(line, ".replace()", replacedSize(s, old, repl, count)); err != nil {
			return undef, err
		}
		return str(strings.Replace(s, old, repl, count))
	case "upper", "lower":
		// A case mapping makes a string of at most 3/2 the size.
		if err := m.build(line, "."+name+"()", int64(len(s))*3/2); err != nil {
			return undef, err
		}
		if name == "upper" {
			return m.result(line, "."+name+"()", strings.ToUpper(s))
		}
		return m.result(line, "."+name+"()", strings.ToLower(s))
	case "title", "capitalize":
		if err := m.build(line, "."+name+"()", 5*int64(len(s))); err != nil { // as runes, and back
			return undef, err
		}
		runes := []rune(s)
		if name == "capitalize" {
			if len(runes) > 0 {
				runes[0] = []rune(strings.ToUpper(string(runes[0])))[0]
			}
			return m.result(line, "."+name+"()", string(runes))
		}
		inWord := false
		for i, r := range runes {
			if r == ' ' || r == '\t' || r == '\n' {
				inWord = false
			} else if !inWord {
				runes[i] = []rune(strings.ToUpper(string(r)))[0]
				inWord = true
			}
		}
		return m.result(line, "."+name+"()", string(runes))
	case "format":
		out := s
		for i := range args {
			x, err := arg(i)
			if err != nil {
				return undef, err
			}
			ph := fmt.Sprintf("{%d}", i)
			if err := m.str(line, ".format()", replacedSize(out, ph, x, -1)); err != nil {
				return undef, err
			}
			out = strings.ReplaceAll(out, ph, x)
			if err := m.str(line, ".format()", replacedSize(out, "{}", x, 1)); err != nil {
				return undef, err
			}
			out = strings.Replace(out, "{}", x, 1)
		}
		return str(out)
	}
	return undef, notCallable("."+name, undef)
}

// result checks a string a method made (of a size known only after).
func (m *meter) result(line int, what, s string) (jinja.Value, error) {
	if n := int64(len(s)); n > m.lim.MaxValue {
		return undef, m.limit(line, "MaxValue", what+" built a string of", n, m.lim.MaxValue, "bytes")
	}
	return jinja.NewString(s), nil
}

// replacedSize is len(strings.Replace(s, old, repl, n)), computed without
// building it.
func replacedSize(s, old, repl string, n int) int64 {
	k := int64(strings.Count(s, old))
	if old == "" {
		k = int64(utf8.RuneCountInString(s)) + 1
	}
	if n >= 0 && int64(n) < k {
		k = int64(n)
	}
	grow := int64(len(repl)) - int64(len(old))
	if grow > 0 && k > (1<<62)/grow {
		return -1 // overflows: the caller reports it over any limit
	}
	return int64(len(s)) + k*grow
}
