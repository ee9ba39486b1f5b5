//go:build !darwin && !windows

package plan

import "errors"

// osMemory is the fallback where /proc/meminfo is missing.
func osMemory() (total, avail int64, source string, err error) {
	return 0, 0, "", errors.New("no /proc/meminfo and no other memory source on this platform")
}
