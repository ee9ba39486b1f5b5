package kernel

// AxpyF16 adds a·v to o, where v holds len(o) little-endian halves.
func AxpyF16(o []float32, v []byte, a float32) {
	v = v[:2*len(o)]
	for i := range o {
		o[i] += a * fp16Table[uint16(v[2*i])|uint16(v[2*i+1])<<8]
	}
}
