package conv

// Runner runs parallel loops: fn is called on disjoint chunks covering
// [0,n). *compute.Pool satisfies it; nil runs serially.
type Runner interface {
	For(n int, fn func(lo, hi int))
}

func parallel(r Runner, n int, fn func(lo, hi int)) {
	if r == nil {
		fn(0, n)
		return
	}
	r.For(n, fn)
}
