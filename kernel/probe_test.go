package kernel

import (
	"math/rand/v2"
	"testing"
)

func TestStreamRead(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{0, 1, 31, 255, 256, 257, 4096 + 77} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		// Both versions XOR all 8-byte words of the 32-byte-aligned prefix
		// and then the tail's bytes, so they must agree exactly.
		if got, want := StreamRead(b), streamReadGeneric(b); got != want {
			t.Fatalf("n=%d: StreamRead %#x, generic %#x", n, got, want)
		}
	}
}

func TestPeakKernelsRun(t *testing.T) {
	for _, k := range []func() (func(int), int64, string){PeakInt8, PeakF32} {
		run, ops, name := k()
		if ops <= 0 || name == "" {
			t.Fatalf("%s: %d ops per iteration", name, ops)
		}
		run(1000)
		run(0)
	}
	// The bf16 loop exists only where the CPU has AVX-512 BF16.
	if run, ops, name := PeakBF16(); run != nil {
		if ops <= 0 || name == "" {
			t.Fatalf("%s: %d ops per iteration", name, ops)
		}
		run(1000)
		run(0)
	} else if ops != 0 || name != "" {
		t.Fatalf("no bf16 loop, but %d ops and name %q", ops, name)
	}
}
