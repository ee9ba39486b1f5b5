package kernel

// AxpyF16 adds a·v to o, where v holds len(o) little-endian halves.
func AxpyF16(o []float32, v []byte, a float32) {
	v = v[:2*len(o)]
	axpyF16(o, v, a)
}

// axpyF16 is the active implementation (see impl_*.go).
var axpyF16 = axpyF16Generic

func axpyF16Generic(o []float32, v []byte, a float32) {
	for i := range o {
		o[i] += a * fp16Table[uint16(v[2*i])|uint16(v[2*i+1])<<8]
	}
}
