package mmap

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestLazy checks that Lazy's memory is zeroed, writable, and committed
// only where it was written (mincore(2) counts the resident pages).
func TestLazy(t *testing.T) {
	const size = 1<<20 + 123
	b, release, err := Lazy(size)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size {
		t.Fatalf("len %d, want %d", len(b), size)
	}
	page := os.Getpagesize()
	if got := resident(t, b, page); got != 0 {
		t.Errorf("%d pages resident before any write, want 0", got)
	}
	// (A read maps the shared zero page, which mincore counts: read only
	// what is written next.)
	if b[0] != 0 || b[size/2] != 0 {
		t.Fatal("memory is not zeroed")
	}
	b[0], b[size/2] = 1, 2
	if thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); !strings.Contains(string(thp), "[always]") {
		if got := resident(t, b, page); got != 2 {
			t.Errorf("%d pages resident after writes to 2, want 2", got)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if b, _, err := Lazy(0); err != nil || b != nil {
		t.Fatalf("Lazy(0) = %d bytes, %v; want none and no error", len(b), err)
	}
}

// resident counts b's resident pages (b starts on a page boundary).
func resident(t *testing.T, b []byte, page int) int {
	t.Helper()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
