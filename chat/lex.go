package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// The bounded renderer (bound.go) rewrites a template before the engine
// compiles it, so it must split the source exactly as the engine does:
// this file follows github.com/ardanlabs/jinja v1.8.0's scan.go (tags and
// text) and tokenizeExpr (expression tokens), rule for rule.

type segKind int

const (
	segText segKind = iota
	segComment
	segExpr
	segStmt
)

// segment is a run of text or one tag.
type segment struct {
	kind                segKind
	text                string // between the delimiters and trim marks, or the text itself
	trimLeft, trimRight bool   // {%- and -%}
	line                int    // 1-based, of the tag's opening
	src                 string // the segment's bytes in the source, delimiters included
}

// scanSegments splits src into text and tags: a tag opens with {{, {% or
// {#, may carry a trim mark ('-') after the opener and before the closer,
// and ends at the first closer outside a quoted string (comments have no
// strings).
func scanSegments(src string) ([]segment, error) {
	var segs []segment
	line, textStart, textLine := 1, 0, 1
	i := 0
	for i < len(src) {
		if src[i] != '{' || i+1 >= len(src) {
			if src[i] == '\n' {
				line++
			}
			i++
			continue
		}
		var kind segKind
		var closer string
		switch src[i+1] {
		case '{':
			kind, closer = segExpr, "}}"
		case '%':
			kind, closer = segStmt, "%}"
		case '#':
			kind, closer = segComment, "#}"
		default:
			i++
			continue
		}
		if i > textStart {
			segs = append(segs, segment{kind: segText, text: src[textStart:i], line: textLine, src: src[textStart:i]})
		}
		tagStart, tagLine := i, line
		i += 2
		trimLeft := false
		if i < len(src) && src[i] == '-' {
			trimLeft = true
			i++
		}
		contentStart := i
		found := false
		for i < len(src) {
			ch := src[i]
			if kind != segComment && (ch == '\'' || ch == '"') {
				i++
				for i < len(src) && src[i] != ch {
					if src[i] == '\\' && i+1 < len(src) {
						if src[i+1] == '\n' {
							line++
						}
						i++
					}
					if src[i] == '\n' {
						line++
					}
					i++
				}
				if i < len(src) {
					i++
				}
				continue
			}
			if ch == '-' && i+2 < len(src) && src[i+1] == closer[0] && src[i+2] == closer[1] {
				segs = append(segs, segment{kind: kind, text: src[contentStart:i], trimLeft: trimLeft, trimRight: true, line: tagLine, src: src[tagStart : i+3]})
				i += 3
				found = true
				break
			}
			if i+1 < len(src) && ch == closer[0] && src[i+1] == closer[1] {
				segs = append(segs, segment{kind: kind, text: src[contentStart:i], trimLeft: trimLeft, line: tagLine, src: src[tagStart : i+2]})
				i += 2
				found = true
				break
			}
			if ch == '\n' {
				line++
			}
			i++
		}
		if !found {
			return nil, fmt.Errorf("unclosed tag at line %d", tagLine)
		}
		textStart, textLine = i, line
	}
	if textStart < len(src) {
		segs = append(segs, segment{kind: segText, text: src[textStart:], line: textLine, src: src[textStart:]})
	}
	return segs, nil
}

// stmtKeyword is a statement's first word: its leading letters and
// underscores (digits end it, as in the engine).
func stmtKeyword(text string) string {
	text = strings.TrimSpace(text)
	for i, r := range text {
		if !unicode.IsLetter(r) && r != '_' {
			return text[:i]
		}
	}
	return text
}

type tokKind int

const (
	tokName tokKind = iota
	tokInt
	tokFloat
	tokString
	tokOp // + - * / % < > = == != <= >=
	tokComma
	tokDot
	tokColon
	tokLParen
	tokRParen
	tokLBracket
	tokRBracket
	tokLBrace
	tokRBrace
	tokPipe
	tokTilde
	tokPower
	tokFloorDiv
	tokEOF
)

// tok is an expression token; val is a string literal's decoded value or
// any other token's text.
type tok struct {
	kind tokKind
	val  string
}

// tokenize splits an expression as the engine does: strings in ' or "
// with the escapes \n \t \\ \' \" (any other backslash is kept), integers
// and decimal floats (with an exponent only after a fraction), ASCII
// identifiers, the operators, and nothing for any other byte (skipped).
func tokenize(s string) []tok {
	toks := make([]tok, 0, len(s)/4+1)
	i := 0
	for i < len(s) {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r':
			i++
		case ch == '\'' || ch == '"':
			i++
			if j := strings.IndexByte(s[i:], ch); j >= 0 && strings.IndexByte(s[i:i+j], '\\') < 0 {
				toks = append(toks, tok{tokString, s[i : i+j]}) // no escapes: the text itself
				i += j + 1
				continue
			}
			var b strings.Builder
			for i < len(s) && s[i] != ch {
				if s[i] == '\\' && i+1 < len(s) {
					i++
					switch s[i] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '\\', '\'', '"':
						b.WriteByte(s[i])
					default:
						b.WriteByte('\\')
						b.WriteByte(s[i])
					}
				} else {
					b.WriteByte(s[i])
				}
				i++
			}
			if i < len(s) {
				i++
			}
			toks = append(toks, tok{tokString, b.String()})
		case ch >= '0' && ch <= '9':
			start := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
				i++
				for i < len(s) && isDigit(s[i]) {
					i++
				}
				if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
					i++
					if i < len(s) && (s[i] == '+' || s[i] == '-') {
						i++
					}
					for i < len(s) && isDigit(s[i]) {
						i++
					}
				}
				toks = append(toks, tok{tokFloat, s[start:i]})
			} else {
				toks = append(toks, tok{tokInt, s[start:i]})
			}
		case ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z':
			start := i
			for i < len(s) && isIdentByte(s[i]) {
				i++
			}
			toks = append(toks, tok{tokName, s[start:i]})
		default:
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "**":
					toks = append(toks, tok{tokPower, two})
					i += 2
					continue
				case "//":
					toks = append(toks, tok{tokFloorDiv, two})
					i += 2
					continue
				case "==", "!=", "<=", ">=":
					toks = append(toks, tok{tokOp, two})
					i += 2
					continue
				}
			}
			if k, ok := singleTokens[ch]; ok {
				toks = append(toks, tok{k, string(ch)})
			}
			i++
		}
	}
	return append(toks, tok{kind: tokEOF})
}

var singleTokens = map[byte]tokKind{
	',': tokComma, '.': tokDot, ':': tokColon, '(': tokLParen, ')': tokRParen,
	'[': tokLBracket, ']': tokRBracket, '{': tokLBrace, '}': tokRBrace, '|': tokPipe, '~': tokTilde,
	'+': tokOp, '-': tokOp, '*': tokOp, '/': tokOp, '%': tokOp, '<': tokOp, '>': tokOp, '=': tokOp,
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func isIdentByte(b byte) bool {
	return b == '_' || isDigit(b) || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// findKeyword returns the index of the word kw in s outside brackets and
// quotes, or -1 (how the engine splits for statements).
func findKeyword(s, kw string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if quote != 0 {
			if ch == '\\' && i+1 < len(s) {
				i++
			} else if ch == quote {
				quote = 0
			}
			continue
		}
		switch ch {
		case '\'', '"':
			quote = ch
			continue
		case '(', '[', '{':
			depth++
			continue
		case ')', ']', '}':
			depth--
			continue
		}
		if depth == 0 && strings.HasPrefix(s[i:], kw) &&
			(i == 0 || !isIdentByte(s[i-1])) && (i+len(kw) >= len(s) || !isIdentByte(s[i+len(kw)])) {
			return i
		}
	}
	return -1
}
