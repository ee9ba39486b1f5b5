package sample

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// matches runs p over the whole value v.
func (p *pattern) matches(v string) bool {
	s := p.walk(p.start(), v)
	return s >= 0 && p.done(s)
}

// deadStates returns the states reachable from the start from which no
// accepted end can be reached: none, if the automaton never lets through
// a prefix it cannot finish.
func (p *pattern) deadStates() []int16 {
	reach := map[int16]bool{p.start(): true}
	queue := []int16{p.start()}
	preds := make([][]int16, len(p.next))
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for c := range 256 {
			if n := p.step(s, byte(c)); n >= 0 {
				preds[n] = append(preds[n], s)
				if !reach[n] {
					reach[n] = true
					queue = append(queue, n)
				}
			}
		}
	}
	live := map[int16]bool{}
	for s := range reach {
		if p.done(s) {
			live[s] = true
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, q := range preds[s] {
			if !live[q] {
				live[q] = true
				queue = append(queue, q)
			}
		}
	}
	var dead []int16
	for s := range reach {
		if !live[s] {
			dead = append(dead, s)
		}
	}
	return dead
}

// randomStrings returns 3000 strings of up to maxLen characters of
// alphabet, seeded by seed and the pattern they are for.
func randomStrings(seed uint64, pattern, alphabet string, maxLen int) []string {
	rng := rand.New(rand.NewPCG(seed, uint64(len(pattern))))
	alpha := []rune(alphabet)
	out := make([]string, 3000)
	for i := range out {
		var b strings.Builder
		for range rng.IntN(maxLen) {
			b.WriteRune(alpha[rng.IntN(len(alpha))])
		}
		out[i] = b.String()
	}
	return out
}

// TestPattern checks the automata against Go's regexp (whose syntax and
// meaning agree with ECMA-262's on this subset) over strings drawn from
// each pattern's alphabet, and that no reachable state is a dead end.
func TestPattern(t *testing.T) {
	for _, tc := range []struct{ pattern, alphabet string }{
		{`^abc$`, "abcx"},
		{`abc`, "abcx"},
		{`^a*b+c?$`, "abc"},
		{`^(ab|cd)*$`, "abcd"},
		{`^(?:a|bc){2,3}$`, "abc"},
		{`^[a-c]{2}x{1,}$`, "abcx"},
		{`^\d{3}-\d{4}$`, "0123456789-a"},
		{`^[^a-z]+$`, "aZ9é-"},
		{`^\w+@\w+\.com$`, "ab@.comx"},
		{`^.{2,4}$`, "aé\n"},
		{`^\S\s\D\W$`, " a1-é\t"},
		{`^[\w.-]+$`, "a.-/ "},
		{`^x{0}y$`, "xy"},
		{`^(a?){3}$`, "ab"},
		{`^é+ü?$`, "éüa"},
		{`^[+-]?\d+(\.\d+)?$`, "+-1.2"},
		{`^a{2,}?$`, "ab"},
		{`\$\^\{`, "$^{a"},
		{`^a{,2}$`, "a{,2}"}, // not a repetition: literal
		{`^[а-яё]+[^а-я]$`, "абвёяaЖ-"},
		{`^[\u4e00-\u9fff]{2}[^\u4e00-\u9fffa]$`, "中文字a😀é"},
		{`^[^é]*$`, "éeü😀x"},
		{`^[é-ü😀]+$`, "éëüa😀😁ý"},
		{`^[^\u0000-\u10FF]$`, "aéᄀ😀"},
		{`^[\x80-\uFFFF]+$`, "aé\uffff😀"},
		{formats["date"], "0123456789-"},
		{formats["time"], "0123456789:.Z+-"},
		{formats["uuid"], "0123456789abcdefA-"},
		{formats["duration"], "PTYMWDHS12"},
		{formats["ipv4"], "0125.9"},
		{formats["hostname"], "ab-.9"},
		{formats["email"], "ab.@c-"},
	} {
		p, err := compilePattern(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		// Go's syntax writes \uXXXX as \x{XXXX}.
		re := regexp.MustCompile(regexp.MustCompile(`\\u([0-9a-fA-F]{4})`).ReplaceAllString(tc.pattern, `\x{$1}`))
		matched := 0
		for _, v := range randomStrings(7, tc.pattern, tc.alphabet, 40) {
			// Only values written without escapes can be generated.
			plain := !strings.ContainsAny(v, "\"\\\t\n\r\f\v")
			if got, want := p.matches(v), re.MatchString(v) && plain; got != want {
				t.Fatalf("%q on %q: %v, regexp says %v", tc.pattern, v, got, want)
			}
			if p.matches(v) {
				matched++
			}
		}
		if dead := p.deadStates(); len(dead) > 0 {
			t.Errorf("%q: %d reachable states cannot end in a match", tc.pattern, len(dead))
		}
		t.Logf("%q: %d of 3000 matched", tc.pattern, matched)
	}
	for _, v := range []string{"2024-02-29", "1999-12-31"} {
		if p, _ := compilePattern(formats["date"]); !p.matches(v) {
			t.Errorf("date %q refused", v)
		}
	}
	for format, vs := range map[string][]string{"duration": {"P3Y6M4DT12H30M5S", "PT0S", "P2W", "P1M"}, "ipv4": {"192.168.0.1", "255.255.255.255"},
		"hostname": {"localhost", "a-b.example.org"}, "email": {"ann.lee+x@mail.example.com"}} {
		for _, v := range vs {
			if p, _ := compilePattern(formats[format]); !p.matches(v) {
				t.Errorf("%s %q refused", format, v)
			}
		}
	}
	for format, vs := range map[string][]string{"duration": {"P", "PT", "P1H"}, "ipv4": {"256.1.1.1", "1.2.3"}, "email": {"a@b", "@b.com"}} {
		for _, v := range vs {
			if p, _ := compilePattern(formats[format]); p.matches(v) {
				t.Errorf("%s %q taken", format, v)
			}
		}
	}
	for _, v := range []string{"2024-02-29T23:59:60.123Z", "2024-02-29T00:00:00+05:30"} {
		if p, _ := compilePattern(formats["date-time"]); !p.matches(v) {
			t.Errorf("date-time %q refused", v)
		}
	}
}

// TestPatternLookahead: a lookahead at the start (RE2 has none, so the
// reference is the lookahead's own pattern run on the value): pydantic's
// Decimal pattern, and (?=X) beside (?!X).
func TestPatternLookahead(t *testing.T) {
	for _, tc := range []struct {
		pattern, main, look string // look: the value (or a prefix of it, without $) must (?=) or must not (?!) match
		negative            bool
		alphabet            string
	}{
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, `^[+-]?0*\d*\.?\d*$`, `^[-+.]*$`, true, "+-.019a"},
		{`^(?=\d{2})\w+$`, `^\w+$`, `^\d{2}`, false, "a1_"},
		{`^(?!ab)[a-c]*$`, `^[a-c]*$`, `^ab`, true, "abc"},
		{`^(?!")x*$`, `^x*$`, `^"`, true, "x"}, // a lookahead nothing plain matches excludes nothing
	} {
		p, err := compilePattern(tc.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		main, look := regexp.MustCompile(tc.main), regexp.MustCompile(tc.look)
		matched := 0
		for _, v := range randomStrings(9, tc.pattern, tc.alphabet, 8) {
			want := main.MatchString(v) && look.MatchString(v) != tc.negative
			if got := p.matches(v); got != want {
				t.Fatalf("%q on %q: %v, want %v", tc.pattern, v, got, want)
			}
			if want {
				matched++
			}
		}
		if dead := p.deadStates(); len(dead) > 0 || matched == 0 {
			t.Errorf("%q: %d dead states, %d matched", tc.pattern, len(dead), matched)
		}
	}
	for _, v := range []string{"", "+", "-.", "."} {
		if p, _ := compilePattern(`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`); p.matches(v) {
			t.Errorf("the Decimal pattern took %q", v)
		}
	}
}

// TestPatternErrors: what the subset lacks is an error that says what.
func TestPatternErrors(t *testing.T) {
	for _, tc := range []struct{ pattern, want string }{
		{`a(?=b)`, "lookarounds (but at the start, after ^)"},
		{`(?=b)a`, "lookarounds (but at the start, after ^)"}, // unanchored
		{`^(?=b`, "missing )"},
		{`(a`, "missing )"},
		{`a)`, "unexpected"},
		{`[a`, "missing ]"},
		{`\uD800`, "surrogate"},
		{`a^b`, "only at the pattern's start"},
		{`\1`, "not supported"},
		{`a{3,2}`, "minimum above its maximum"},
		{`a{300}`, "more than 256"},
		{`(a{100}){100}`, "too large"},
		{`^"$`, "without escapes"},
		{`^\n$`, "without escapes"},
		{`*a`, "nothing to repeat"},
		{`\b`, "word boundary"},
	} {
		_, err := compilePattern(tc.pattern)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.pattern, err, tc.want)
		}
	}
}

// FuzzPattern: no pattern text panics the compiler, and no state a
// compiled pattern reaches is a dead end.
func FuzzPattern(f *testing.F) {
	for _, p := range []string{`^a*b+c?$`, `(ab|cd){2,3}`, `^[^a-z]\d\w\s.$`, formats["date-time"], `x{0,}?`, `[\w.-]+@é`,
		`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, `^[а-яё]+[^\u4e00-\u9fff]?$`} {
		f.Add(p, "abcd-1 xé")
	}
	f.Fuzz(func(t *testing.T, src, in string) {
		p, err := compilePattern(src)
		if err != nil {
			return
		}
		if dead := p.deadStates(); len(dead) > 0 {
			t.Fatalf("%q: states %v are reachable but cannot end in a match", src, dead)
		}
		p.matches(in)
	})
}

// TestNumRange: a bounded number's automaton accepts exactly the decimals
// (no exponent) within the bounds and on the step (multipleOf), by exact
// arithmetic, and has no dead states, for random bounds, steps and
// numbers.
func TestNumRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	decimal := func(maxInt int) string {
		var b strings.Builder
		if rng.IntN(3) == 0 {
			b.WriteByte('-')
		}
		b.WriteString(strconv.Itoa(rng.IntN(maxInt)))
		if rng.IntN(2) == 0 {
			b.WriteByte('.')
			for range 1 + rng.IntN(3) {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		}
		return b.String()
	}
	kws := []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}
	for trial := range 300 {
		integer := trial%3 == 0
		schema := map[string]any{"type": "number"}
		if integer {
			schema["type"] = "integer"
		}
		bounds := map[string]*big.Rat{}
		for _, k := range kws {
			if rng.IntN(2) == 0 {
				d := decimal([]int{3, 30, 1000}[rng.IntN(3)])
				schema[k] = json.Number(d)
				bounds[k], _ = new(big.Rat).SetString(d)
			}
		}
		var step *big.Rat
		if rng.IntN(3) == 0 {
			d := []string{"1", "2", "3", "5", "7", "10", "0.5", "0.25", "0.1", "0.01", "1.5", "2.5", "0.3"}[rng.IntN(13)]
			schema["multipleOf"] = json.Number(d)
			step, _ = new(big.Rat).SetString(d)
		}
		text, _ := json.Marshal(schema)
		s, err := CompileSchema(text)
		in := func(v *big.Rat) bool {
			if step != nil && !new(big.Rat).Quo(v, step).IsInt() {
				return false
			}
			for k, b := range bounds {
				c := v.Cmp(b)
				if k == "minimum" && c < 0 || k == "exclusiveMinimum" && c <= 0 || k == "maximum" && c > 0 || k == "exclusiveMaximum" && c >= 0 {
					return false
				}
			}
			return !integer || v.IsInt()
		}
		if err != nil {
			// Only bounds no value meets are refused: try many.
			for range 2000 {
				if v, _ := new(big.Rat).SetString(decimal(2000)); in(v) && (!integer || strings.Contains(v.String(), "/1")) {
					t.Fatalf("%s refused (%v), but %s is within it", text, err, v.FloatString(3))
				}
			}
			continue
		}
		nd := &s.nodes[s.root]
		if nd.num == nil {
			continue // no bound drawn
		}
		if dead := nd.num.deadStates(); len(dead) > 0 {
			t.Fatalf("%s: %d dead states", text, len(dead))
		}
		for range 300 {
			d := decimal([]int{3, 30, 1000, 100000}[rng.IntN(4)])
			if step != nil && rng.IntN(2) == 0 {
				// A multiple of the step, sometimes with zeros after it.
				k := new(big.Rat).SetInt64(int64(rng.IntN(2000) - 1000))
				d = new(big.Rat).Mul(k, step).FloatString(2 + rng.IntN(2))
			}
			if integer {
				d, _, _ = strings.Cut(d, ".")
			}
			v, _ := new(big.Rat).SetString(d)
			if got, want := s.Valid(d), in(v); got != want {
				t.Fatalf("%s on %s: %v, want %v", text, d, got, want)
			}
		}
	}
}
