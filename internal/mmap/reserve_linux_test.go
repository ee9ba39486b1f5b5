package mmap

import (
	"testing"
	"unsafe"
)

func TestReserve(t *testing.T) {
	const size = 64<<20 + 123
	b, release, err := Reserve(size)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != size || cap(b) != size {
		t.Fatalf("len %d cap %d, want %d", len(b), cap(b), size)
	}
	if a := uintptr(unsafe.Pointer(&b[0])) % hugePage; a != 0 {
		t.Fatalf("start is %d bytes past a 2 MiB boundary", a)
	}
	if b[0] != 0 || b[size-1] != 0 {
		t.Fatal("reserved memory is not zeroed")
	}
	b[0], b[size-1] = 1, 2
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Reserve(0); err == nil {
		t.Fatal("Reserve(0) succeeded")
	}
}
