package rng

import (
	"fmt"
	"strings"
)

// Source is a generator of standard-normal noise with sd.cpp's RNG
// semantics (src/core/rng.hpp: RNG::manual_seed, RNG::randn).
type Source interface {
	// Seed resets the generator to seed, as torch.manual_seed does: the
	// next Randn is call 0 of that seed.
	Seed(seed uint64)
	// Randn fills dst with the next call's len(dst) values.
	Randn(dst []float32)
}

// Names are the generator names New accepts, as sd.cpp's --rng spells them.
var Names = []string{"cuda", "cpu"}

// New returns the generator sd.cpp calls name, seeded with seed: "cuda"
// (Philox, sd.cpp's default) or "cpu" (torch's CPU generator with the AVX2
// kernel torch uses on x86-64). sd.cpp's third, "std_default"
// (libstdc++'s std::normal_distribution), is not offered.
func New(name string, seed uint64) (Source, error) {
	switch name {
	case "cuda":
		return NewPhilox(seed), nil
	case "cpu":
		return NewTorchCPU(seed, KernelAVX2), nil
	}
	return nil, fmt.Errorf("generate: unknown rng %q (known: %s)", name, strings.Join(Names, ", "))
}
