package compute

import (
	"os"
	"strings"
)

// physicalCores counts distinct (physical id, core id) pairs in
// /proc/cpuinfo; 0 if it cannot tell.
func physicalCores() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	seen := map[string]bool{}
	var phys, core string
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if core != "" {
				seen[phys+"/"+core] = true
			}
			phys, core = "", ""
			continue
		}
		switch strings.TrimSpace(k) {
		case "physical id":
			phys = strings.TrimSpace(v)
		case "core id":
			core = strings.TrimSpace(v)
		}
	}
	if core != "" {
		seen[phys+"/"+core] = true
	}
	return len(seen)
}
