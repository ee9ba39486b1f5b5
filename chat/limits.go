package chat

import (
	"fmt"
	"math"

	"github.com/ardanlabs/jinja"
)

// Templates come from model files, i.e. from anyone. Jinja has no
// unbounded loops, but range(10**12) would build a list of a trillion
// values and end the process; the wrapper shadows the global range with
// one that refuses lists longer than MaxRange. (Remaining gaps, from the
// engine: recursive macros and huge string repetition are not bounded.)

// MaxRange is the longest list range() may build in a template.
const MaxRange = 1 << 20

var rangeCallable = jinja.NewCallable("range", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var start, stop, step int64 = 0, 0, 1
	ints := make([]int64, len(args))
	for i, a := range args {
		switch {
		case a.IsInt():
			ints[i] = a.AsInt()
		case a.IsFloat() && a.AsFloat() == math.Trunc(a.AsFloat()) && math.Abs(a.AsFloat()) < 1<<62:
			ints[i] = int64(a.AsFloat()) // the engine computes 2**3 as a float; Python has an int
		default:
			return jinja.Undefined(), fmt.Errorf("range: argument %d is %s, not an integer", i+1, a.String())
		}
	}
	switch len(args) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return jinja.Undefined(), fmt.Errorf("range: expected 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range: step must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		n = (start - stop - step - 1) / -step
	}
	if n > MaxRange || n < 0 {
		return jinja.Undefined(), fmt.Errorf("range(%d, %d, %d) has more than %d elements", start, stop, step, MaxRange)
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
})
