//go:build windows

package store

import (
	"syscall"
	"unsafe"
)

var getDiskFreeSpaceEx = syscall.NewLazyDLL("kernel32.dll").NewProc("GetDiskFreeSpaceExW")

// freeBytes returns the bytes available to this user on dir's volume
// (GetDiskFreeSpaceExW's lpFreeBytesAvailableToCaller, which honours
// quotas).
func freeBytes(dir string) (int64, bool) {
	p, err := syscall.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false
	}
	var avail uint64
	if r, _, _ := getDiskFreeSpaceEx.Call(uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&avail)), 0, 0); r == 0 {
		return 0, false
	}
	return int64(avail), true
}

func diskError(err error) error { return err }
