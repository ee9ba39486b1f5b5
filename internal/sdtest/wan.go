package sdtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-ai/glassbox/synth"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Wan returns the path of the random-weight Wan file of kind, seed and dt
// (spec glassbox-wan-init-v1, shared/golden/wan/README.md §1) in the cache
// folder, named as the golden set names it (wan-dit-1.3b-s3001-F16.safetensors),
// generating it with package synth if the folder lacks one that passes
// synth.CheckWanFile. It skips t when the disk is short and fails it on
// any other error.
func Wan(t testing.TB, kind string, seed uint64, dt tensor.DType) string {
	t.Helper()
	path, skip, err := wan(kind, seed, dt, t.Logf)
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func wan(kind string, seed uint64, dt tensor.DType, logf func(string, ...any)) (path, skip string, err error) {
	size, err := synth.WanSize(kind, seed, dt)
	if err != nil {
		return "", "", fmt.Errorf("sdtest: %w", err)
	}
	dir, err := Dir()
	if err != nil {
		return "", "", fmt.Errorf("sdtest: cache folder: %w", err)
	}
	name := fmt.Sprintf("wan-%s-s%d-%s.safetensors", kind, seed, dt)
	path = filepath.Join(dir, name)
	unlock, err := lock(filepath.Join(dir, ".wan.lock"))
	if err != nil {
		return "", "", fmt.Errorf("sdtest: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		err := synth.CheckWanFile(path, kind, seed, dt)
		if err == nil {
			return path, "", nil
		}
		logf("sdtest: regenerating %s: %v", path, err)
	}
	if free, ok := freeDisk(dir); ok && free < size+diskMargin {
		return "", fmt.Sprintf("sdtest: %s needs %.1f GB free for %s (%.1f GB + margin), it has %.1f GB (set GLASSBOX_TESTCACHE to a roomier folder)",
			dir, float64(size+diskMargin)/1e9, name, float64(size)/1e9, float64(free)/1e9), nil
	}
	logf("sdtest: generating %s (%.1f GB, once per cache folder)", path, float64(size)/1e9)
	if err := synth.WriteWanFile(context.Background(), path, kind, seed, dt); err != nil {
		return "", "", fmt.Errorf("sdtest: %w", err)
	}
	return path, "", nil
}
