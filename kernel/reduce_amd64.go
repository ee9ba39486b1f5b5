//go:build amd64 && !purego

package kernel

//go:noescape
func maxLanesAVX2(n int, x *float32, lanes *[8]float32)

//go:noescape
func sumLanesAVX2(n int, x *float32, lanes *[8]float64)

//go:noescape
func scaleF32AVX2(n int, x *float32, s float32)

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
