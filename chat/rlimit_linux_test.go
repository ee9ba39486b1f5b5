package chat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

const canLimitMemory = true

// limitMemory caps the process's address space at what it maps now plus
// extra bytes, so that allocating far beyond fails with "out of memory".
func limitMemory(extra uint64) error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	var vm uint64
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmSize:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return fmt.Errorf("VmSize %q: %v", line, err)
			}
			vm = kb << 10
		}
	}
	if vm == 0 {
		return fmt.Errorf("no VmSize in /proc/self/status")
	}
	lim := &syscall.Rlimit{Cur: vm + extra, Max: vm + extra}
	return syscall.Setrlimit(syscall.RLIMIT_AS, lim)
}
