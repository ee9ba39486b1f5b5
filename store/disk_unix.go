//go:build unix

package store

import (
	"errors"
	"fmt"
	"syscall"
)

// freeBytes returns the bytes available to this user on dir's file system.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// diskError names a full disk plainly.
func diskError(err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("disk full: %w", err)
	}
	return err
}
