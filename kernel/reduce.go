package kernel

import "math"

// MaxF32 returns the largest of x (-Inf when x is empty), as eight lanes
// (lane j takes x[i] for i%8 == j, keeping m unless v is larger, as
// MAXPS does) folded in a fixed tree, so every tier gives the same bits;
// for inputs without NaN that is the maximum.
func MaxF32(x []float32) float32 {
	lanes := [8]float32{negInf, negInf, negInf, negInf, negInf, negInf, negInf, negInf}
	m := len(x) &^ 7
	if m > 0 {
		maxLanes(x[:m], &lanes)
	}
	for i := m; i < len(x); i++ {
		lanes[i%8] = maxps(lanes[i%8], x[i])
	}
	// The tree of the AVX2 reduction: high half onto low, then pairs.
	for j := range 4 {
		lanes[j] = maxps(lanes[j], lanes[j+4])
	}
	lanes[0], lanes[1] = maxps(lanes[0], lanes[2]), maxps(lanes[1], lanes[3])
	return maxps(lanes[0], lanes[1])
}

// maxps is MAXPS on one lane: m if m > v, else v.
func maxps(m, v float32) float32 {
	if m > v {
		return m
	}
	return v
}

var negInf = float32(math.Inf(-1))

// SumF64 returns the sum of x in float64, as eight lanes (lane j adds
// x[i] for i%8 == j in order) folded as (l0+l4)+(l2+l6) + (l1+l5)+(l3+l7),
// so every tier gives the same bits.
func SumF64(x []float32) float64 { return sum8(x, false) }

// SumSqF64 returns the sum of the squares of x in float64, each square
// taken in float32 and widened as ggml's RMS norm does, in SumF64's eight
// lanes and fold (so every tier gives the same bits; ggml adds them in one
// chain, which can differ in the last bits of the float64 sum).
func SumSqF64(x []float32) float64 { return sum8(x, true) }

// sum8 is SumF64, of the squares when sq.
func sum8(x []float32, sq bool) float64 {
	var lanes [8]float64
	m := len(x) &^ 7
	if m > 0 && sq {
		sumSqLanes(x[:m], &lanes)
	} else if m > 0 {
		sumLanes(x[:m], &lanes)
	}
	for i := m; i < len(x); i++ {
		v := x[i]
		if sq {
			v *= v
		}
		lanes[i%8] += float64(v)
	}
	// The tree of the AVX2 reduction.
	a := [4]float64{lanes[0] + lanes[4], lanes[1] + lanes[5], lanes[2] + lanes[6], lanes[3] + lanes[7]}
	return (a[0] + a[2]) + (a[1] + a[3])
}

// ScaleMulF32 sets out[i] = x[i]·s·w[i] (the product taken left to
// right), over len(x) elements: a normalized row times its weights.
// out may alias x.
func ScaleMulF32(out, x, w []float32, s float32) {
	out, w = out[:len(x)], w[:len(x)]
	m := len(x) &^ 7
	if m > 0 {
		scaleMulF32(out[:m], x[:m], w[:m], s)
	}
	scaleMulF32Generic(out[m:], x[m:], w[m:], s)
}

// AddF32 sets out = a + b element-wise over len(out) elements. out may
// alias a or b.
func AddF32(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	m := len(out) &^ 7
	if m > 0 {
		addF32(out[:m], a[:m], b[:m])
	}
	addF32Generic(out[m:], a[m:], b[m:])
}

// MulF32 sets out = a · b element-wise over len(out) elements. out may
// alias a or b. (No assembly: only GeGLU, behind a scalar GELU, uses it.)
func MulF32(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] * b[i]
	}
}

// ScaleF32 multiplies x by s in place.
func ScaleF32(x []float32, s float32) {
	m := len(x) &^ 7
	if m > 0 {
		scaleF32(x[:m], s)
	}
	for i := m; i < len(x); i++ {
		x[i] *= s
	}
}

// maxLanes, sumLanes, sumSqLanes, scaleF32, scaleMulF32 and addF32
// (reduce_*.go) take a multiple of 8 floats; they are direct calls,
// not function values, so that the lanes stay on the caller's stack.

func maxLanesGeneric(x []float32, lanes *[8]float32) {
	for i := 0; i < len(x); i += 8 {
		for j := range 8 {
			lanes[j] = maxps(lanes[j], x[i+j])
		}
	}
}

func sumLanesGeneric(x []float32, lanes *[8]float64) {
	for i := 0; i < len(x); i += 8 {
		for j := range 8 {
			lanes[j] += float64(x[i+j])
		}
	}
}

func sumSqLanesGeneric(x []float32, lanes *[8]float64) {
	for i := 0; i < len(x); i += 8 {
		for j := range 8 {
			v := x[i+j]
			lanes[j] += float64(v * v)
		}
	}
}

func scaleMulF32Generic(out, x, w []float32, s float32) {
	for i, v := range x {
		out[i] = v * s * w[i]
	}
}

func addF32Generic(out, a, b []float32) {
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

func scaleF32Generic(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
