//go:build unix

package journal

import (
	"errors"
	"syscall"
)

// alive reports whether a process with this pid exists (signal 0 probes
// without sending anything; EPERM means it exists but is not ours).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
