//go:build amd64 && !purego

package kernel

// IQ4 and MXFP4 dot products (dotiq4_amd64.s); the Go wrappers (qdotAsm) check the
// lengths first.

//go:noescape
func dotIQ4NLQ8_0AVX2(nb int, w, x *byte) float32

//go:noescape
func dotIQ4XSQ8KAVX2(nb int, w, x *byte) float32

//go:noescape
func dotMXFP4Q8_0AVX2(nb int, w, x *byte) float32
