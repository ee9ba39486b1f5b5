package clip

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Span is a piece of a prompt with its emphasis weight.
type Span struct {
	Text   string
	Weight float32
}

// breakWeight marks a BREAK span (parse_prompt_attention pushes "BREAK"
// with weight -1; inside brackets it is multiplied like any span and then
// no longer a BREAK but the word "break").
const breakWeight = -1

var (
	roundMul  = float32(1.1)
	squareMul = 1 / roundMul // as float arithmetic: 1/1.1f = 0.909090877, not float32(1/1.1)
)

// ParseAttention splits a prompt into spans with emphasis weights, as
// stable-diffusion.cpp's parse_prompt_attention (src/core/util.cpp, after
// A1111's): "(x)" multiplies x's weight by 1.1, "[x]" by 1/1.1, "(x:w)" by
// w, nesting multiplies, brackets left open at the end are closed there,
// and adjacent spans of equal weight are joined. Its quirks are kept:
//
//   - only "\(" is unescaped; "\)", "\[", "\]" and "\\" keep their
//     backslash;
//   - ")" or "]" with nothing open is text; ":w)" with no "(" open is
//     dropped;
//   - "BREAK" followed by a non-word byte is a break wherever it starts,
//     also inside a word ("fooBREAK bar" → "foo", BREAK, " bar"), because
//     the reference restarts its regex on the rest of the text;
//   - the weight of "(x:w)" is the longest decimal prefix of w, as
//     std::stof reads it ("(x:1.2.3)" weighs 1.2).
//
// Where the reference stops the process (std::stof throws on a weight with
// no digits, "(a:.)", or one beyond float32's range or below its smallest
// normal number, such as forty digits), ParseAttention returns an
// encode-stage *Error naming the weight and its byte offset.
func ParseAttention(text string) ([]Span, error) {
	var res []Span
	var round, square []int
	multiply := func(from int, m float32) {
		for p := from; p < len(res); p++ {
			res[p].Weight *= m
		}
	}
	for i := 0; i < len(text); {
		rest := text[i:]
		c := rest[0]
		n := 1
		switch {
		case c == '\\' && len(rest) > 1 && strings.IndexByte(`()[]\`, rest[1]) >= 0:
			n = 2
			if rest[1] == '(' {
				res = append(res, Span{"(", 1})
			} else {
				res = append(res, Span{rest[:2], 1})
			}
		case c == '\\':
			res = append(res, Span{`\`, 1})
		case c == '(':
			round = append(round, len(res))
		case c == '[':
			square = append(square, len(res))
		case c == ':' && weightLen(rest) > 0:
			n = weightLen(rest)
			if len(round) > 0 {
				w, err := parseWeight(rest[1 : n-1])
				if err != nil {
					return nil, &Error{Offset: i, Err: err}
				}
				multiply(round[len(round)-1], w)
				round = round[:len(round)-1]
			}
		case c == ')' && len(round) > 0:
			multiply(round[len(round)-1], roundMul)
			round = round[:len(round)-1]
		case c == ']' && len(square) > 0:
			multiply(square[len(square)-1], squareMul)
			square = square[:len(square)-1]
		case strings.HasPrefix(rest, "BREAK") && (len(rest) == 5 || !isWord(rest[5])):
			n = 5
			res = append(res, Span{"BREAK", breakWeight})
		case c == 'B', c == ':', c == ')', c == ']':
			res = append(res, Span{rest[:1], 1})
		default:
			for n < len(rest) && strings.IndexByte(`\()[]:B`, rest[n]) < 0 {
				n++
			}
			res = append(res, Span{rest[:n], 1})
		}
		i += n
	}
	for _, p := range round {
		multiply(p, roundMul)
	}
	for _, p := range square {
		multiply(p, squareMul)
	}
	if len(res) == 0 {
		return []Span{{"", 1}}, nil
	}
	out := res[:1]
	for _, s := range res[1:] {
		if last := &out[len(out)-1]; last.Weight == s.Weight {
			last.Text += s.Text
		} else {
			out = append(out, s)
		}
	}
	return out, nil
}

// isWord is std::regex's \w in the C locale: ASCII letters, digits, '_'.
func isWord(c byte) bool { return isAlpha(c) || isDigit(c) || c == '_' }

// weightLen returns the length of the match of :([+-]?[.\d]+)\) at the
// start of s, or 0.
func weightLen(s string) int {
	j := 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	k := j
	for k < len(s) && (isDigit(s[k]) || s[k] == '.') {
		k++
	}
	if k == j || k >= len(s) || s[k] != ')' {
		return 0
	}
	return k + 1
}

// parseWeight reads w ([+-]?[.0-9]+) as std::stof does: the longest
// prefix that is a decimal number, correctly rounded to float32. Where
// std::stof throws (no digits: std::invalid_argument; a result beyond
// float32's range or below its smallest normal number: std::out_of_range,
// as glibc's strtof reports ERANGE) it returns an error.
func parseWeight(w string) (float32, error) {
	j := 0
	if j < len(w) && (w[j] == '+' || w[j] == '-') {
		j++
	}
	digits, nonzero := 0, false
	for ; j < len(w) && isDigit(w[j]); j++ {
		digits++
		nonzero = nonzero || w[j] != '0'
	}
	if j < len(w) && w[j] == '.' {
		for j++; j < len(w) && isDigit(w[j]); j++ {
			digits++
			nonzero = nonzero || w[j] != '0'
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("%w: %q is not a number", ErrWeight, w)
	}
	f, err := strconv.ParseFloat(w[:j], 32)
	if err != nil || nonzero && math.Abs(f) < 0x1p-126 {
		return 0, fmt.Errorf("%w: %s is outside float32's range", ErrWeight, w[:j])
	}
	return float32(f), nil
}
