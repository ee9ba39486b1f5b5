package sample

import (
	"fmt"
	"math/big"
	"strings"
)

// A number schema's bounds (minimum, maximum, exclusiveMinimum,
// exclusiveMaximum) and step (multipleOf) compile to a deterministic
// automaton over the number's bytes, as a pattern does for a string (the
// same pattern type): it accepts exactly the decimals
// -?(0|[1-9][0-9]*)(\.[0-9]+)? — no exponent — whose value lies within
// the bounds and is a whole multiple of the step, and from every state it
// reaches some accepted end remains (dead states are removed), so a
// bounded number never leads the constraint into a dead end. It reads the
// digits against each bound as a person compares decimals: the integer
// parts by length, then digit by digit, then the fractions digit by digit.
// Against a step of a units of 10^−f (0.25: 25 of 10^−2) it keeps the
// remainder modulo a of the digits read, as in long division: the value
// times 10^f is a whole multiple of a exactly when that remainder, shifted
// by the fraction digits still to come, is 0. A fraction digit past the
// step's f may only be 0.

// bound is one bound on a number's magnitude m (m ≥ 0): m rel d, d a
// non-negative decimal as its integer digits (no leading zeros; "" for 0)
// and fraction digits (no trailing zeros).
type bound struct {
	intDigits, fracDigits string
	rel                   int8 // −2: m < d, −1: m ≤ d, 1: m ≥ d, 2: m > d
}

// cmpState is a magnitude being read against one bound: in the integer
// part, its digits so far (n, capped at one past the bound's) and how the
// first of them compare with the bound's (cmp); in the fraction, whether
// the comparison is decided (cmp ≠ 0) and the fraction digits read.
type cmpState struct {
	frac bool
	n    int16
	cmp  int8
}

// numState is a bounded number being read: where in its form, its sign,
// and the comparisons of its magnitude with the bounds of that sign.
type numState struct {
	phase uint8 // numStart, numMinus, numInt, numZero, numDot, numFrac
	neg   bool
	cmp   [2]cmpState
	rem   int32 // with a step: the digits read so far, modulo its units
	fd    int8  // with a step: the fraction digits read, up to its own
}

const (
	numStart uint8 = iota
	numMinus
	numInt  // integer digits, the first 1–9
	numZero // a leading 0: then '.' or the end
	numDot  // after '.': a digit
	numFrac // fraction digits
)

// maxBoundDigits bounds a bound's digits (the automaton grows with them).
const maxBoundDigits = 40

// parseBound reads a JSON number of a schema as an exact decimal: its
// sign and its magnitude's integer and fraction digits.
func parseBound(text string) (neg bool, intDigits, fracDigits string, err error) {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return false, "", "", fmt.Errorf("%q is not a number", text)
	}
	neg = r.Sign() < 0
	r.Abs(r)
	// A JSON number's denominator is a power of ten (or of its factors):
	// maxBoundDigits fraction digits hold it exactly, or it is refused.
	s := r.FloatString(maxBoundDigits)
	if back, _ := new(big.Rat).SetString(s); back.Cmp(r) != 0 {
		return false, "", "", fmt.Errorf("%s has more than %d fraction digits", text, maxBoundDigits)
	}
	intDigits, fracDigits, _ = strings.Cut(s, ".")
	intDigits = strings.TrimLeft(intDigits, "0")
	fracDigits = strings.TrimRight(fracDigits, "0")
	if len(intDigits)+len(fracDigits) > maxBoundDigits {
		return false, "", "", fmt.Errorf("%s has more than %d digits", text, maxBoundDigits)
	}
	return neg, intDigits, fracDigits, nil
}

// numBounds is a number schema's bounds: each present or not, its sign
// (neg: below 0), whether it is 0, its magnitude's digits and whether it is
// exclusive; integer: the value has no fraction.
type numBounds struct {
	hasLo, hasHi   bool
	loNeg, hiNeg   bool
	loZero, hiZero bool
	lo, hi         [2]string
	loExcl, hiExcl bool
	integer        bool
	stepA          int32 // multipleOf as stepA units of 10^−stepF; 0: none
	stepF          int8
}

// maxStepUnits bounds a step's units (each is a remainder, so an
// automaton state).
const maxStepUnits = 1000

// parseStep reads multipleOf: a positive decimal of at most maxStepUnits
// units of its last digit.
func (b *numBounds) parseStep(text string) error {
	neg, id, fd, err := parseBound(text)
	switch {
	case err != nil:
		return err
	case neg || id == "" && fd == "":
		return fmt.Errorf("%s is not greater than 0", text)
	}
	units, ok := new(big.Int).SetString(id+fd, 10)
	if !ok || !units.IsInt64() || units.Int64() > maxStepUnits {
		return fmt.Errorf("%s is %s units of its last digit, more than the %d supported", text, strings.TrimLeft(id+fd, "0"), maxStepUnits)
	}
	b.stepA, b.stepF = int32(units.Int64()), int8(len(fd))
	return nil
}

// stepDigit adds digit c to the remainder of the digits read.
func (s numState) stepDigit(c byte, b *numBounds) numState {
	if b.stepA > 0 {
		s.rem = (s.rem*10 + int32(c-'0')) % b.stepA
	}
	return s
}

// onStep reports whether a number ending in state s is a whole multiple
// of the step: its remainder shifted by the step's fraction digits not
// written is 0.
func (s numState) onStep(b *numBounds) bool {
	if b.stepA == 0 {
		return true
	}
	r := s.rem
	for range b.stepF - s.fd {
		r = r * 10 % b.stepA
	}
	return r == 0
}

// branch returns the bounds on the magnitude of a number of sign neg
// (ok false: no number of that sign is within the bounds).
func (b *numBounds) branch(neg bool) (bs []bound, ok bool) {
	// A bound on the value v of the other sign than the branch, or 0:
	// trivially met, met only by 0, or never met.
	if !neg {
		// v = m ≥ 0.
		if b.hasLo {
			switch {
			case !b.loNeg && !b.loZero:
				bs = append(bs, bound{b.lo[0], b.lo[1], atLeast(b.loExcl)})
			case b.loZero && b.loExcl:
				bs = append(bs, bound{"", "", 2}) // m > 0
			}
		}
		if b.hasHi {
			switch {
			case b.hiNeg && !b.hiZero:
				return nil, false
			case b.hiZero && b.hiExcl:
				return nil, false
			default:
				bs = append(bs, bound{b.hi[0], b.hi[1], atMost(b.hiExcl)})
			}
		}
		return bs, true
	}
	// v = −m ≤ 0: v ≥ lo ⇔ m ≤ −lo; v ≤ hi ⇔ m ≥ −hi.
	if b.hasLo {
		switch {
		case !b.loNeg && !b.loZero:
			return nil, false
		case b.loZero && b.loExcl:
			return nil, false
		default:
			bs = append(bs, bound{b.lo[0], b.lo[1], atMost(b.loExcl)})
		}
	}
	if b.hasHi {
		switch {
		case b.hiNeg && !b.hiZero:
			bs = append(bs, bound{b.hi[0], b.hi[1], atLeast(b.hiExcl)})
		case b.hiZero && b.hiExcl:
			bs = append(bs, bound{"", "", 2}) // m > 0
		}
	}
	return bs, true
}

// atLeast is the relation m ≥ d (m > d, exclusive); atMost m ≤ d (m < d).
func atLeast(exclusive bool) int8 {
	if exclusive {
		return 2
	}
	return 1
}

func atMost(exclusive bool) int8 {
	if exclusive {
		return -2
	}
	return -1
}

// compileNumRange builds the automaton of the numbers within b.
func compileNumRange(b *numBounds) (*pattern, error) {
	branches := map[bool][]bound{}
	possible := map[bool]bool{}
	for _, neg := range []bool{false, true} {
		branches[neg], possible[neg] = b.branch(neg)
	}
	p, ok := explore("bounds", numState{}, func(s numState, c byte) (numState, bool) {
		return numStep(s, c, branches, possible, b)
	}, func(s numState) bool { return numFinal(s, branches[s.neg]) && s.onStep(b) })
	if !ok {
		return nil, fmt.Errorf("the bounds and step need more than %d automaton states", maxPatternStates)
	}
	if !p.trim() {
		if b.stepA > 0 {
			return nil, fmt.Errorf("no number within the bounds is a multiple of the step")
		}
		return nil, fmt.Errorf("no number lies within the bounds")
	}
	return p, nil
}

// numStep reads byte c of a bounded number.
func numStep(s numState, c byte, branches map[bool][]bound, possible map[bool]bool, b *numBounds) (numState, bool) {
	digit := c >= '0' && c <= '9'
	bs := branches[s.neg]
	switch s.phase {
	case numStart:
		if c == '-' {
			s.neg, s.phase = true, numMinus
			return s, possible[true]
		}
		if !digit || !possible[false] {
			return s, false
		}
		fallthrough
	case numMinus:
		if !digit {
			return s, false
		}
		s.phase = numInt
		if c == '0' {
			s.phase = numZero
			return s, true // 0 adds nothing to the integer part
		}
		return s.intDigit(c, branches[s.neg]).stepDigit(c, b), true
	case numInt:
		if digit {
			return s.intDigit(c, bs).stepDigit(c, b), true
		}
		fallthrough
	case numZero:
		if c != '.' || b.integer {
			return s, false
		}
		for k := range bs {
			s.cmp[k] = s.cmp[k].endInt(bs[k])
		}
		s.phase = numDot
		return s, true
	case numDot, numFrac:
		if !digit {
			return s, false
		}
		s.phase = numFrac
		for k := range bs {
			s.cmp[k] = s.cmp[k].fracDigit(c, bs[k])
		}
		if b.stepA > 0 {
			if s.fd == b.stepF {
				return s, c == '0' // finer than the step: only zeros
			}
			s.fd++
			s = s.stepDigit(c, b)
		}
		return s, true
	}
	return s, false
}

func (s numState) intDigit(c byte, bs []bound) numState {
	for k, b := range bs {
		cs := &s.cmp[k]
		if int(cs.n) < len(b.intDigits) && cs.cmp == 0 {
			cs.cmp = sign(int(c) - int(b.intDigits[cs.n]))
		}
		cs.n = min(cs.n+1, int16(len(b.intDigits))+1)
	}
	return s
}

// endInt settles the integer part's comparison: by length, then by the
// digits; equal integer parts go on to the fractions.
func (cs cmpState) endInt(b bound) cmpState {
	switch {
	case int(cs.n) < len(b.intDigits):
		cs.cmp = -1
	case int(cs.n) > len(b.intDigits):
		cs.cmp = 1
	}
	return cmpState{frac: true, cmp: cs.cmp}
}

func (cs cmpState) fracDigit(c byte, b bound) cmpState {
	if cs.cmp != 0 {
		return cs
	}
	d := byte('0')
	if int(cs.n) < len(b.fracDigits) {
		d = b.fracDigits[cs.n]
	}
	cs.cmp = sign(int(c) - int(d))
	cs.n = min(cs.n+1, int16(len(b.fracDigits)))
	return cs
}

// result is how the whole magnitude compares with the bound.
func (cs cmpState) result(b bound) int8 {
	if !cs.frac {
		cs = cs.endInt(b)
	}
	if cs.cmp == 0 && int(cs.n) < len(b.fracDigits) {
		return -1 // the bound's fraction goes on (its last digit is not 0)
	}
	return cs.cmp
}

// numFinal reports whether a number may end in state s.
func numFinal(s numState, bs []bound) bool {
	if s.phase != numInt && s.phase != numZero && s.phase != numFrac {
		return false
	}
	for k, b := range bs {
		r := s.cmp[k].result(b)
		switch b.rel {
		case -2:
			if r >= 0 {
				return false
			}
		case -1:
			if r > 0 {
				return false
			}
		case 1:
			if r < 0 {
				return false
			}
		case 2:
			if r <= 0 {
				return false
			}
		}
	}
	return true
}

func sign(x int) int8 {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

// trim removes the transitions into states from which no accepted end
// can be reached; false if the start is one of them.
func (p *pattern) trim() bool {
	live := make([]bool, len(p.next))
	copy(live, p.final)
	for changed := true; changed; {
		changed = false
		for s := range p.next {
			if live[s] {
				continue
			}
			for _, n := range p.next[s] {
				if n >= 0 && live[n] {
					live[s], changed = true, true
					break
				}
			}
		}
	}
	for s := range p.next {
		for c, n := range p.next[s] {
			if n >= 0 && !live[n] {
				p.next[s][c] = -1
			}
		}
	}
	return live[0]
}
