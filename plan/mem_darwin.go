package plan

import (
	"encoding/binary"
	"errors"
	"syscall"
)

// osMemory reads hw.memsize. macOS has no cheap "available" figure (it
// keeps free memory low by design and reclaims file cache on demand), so
// available is estimated as 60% of the total and the source says so.
func osMemory() (total, avail int64, source string, err error) {
	s, err := syscall.Sysctl("hw.memsize")
	if err != nil {
		return 0, 0, "", err
	}
	// Sysctl returns the raw little-endian uint64 with trailing zero bytes
	// trimmed.
	var b [8]byte
	copy(b[:], s)
	total = int64(binary.LittleEndian.Uint64(b[:]))
	if total <= 0 {
		return 0, 0, "", errors.New("sysctl hw.memsize: no value")
	}
	return total, total * 6 / 10, "sysctl hw.memsize (available estimated as 60%)", nil
}
