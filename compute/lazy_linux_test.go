package compute

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestKVCacheFree checks that a KV cache's memory is mapped outside the
// heap and that Free unmaps it at once (mincore(2) fails with ENOMEM on an
// unmapped range), and that a second Free is harmless.
func TestKVCacheFree(t *testing.T) {
	c := NewKVCache(tensor.F16, 256, 4, 64)
	c.Store(3, make([]float32, 256), make([]float32, 256))
	k, v := c.k, c.v
	if err := mincore(k); err != nil {
		t.Fatalf("keys: mincore before Free: %v", err)
	}
	if err := mincore(v); err != nil {
		t.Fatalf("values: mincore before Free: %v", err)
	}
	c.Free()
	if err := mincore(k); err != syscall.ENOMEM {
		t.Errorf("keys: mincore after Free: %v, want ENOMEM (unmapped)", err)
	}
	if err := mincore(v); err != syscall.ENOMEM {
		t.Errorf("values: mincore after Free: %v, want ENOMEM (unmapped)", err)
	}
	if c.Bytes() != 0 {
		t.Errorf("Bytes() = %d after Free", c.Bytes())
	}
	c.Free()
}

// mincore asks the kernel about the pages of b (which start on a page).
func mincore(b []byte) error {
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return e
	}
	return nil
}
