package roofline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A small probe (the buffer fits in cache, so it measures cache bandwidth)
// checks the machinery and the cache round trip quickly.
func TestProbeAndCache(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	if _, err := Load(2); !errors.Is(err, ErrNotCached) {
		t.Fatalf("empty cache: Load err = %v", err)
	}
	r, cached, err := Get(2, false, Options{BufferBytes: 8 << 20, Passes: 1})
	if err != nil || cached {
		t.Fatalf("Get: cached %v, err %v", cached, err)
	}
	if r.ReadGBs1 <= 0 || r.ReadGBsN <= 0 || r.Int8GOPS <= 0 || r.F32GFLOPS <= 0 || r.Threads != 2 {
		t.Fatalf("implausible result %+v", r)
	}
	t.Logf("%+v", r)
	again, cached, err := Get(2, false, Options{})
	if err != nil || !cached || again.ReadGBs1 != r.ReadGBs1 {
		t.Fatalf("second Get: cached %v, err %v, %+v", cached, err, again)
	}
	if _, err := Load(3); !errors.Is(err, ErrNotCached) {
		t.Fatalf("other thread count: err = %v", err)
	}
	path, _ := CachePath()
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(2); err == nil || errors.Is(err, ErrNotCached) {
		t.Fatalf("corrupt cache: err = %v", err)
	}
	if filepath.Dir(path) != os.Getenv("GLASSBOX_HOME") {
		t.Fatalf("cache at %s, not in GLASSBOX_HOME", path)
	}
}

// TestReaderWindow: a window reads whole passes (at least two, at least
// the bytes asked), its sustained rate is at most its best pass's, and
// both are positive.
func TestReaderWindow(t *testing.T) {
	r := NewReader(4<<20, 1)
	for _, bytes := range []int64{0, 1, 4 << 20, 9 << 20, 30 << 20} {
		sustained, best := r.Window(bytes)
		if sustained <= 0 || best <= 0 || sustained > best*1.0000001 && bytes <= 8<<20 {
			t.Errorf("window of %d bytes: sustained %v GB/s, best of the first two passes %v", bytes, sustained, best)
		}
	}
}
