package pth

import (
	"strconv"
	"strings"
)

// Values from a pickle reach error messages, and a pickle of a few hundred
// bytes can hold a value no printer should walk: a tuple doubled through the
// memo n times is n+1 tuples in memory but 2^n leaves as a tree, and a list
// may contain itself. show prints such values in Python's notation within a
// fixed budget: at most maxShowNodes values visited, maxShowItems items of
// each container, maxShowDepth levels, maxShowString bytes of a string and
// maxShowBytes in all; what it leaves out is written "…".
const (
	maxShowNodes  = 64
	maxShowItems  = 6
	maxShowDepth  = 3
	maxShowString = 40
	maxShowBytes  = 320
)

// show returns the bounded text of v, adding the values it visits to *work.
func show(v any, work *int) string {
	p := printer{work: work, budget: maxShowNodes}
	p.value(v, 0)
	s := p.b.String()
	if len(s) > maxShowBytes {
		s = s[:maxShowBytes-len("…")] + "…" // may split a rune of a string: it is only shown
	}
	return s
}

type printer struct {
	b      strings.Builder
	work   *int
	budget int
}

func (p *printer) value(v any, depth int) {
	if p.budget <= 0 || depth > maxShowDepth || p.b.Len() >= maxShowBytes {
		p.b.WriteString("…")
		return
	}
	p.budget--
	*p.work++
	switch x := v.(type) {
	case nil:
		p.b.WriteString("None")
	case bool:
		if x {
			p.b.WriteString("True")
		} else {
			p.b.WriteString("False")
		}
	case int64:
		p.b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		p.b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case string:
		p.b.WriteString(quoteShort(x))
	case pyTuple:
		closer := ")"
		if len(x) == 1 {
			closer = ",)" // Python's 1-tuple
		}
		p.items("(", closer, len(x), func(i int) { p.value(x[i], depth+1) })
	case *pyList:
		p.items("[", "]", len(x.items), func(i int) { p.value(x.items[i], depth+1) })
	case *pyDict:
		p.items("{", "}", len(x.keys), func(i int) {
			p.value(x.keys[i], depth+1)
			p.b.WriteString(": ")
			p.value(x.vals[i], depth+1)
		})
	case pyGlobal:
		p.b.WriteString(cut(x.module + "." + x.name))
	case storageRef:
		p.b.WriteString("storage(" + quoteShort(x.dtype) + ", " + quoteShort(x.key) + ")")
	case *tensorRef:
		p.b.WriteString("tensor(size " + strconv.Itoa(len(x.size)) + " dims)")
	default:
		p.b.WriteString("?")
	}
}

// items writes a container: open, up to maxShowItems items, close.
func (p *printer) items(open, close string, n int, item func(int)) {
	p.b.WriteString(open)
	for i := range n {
		if i > 0 {
			p.b.WriteString(", ")
		}
		if i == maxShowItems || p.budget <= 0 || p.b.Len() >= maxShowBytes {
			p.b.WriteString("… " + strconv.Itoa(n-i) + " more")
			break
		}
		item(i)
	}
	p.b.WriteString(close)
}

// quoteShort quotes s, cut to maxShowString bytes.
func quoteShort(s string) string {
	if len(s) <= maxShowString {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxShowString]) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// cut is s unquoted, cut to maxShowString bytes.
func cut(s string) string {
	if len(s) <= maxShowString {
		return s
	}
	return s[:maxShowString] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
