package chat

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// The operators of a bounded template. Each does what the engine's
// evaluator does for the operator (github.com/ardanlabs/jinja v1.8.0,
// eval.go: addValues, mulValues, valuesEqual, compareValues, containsValue,
// evalItem, evalSlice, …), result for result, after checking the size of
// the result against the limits; TestOperatorsAgree compares the two on
// many operands.

var undef = jinja.Undefined()

// binary wraps an operator of two operands.
func binary(op func(m *meter, line int, a, b jinja.Value) (jinja.Value, error)) guardFunc {
	return func(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 2 {
			return undef, m.fail(fmt.Errorf("line %d: operator with %d operands", line, len(args)))
		}
		return op(m, line, args[0], args[1])
	}
}

// chain wraps an operator of two or more operands applied left to right
// (a + b + c is (a + b) + c): operands that are all strings are joined in
// one allocation.
func chain(op func(m *meter, line int, a, b jinja.Value) (jinja.Value, error)) guardFunc {
	return func(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) < 2 {
			return undef, m.fail(fmt.Errorf("line %d: operator with %d operands", line, len(args)))
		}
		n := 0
		for _, a := range args {
			if !a.IsString() {
				n = -1
				break
			}
			n += len(a.AsString())
		}
		if n >= 0 {
			if err := m.str(line, "+", int64(n)); err != nil {
				return undef, err
			}
			var b strings.Builder
			b.Grow(n)
			for _, a := range args {
				b.WriteString(a.AsString())
			}
			return jinja.NewString(b.String()), nil
		}
		v := args[0]
		for _, a := range args[1:] {
			var err error
			if v, err = op(m, line, v, a); err != nil {
				return undef, err
			}
		}
		return v, nil
	}
}

// concat is a ~ b, and a + b when either is a string.
func concat(m *meter, line int, op string, a, b jinja.Value) (jinja.Value, error) {
	na, err := m.printed(line, a, op)
	if err != nil {
		return undef, err
	}
	nb, err := m.printed(line, b, op)
	if err != nil {
		return undef, err
	}
	if err := m.str(line, op, na+nb); err != nil {
		return undef, err
	}
	return jinja.NewString(text(a) + text(b)), nil
}

func opCat(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	return concat(m, line, "~", a, b)
}

func opAdd(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	switch {
	case a.IsString() || b.IsString():
		return concat(m, line, "+", a, b)
	case a.IsList() && b.IsList():
		x, y := a.AsList().Items, b.AsList().Items
		if err := m.items(line, "+", int64(len(x))+int64(len(y))); err != nil {
			return undef, err
		}
		items := make([]jinja.Value, 0, len(x)+len(y))
		return jinja.NewList(append(append(items, x...), y...)), nil
	case a.IsFloat() || b.IsFloat():
		return jinja.NewFloat(toFloat(a) + toFloat(b)), m.scanNum(line, a, b)
	}
	return jinja.NewInt(toInt(a) + toInt(b)), m.scanNum(line, a, b)
}

func opSub(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	if a.IsFloat() || b.IsFloat() {
		return jinja.NewFloat(toFloat(a) - toFloat(b)), m.scanNum(line, a, b)
	}
	return jinja.NewInt(toInt(a) - toInt(b)), m.scanNum(line, a, b)
}

func opMul(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	switch {
	case a.IsString() && b.IsInt():
		s, n := a.AsString(), b.AsInt()
		if n < 0 {
			return undef, m.fail(fmt.Errorf("line %d: a string repeated %d times", line, n))
		}
		if len(s) > 0 && n > m.lim.MaxValue/int64(len(s)) {
			return undef, m.limit(line, "MaxValue", "* would build a string of", int64(len(s))*min(n, math.MaxInt64/int64(len(s))), m.lim.MaxValue, "bytes")
		}
		if err := m.str(line, "*", int64(len(s))*n); err != nil {
			return undef, err
		}
		return jinja.NewString(strings.Repeat(s, int(n))), nil
	case a.IsFloat() || b.IsFloat():
		return jinja.NewFloat(toFloat(a) * toFloat(b)), m.scanNum(line, a, b)
	}
	return jinja.NewInt(toInt(a) * toInt(b)), m.scanNum(line, a, b)
}

func opDiv(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	if err := m.scanNum(line, a, b); err != nil {
		return undef, err
	}
	d := toFloat(b)
	if d == 0 {
		return jinja.NewFloat(0), nil
	}
	return jinja.NewFloat(toFloat(a) / d), nil
}

// intOp is an operator on the operands as integers (// and %): 0 when
// dividing by 0.
func intOp(op func(a, b int64) int64) func(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	return func(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
		if err := m.scanNum(line, a, b); err != nil {
			return undef, err
		}
		d := toInt(b)
		if d == 0 {
			return jinja.NewInt(0), nil
		}
		return jinja.NewInt(op(toInt(a), d)), nil
	}
}

var (
	opFloorDiv = intOp(func(a, b int64) int64 { return a / b })
	opMod      = intOp(func(a, b int64) int64 { return a % b })
)

func opPow(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	return jinja.NewFloat(math.Pow(toFloat(a), toFloat(b))), m.scanNum(line, a, b)
}

// equal is the engine's ==: numbers by value across int and float, None
// equal to None, anything else by Value.Equals (which walks lists and
// dicts: both are measured first).
func equal(m *meter, line int, a, b jinja.Value) (bool, error) {
	if a.IsNumber() && b.IsNumber() {
		return toFloat(a) == toFloat(b), nil
	}
	if a.IsNone() && b.IsNone() {
		return true, nil
	}
	if err := m.measure(line, a, "=="); err != nil {
		return false, err
	}
	if err := m.measure(line, b, "=="); err != nil {
		return false, err
	}
	return a.Equals(b), nil
}

func opEq(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	eq, err := equal(m, line, a, b)
	return jinja.NewBool(eq), err
}

func opNe(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	eq, err := equal(m, line, a, b)
	return jinja.NewBool(!eq), err
}

// compare is the engine's ordering: by number (strings read as numbers,
// 0 if they are not), then strings by bytes.
func compare(m *meter, line int, a, b jinja.Value) (int, error) {
	if err := m.scanNum(line, a, b); err != nil {
		return 0, err
	}
	x, y := toFloat(a), toFloat(b)
	switch {
	case x < y:
		return -1, nil
	case x > y:
		return 1, nil
	case a.IsString() && b.IsString():
		return strings.Compare(a.AsString(), b.AsString()), nil
	}
	return 0, nil
}

func ordering(test func(int) bool) func(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	return func(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
		c, err := compare(m, line, a, b)
		return jinja.NewBool(test(c)), err
	}
}

// contains is the engine's "item in container".
func contains(m *meter, line int, item, container jinja.Value) (bool, error) {
	switch {
	case container.IsList():
		if err := m.measure(line, container, "in"); err != nil {
			return false, err
		}
		if err := m.measure(line, item, "in"); err != nil {
			return false, err
		}
		for _, v := range container.AsList().Items {
			if v.Equals(item) {
				return true, nil
			}
		}
		return false, nil
	case container.IsDict() && item.IsString():
		return container.AsDict().Has(item.AsString()), m.scan(line, len(item.AsString())) // hashed
	case container.IsString() && item.IsString():
		return strings.Contains(container.AsString(), item.AsString()), m.scan(line, len(container.AsString()))
	}
	return false, nil
}

func opIn(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	in, err := contains(m, line, a, b)
	return jinja.NewBool(in), err
}

func opNotIn(m *meter, line int, a, b jinja.Value) (jinja.Value, error) {
	in, err := contains(m, line, a, b)
	return jinja.NewBool(!in), err
}

func unary(op func(m *meter, line int, x jinja.Value) (jinja.Value, error)) guardFunc {
	return func(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return undef, m.fail(fmt.Errorf("line %d: unary operator with %d operands", line, len(args)))
		}
		return op(m, line, args[0])
	}
}

func opNeg(_ *meter, _ int, x jinja.Value) (jinja.Value, error) {
	switch {
	case x.IsInt():
		return jinja.NewInt(-x.AsInt()), nil
	case x.IsFloat():
		return jinja.NewFloat(-x.AsFloat()), nil
	}
	return jinja.NewInt(0), nil
}

func opPos(_ *meter, _ int, x jinja.Value) (jinja.Value, error) { return x, nil }

// guardItem is obj[k1][k2]…, each subscript as opItem.
func guardItem(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 {
		return undef, m.fail(fmt.Errorf("line %d: malformed subscript", line))
	}
	v := args[0]
	for _, k := range args[1:] {
		var err error
		if v, err = opItem(m, line, v, k); err != nil {
			return undef, err
		}
	}
	return v, nil
}

// opItem is obj[key]: a list by position (negative from the end), a dict
// by the printed key, a string by character; Undefined when missing.
func opItem(m *meter, line int, obj, key jinja.Value) (jinja.Value, error) {
	switch {
	case obj.IsList():
		if err := m.scanNum(line, key); err != nil {
			return undef, err
		}
		items := obj.AsList().Items
		i := int(toInt(key))
		if i < 0 {
			i += len(items)
		}
		if i < 0 || i >= len(items) {
			return undef, nil
		}
		return items[i], nil
	case obj.IsDict():
		k, err := m.textOf(line, key, "[]")
		if err != nil {
			return undef, err
		}
		if v, ok := obj.AsDict().Get(k); ok {
			return v, nil
		}
		return undef, nil
	case obj.IsString():
		s := obj.AsString()
		if err := m.scan(line, len(s)); err != nil {
			return undef, err
		}
		if err := m.scanNum(line, key); err != nil {
			return undef, err
		}
		i := int(toInt(key))
		if i < 0 {
			i += int(runeCount(s))
		}
		if i < 0 {
			return undef, nil
		}
		for _, r := range s {
			if i == 0 {
				return jinja.NewString(string(r)), nil
			}
			i--
		}
	}
	return undef, nil
}

// guardSlice is obj[start:stop:step] with the parts present in mask (bits
// 1, 2, 4): the engine's slicing, with the bounds evaluated as arguments.
func guardSlice(m *meter, line int, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 2 || !args[0].IsInt() {
		return undef, m.fail(fmt.Errorf("line %d: malformed slice", line))
	}
	mask, obj, parts := args[0].AsInt(), args[1], args[2:]
	var bound [3]*jinja.Value
	for i := range bound {
		if mask&(1<<i) != 0 {
			if len(parts) == 0 {
				return undef, m.fail(fmt.Errorf("line %d: malformed slice", line))
			}
			bound[i], parts = &parts[0], parts[1:]
		}
	}
	for _, b := range bound {
		if b != nil {
			if err := m.scanNum(line, *b); err != nil {
				return undef, err
			}
		}
	}
	switch {
	case obj.IsList():
		items := obj.AsList().Items
		r := sliceOf(len(items), bound)
		if err := m.items(line, "[:]", int64(r.count)); err != nil {
			return undef, err
		}
		out := make([]jinja.Value, r.count)
		for k := range out {
			out[k] = items[r.at(k)]
		}
		return jinja.NewList(out), nil
	case obj.IsString():
		s := obj.AsString()
		if isASCII(s) {
			r := sliceOf(len(s), bound)
			if r.step == 1 || r.count <= 1 { // a substring
				return jinja.NewString(s[r.first : r.first+r.count]), m.scan(line, len(s))
			}
			if err := m.str(line, "[:]", int64(r.count)); err != nil {
				return undef, err
			}
			b := make([]byte, r.count)
			for k := range b {
				b[k] = s[r.at(k)]
			}
			return jinja.NewString(string(b)), nil
		}
		if err := m.build(line, "[:]", 4*int64(len(s))); err != nil { // as runes
			return undef, err
		}
		runes := []rune(s)
		r := sliceOf(len(runes), bound)
		if err := m.build(line, "[:]", 8*int64(r.count)); err != nil { // as runes, and back
			return undef, err
		}
		out := make([]rune, r.count)
		for k := range out {
			out[k] = runes[r.at(k)]
		}
		return m.result(line, "[:]", string(out))
	}
	return undef, nil
}

// span is the positions a slice takes: count of them, from first, step apart.
type span struct{ first, count, step int }

func (r span) at(k int) int { return r.first + k*r.step }

// sliceOf is the positions x[start:stop:step] takes from a sequence of n,
// as the engine's resolveSlice and evalSlice choose them: a step of 0 is
// 1; missing bounds are the ends in the step's direction; negative bounds
// count from the end once; positions outside [0, n) are skipped. It is
// computed, not walked, so x[0:10**18:2] costs what x costs.
func sliceOf(n int, b [3]*jinja.Value) span {
	step := int64(1)
	if b[2] != nil {
		if step = toInt(*b[2]); step == 0 {
			step = 1
		}
	}
	size := int64(n)
	start, stop := int64(0), size
	if step < 0 {
		start, stop = size-1, -size-1
	}
	if b[0] != nil {
		if start = toInt(*b[0]); start < 0 {
			start += size
		}
	}
	if b[1] != nil {
		if stop = toInt(*b[1]); stop < 0 {
			stop += size
		}
	}
	if n == 0 {
		return span{step: 1}
	}
	if step > 0 {
		stop = min(stop, size)
		if start < 0 { // the first position ≥ 0 of start's residue class
			start = alignUp(start, step)
		}
		if start >= stop {
			return span{step: 1}
		}
		return span{int(start), int((uint64(stop-start)-1)/uint64(step) + 1), int(min(step, size))}
	}
	stop = max(stop, -1)
	back := uint64(-(step + 1)) + 1 // -step, also for the most negative step
	if start >= size {              // the last position < n of start's residue class
		start = size - 1 - alignUpU(uint64(start-(size-1)), back)
	}
	if start <= stop {
		return span{step: 1}
	}
	count := (uint64(start-stop)-1)/back + 1
	if count == 1 {
		return span{int(start), 1, 1}
	}
	return span{int(start), int(count), int(step)}
}

// alignUpU is the distance from d up to the next multiple of m: (-d) mod m.
func alignUpU(d, m uint64) int64 { return int64((m - d%m) % m) }

// alignUp returns the least x ≥ 0 with x ≡ v (mod m), for m > 0.
func alignUp(v, m int64) int64 {
	r := new(big.Int).Mod(big.NewInt(v), big.NewInt(m)) // in [0, m)
	return r.Int64()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
