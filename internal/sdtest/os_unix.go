//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sdtest

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on path (created if missing), waiting
// for other processes that hold it; unlock releases it.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// freeDisk returns the bytes available to this user in dir's file system.
var freeDisk = freeDiskOS

func freeDiskOS(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
