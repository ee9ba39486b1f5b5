//go:build amd64 && !purego

package kernel

import (
	"os"
	"strings"
	"testing"
)

// TestCPUFeatures cross-checks our CPUID reading with the kernel's view in
// /proc/cpuinfo where it exists.
func TestCPUFeatures(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	var flags map[string]bool
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = map[string]bool{}
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	for name, got := range map[string]bool{"avx2": x86.avx2, "fma": x86.fma, "f16c": x86.f16c,
		"avx512f": x86.avx512f, "avx512bw": x86.avx512bw, "avx512vl": x86.avx512vl, "avx512_vnni": x86.avx512vnni} {
		if got != flags[name] {
			t.Errorf("%s: CPUID says %v, /proc/cpuinfo says %v", name, got, flags[name])
		}
	}
}
