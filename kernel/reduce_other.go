//go:build !amd64 || purego

package kernel

func maxLanes(x []float32, lanes *[8]float32)    { maxLanesGeneric(x, lanes) }
func sumLanes(x []float32, lanes *[8]float64)    { sumLanesGeneric(x, lanes) }
func scaleF32(x []float32, s float32)            { scaleF32Generic(x, s) }
func sumSqLanes(x []float32, lanes *[8]float64)  { sumSqLanesGeneric(x, lanes) }
func scaleMulF32(out, x, w []float32, s float32) { scaleMulF32Generic(out, x, w, s) }
func addF32(out, a, b []float32)                 { addF32Generic(out, a, b) }
