package sdtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/safetensors"
	"github.com/glassbox-ai/glassbox/synth"
)

// TestSD15 gets the F16 checkpoint (generating it into the cache folder
// if needed) and reads its directory.
func TestSD15(t *testing.T) {
	start := time.Now()
	path := SD15(t, "f16")
	t.Logf("SD15: %s in %v", path, time.Since(start))
	f, err := safetensors.ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 1130 || f.Metadata["spec"] != Spec {
		t.Errorf("%d tensors, spec %q", len(f.Tensors), f.Metadata["spec"])
	}
	// A second call finds it.
	start = time.Now()
	if again := SD15(t, "f16"); again != path {
		t.Errorf("second call: %s", again)
	}
	t.Logf("SD15 on a cached file: %v", time.Since(start))
}

// TestSD15Cache: a valid file is reused, an invalid one regenerated, a
// short disk skips with the numbers, an unknown variant fails.
func TestSD15Cache(t *testing.T) {
	real := SD15(t, "f16")
	dir := t.TempDir()
	t.Setenv("GLASSBOX_TESTCACHE", dir)
	calls := 0
	generate = func(_ context.Context, path string, _ synth.SD1Options) error {
		calls++
		return os.WriteFile(path, []byte("stub"), 0o644)
	}
	defer func() { generate = synth.WriteSD1File }()

	// A valid file (a link to the real one) is used as it is.
	if err := os.Symlink(real, filepath.Join(dir, "sd15-rand.safetensors")); err != nil {
		t.Fatal(err)
	}
	if _, skip, err := sd15("f16", t.Logf); err != nil || skip != "" || calls != 0 {
		t.Fatalf("valid file: err %v, skip %q, %d generations", err, skip, calls)
	}
	// A foreign file under the name is regenerated.
	if err := os.WriteFile(filepath.Join(dir, "sd15-rand-f32.safetensors"), []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged []string
	logf := func(f string, a ...any) { logged = append(logged, f) }
	if _, skip, err := sd15("f32", logf); err != nil || skip != "" || calls != 1 || !strings.Contains(strings.Join(logged, "|"), "regenerating") {
		t.Fatalf("foreign file: err %v, skip %q, %d generations, log %q", err, skip, calls, logged)
	}
	// A short disk skips, saying how much is needed.
	os.Remove(filepath.Join(dir, "sd15-rand-f32.safetensors"))
	freeDisk = func(string) (int64, bool) { return 1 << 30, true }
	defer func() { freeDisk = freeDiskOS }()
	if _, skip, err := sd15("f32", logf); err != nil || !strings.Contains(skip, "needs 4.8 GB free") || calls != 1 {
		t.Fatalf("short disk: err %v, skip %q, %d generations", err, skip, calls)
	}
	if _, _, err := sd15("q8", logf); err == nil || !strings.Contains(err.Error(), `variant "q8"`) {
		t.Fatalf("unknown variant: %v", err)
	}
}

// TestLock: a second holder waits until the first releases.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lock(path)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan bool, 1)
	got := make(chan bool)
	go func() {
		u, err := lock(path)
		if err != nil {
			t.Error(err)
			got <- false
			return
		}
		got <- len(released) == 1
		u()
	}()
	time.Sleep(50 * time.Millisecond) // a chance for a broken lock to be taken early; a correct one passes regardless
	released <- true
	unlock()
	if !<-got {
		t.Fatal("the second lock was taken while the first was held")
	}
}

func TestNeedMemory(t *testing.T) {
	if avail, ok := availableMemory(); ok && avail <= 0 {
		t.Fatalf("MemAvailable %d", avail)
	}
	NeedMemory(t, 1) // any machine has a byte
}
