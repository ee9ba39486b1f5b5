package kernel

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/glassbox-ai/glassbox/tensor"
)

// codec is one block format's pair of reference functions over a single
// block: dequant reads TypeSize bytes and writes BlockSize floats, quant
// the reverse.
type codec struct {
	dequant func(b []byte, y []float32)
	quant   func(x []float32, b []byte)
}

var codecs = map[tensor.DType]codec{
	tensor.Q4_0:   {dequantQ4_0, quantQ4_0},
	tensor.Q4_1:   {dequantQ4_1, quantQ4_1},
	tensor.Q5_0:   {dequantQ5_0, quantQ5_0},
	tensor.Q5_1:   {dequantQ5_1, quantQ5_1},
	tensor.Q8_0:   {dequantQ8_0, quantQ8_0},
	tensor.Q8_1:   {dequantQ8_1, quantQ8_1},
	tensor.Q2_K:   {dequantQ2K, quantQ2K},
	tensor.Q3_K:   {dequantQ3K, quantQ3K},
	tensor.Q4_K:   {dequantQ4K, quantQ4K},
	tensor.Q5_K:   {dequantQ5K, quantQ5K},
	tensor.Q6_K:   {dequantQ6K, quantQ6K},
	tensor.Q8_K:   {dequantQ8K, quantQ8K},
	tensor.IQ4_NL: {dequantIQ4NL, quantIQ4NL},
	tensor.IQ4_XS: {dequantIQ4XS, quantIQ4XS},
	tensor.MXFP4:  {dequantMXFP4, quantMXFP4},
}

// Supported reports whether this package can dequantize and quantize dt.
func Supported(dt tensor.DType) bool {
	switch dt {
	case tensor.F32, tensor.F16, tensor.BF16:
		return true
	}
	_, ok := codecs[dt]
	return ok
}

// SupportedTypes lists the dtypes Supported accepts, in numeric order.
func SupportedTypes() []tensor.DType {
	var out []tensor.DType
	for _, t := range tensor.DTypes() {
		if Supported(t) {
			out = append(out, t)
		}
	}
	return out
}

// checkSizes validates that n elements of dt occupy exactly nb bytes.
func checkSizes(op string, dt tensor.DType, n, nb int) error {
	if !Supported(dt) {
		return fmt.Errorf("kernel: %s: unsupported type %s", op, dt)
	}
	want, err := dt.RowBytes(int64(n))
	if err != nil {
		return fmt.Errorf("kernel: %s: %w", op, err)
	}
	if int64(nb) != want {
		return fmt.Errorf("kernel: %s %s: %d elements need %d bytes, got %d", op, dt, n, want, nb)
	}
	return nil
}

// Dequantize decodes len(dst) elements of type dt from src, which must hold
// exactly their bytes. It is bit-exact with ggml's dequantize_row_*.
func Dequantize(dt tensor.DType, src []byte, dst []float32) error {
	if err := checkSizes("dequantize", dt, len(dst), len(src)); err != nil {
		return err
	}
	switch dt {
	case tensor.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return nil
	case tensor.F16:
		FP16sToFP32(dst, src)
		return nil
	case tensor.BF16:
		for i := range dst {
			dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return nil
	}
	c := codecs[dt]
	bs, ts := dt.BlockSize(), dt.TypeSize()
	for i := 0; i < len(dst)/bs; i++ {
		c.dequant(src[i*ts:(i+1)*ts], dst[i*bs:(i+1)*bs])
	}
	return nil
}

// Quantize encodes src as type dt into dst, which must have exactly the
// bytes len(src) elements occupy (see tensor.DType.RowBytes).
func Quantize(dt tensor.DType, src []float32, dst []byte) error {
	if err := checkSizes("quantize", dt, len(src), len(dst)); err != nil {
		return err
	}
	switch dt {
	case tensor.F32:
		for i, f := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
		}
		return nil
	case tensor.F16:
		FP32sToFP16(dst, src)
		return nil
	case tensor.BF16:
		for i, f := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(f))
		}
		return nil
	}
	if dt == tensor.Q8_0 {
		quantRowQ8_0(src, dst)
		return nil
	}
	c := codecs[dt]
	bs, ts := dt.BlockSize(), dt.TypeSize()
	for i := 0; i < len(src)/bs; i++ {
		c.quant(src[i*bs:(i+1)*bs], dst[i*ts:(i+1)*ts])
	}
	return nil
}

// quantRowQ8_0 quantizes whole Q8_0 rows (the activations of most dot
// products); impl_amd64.go replaces it with an AVX2 version.
var quantRowQ8_0 = quantRowQ8_0Generic

func quantRowQ8_0Generic(x []float32, b []byte) {
	for i := 0; i < len(x)/qk; i++ {
		quantQ8_0(x[i*qk:(i+1)*qk], b[i*34:(i+1)*34])
	}
}
