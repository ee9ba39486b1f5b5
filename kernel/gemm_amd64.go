//go:build amd64 && !purego

package kernel

import "github.com/glassbox-ai/glassbox/tensor"

//go:noescape
func gemmVNNI(units int, w, a *byte, tile *[gemmRows * gemmActs]float32)

//go:noescape
func gemmK4VNNI(units int, w, a *byte, tile *[gemmRows * gemmActs]float32)

//go:noescape
func gemmK6VNNI(units int, w, a *byte, tile *[gemmRows * gemmActs]float32)

// hasVNNI is AVX-512 F/BW/VL with VNNI, what the GEMM kernels use.
var hasVNNI = x86.avx512f && x86.avx512bw && x86.avx512vl && x86.avx512vnni

// gemmAsm returns the assembly GEMM kernel for wt.
func gemmAsm(wt tensor.DType) Gemm {
	k := gemmVNNI
	switch wt {
	case tensor.Q4_K, tensor.Q5_K: // same record layout (levels, scale, min)
		k = gemmK4VNNI
	case tensor.Q6_K, tensor.Q3_K: // units of 16 with an integer offset
		k = gemmK6VNNI
	}
	return func(w *WPack, a *APack, panel int, tile *[gemmRows * gemmActs]float32) {
		l := checkGemm(w, a, panel)
		k(w.Units, &w.Data[0], &a.Data[panel*w.Units*l.aRec], tile)
	}
}

//go:noescape
func packQ8_0Gather(blocks int, w *byte, idx *[16]int32, dst *byte)

//go:noescape
func packQ4_0Gather(blocks int, w *byte, idx *[16]int32, dst *byte)

//go:noescape
func packQ4KGather(blocks int, w *byte, idx *[16]int32, dst *byte)

// packAsm repacks Q8_0, Q4_0 and Q4_K with AVX-512 gathers (one 16-row
// gather per 4 columns); Pack has validated the sizes.
func packAsm(p *WPack, w []byte, rowBytes, r0 int) bool {
	if !hasVNNI || noAsm() || rowBytes*gemmRows > 1<<31-1 {
		return false
	}
	switch p.Type {
	case tensor.Q8_0, tensor.Q4_0, tensor.Q4_K:
	default:
		return false
	}
	var idx [16]int32
	for r := range idx {
		idx[r] = int32(r * rowBytes)
	}
	base := &w[r0*rowBytes]
	switch p.Type {
	case tensor.Q8_0:
		packQ8_0Gather(p.Units, base, &idx, &p.Data[0])
	case tensor.Q4_0:
		packQ4_0Gather(p.Units, base, &idx, &p.Data[0])
	case tensor.Q4_K:
		packQ4KGather(p.Units/8, base, &idx, &p.Data[0])
		p.packScalesK(w, rowBytes, r0)
	}
	return true
}
