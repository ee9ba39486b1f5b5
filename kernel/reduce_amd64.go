//go:build amd64 && !purego

package kernel

//go:noescape
func maxLanesAVX2(n int, x *float32, lanes *[8]float32)

//go:noescape
func sumLanesAVX2(n int, x *float32, lanes *[8]float64)

//go:noescape
func scaleF32AVX2(n int, x *float32, s float32)

//go:noescape
func sumSqLanesAVX2(n int, x *float32, lanes *[8]float64)

//go:noescape
func scaleMulF32AVX2(n int, out, x, w *float32, s float32)

//go:noescape
func addF32AVX2(n int, out, a, b *float32)

// fastReduce selects the AVX2 loops (set in impl_amd64.go's init).
var fastReduce bool

func maxLanes(x []float32, lanes *[8]float32) {
	if fastReduce {
		maxLanesAVX2(len(x), &x[0], lanes)
		return
	}
	maxLanesGeneric(x, lanes)
}

func sumLanes(x []float32, lanes *[8]float64) {
	if fastReduce {
		sumLanesAVX2(len(x), &x[0], lanes)
		return
	}
	sumLanesGeneric(x, lanes)
}

func scaleF32(x []float32, s float32) {
	if fastReduce {
		scaleF32AVX2(len(x), &x[0], s)
		return
	}
	scaleF32Generic(x, s)
}

func sumSqLanes(x []float32, lanes *[8]float64) {
	if fastReduce {
		sumSqLanesAVX2(len(x), &x[0], lanes)
		return
	}
	sumSqLanesGeneric(x, lanes)
}

func scaleMulF32(out, x, w []float32, s float32) {
	if fastReduce {
		scaleMulF32AVX2(len(x), &out[0], &x[0], &w[0], s)
		return
	}
	scaleMulF32Generic(out, x, w, s)
}

func addF32(out, a, b []float32) {
	if fastReduce {
		addF32AVX2(len(out), &out[0], &a[0], &b[0])
		return
	}
	addF32Generic(out, a, b)
}
