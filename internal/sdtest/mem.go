package sdtest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// availableMemory reads MemAvailable from /proc/meminfo (Linux).
func availableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
