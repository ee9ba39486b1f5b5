package plan

import (
	"fmt"
	"syscall"
	"unsafe"
)

// memoryStatusEx is Win32's MEMORYSTATUSEX.
type memoryStatusEx struct {
	length               uint32
	memoryLoad           uint32
	totalPhys            uint64
	availPhys            uint64
	totalPageFile        uint64
	availPageFile        uint64
	totalVirtual         uint64
	availVirtual         uint64
	availExtendedVirtual uint64
}

// osMemory calls GlobalMemoryStatusEx (total and available physical memory).
func osMemory() (total, avail int64, source string, err error) {
	proc := syscall.NewLazyDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")
	var m memoryStatusEx
	m.length = uint32(unsafe.Sizeof(m))
	if r, _, e := proc.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return 0, 0, "", fmt.Errorf("GlobalMemoryStatusEx: %v", e)
	}
	return int64(m.totalPhys), int64(m.availPhys), "GlobalMemoryStatusEx", nil
}
