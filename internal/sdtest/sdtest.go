// Package sdtest gives tests the random-weight Stable Diffusion 1.5
// checkpoint sd15-rand (shared/golden/sd15/README.md §2) without a
// download: SD15 returns its path, generating it with package synth the
// first time (about 16 s for the 2.1 GB F16 file) into a cache folder that
// later test binaries and runs reuse, or skips the test with a message
// when the disk is short.
//
// The cache folder is $GLASSBOX_TESTCACHE if set (the files are then
// sd15-rand.safetensors and sd15-rand-f32.safetensors directly in it, the
// names `glassbox synth --arch sd1` is documented with), else
// os.TempDir()/glassbox-testcache/sd15-rand-v1. Test binaries of one
// `go test ./...` run in parallel: an exclusive flock on a lock file in the
// folder makes one of them generate while the others wait, and the file
// appears only when complete (written under a temporary name, renamed).
//
// A file found there is trusted after synth.CheckSD1File: its size, its
// header byte for byte and the first and last 256 values of every tensor
// (about 1 MB read, milliseconds). That catches a truncated file, another
// spec or dtype, and a stale or foreign file under the name; it does not
// catch a few flipped bytes inside a tensor, which only a full SHA-256 (tens
// of seconds per 2 GB, on every test binary's start) would. A file that
// fails the check is regenerated.
//
// Wan does the same for the random-weight Wan 2.1 files (the 2.8 GB F16
// 1.3B DiT: about 20 s), checked by synth.CheckWanFile.
//
// NeedMemory skips a test when the machine has less available memory than
// a test needs (a UNet forward pass at 512² needs gigabytes).
//
// Imports: synth, tensor and the standard library (testing).
package sdtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/glassbox-ai/glassbox/synth"
)

// Spec names the checkpoint generated (the golden set's spec version).
const Spec = "sd15-rand-v1"

// Variants are the files SD15 provides: "f16" (the golden checkpoint) and
// "f32" (its exact F32 widening, §2.6).
var Variants = map[string]synth.SD1Options{
	"f16": {},
	"f32": {F32: true},
}

// fileNames are the files' names in the cache folder.
var fileNames = map[string]string{
	"f16": "sd15-rand.safetensors",
	"f32": "sd15-rand-f32.safetensors",
}

// generate writes the file (a variable for tests of the regeneration).
var generate = synth.WriteSD1File

// diskMargin is the free space SD15 leaves beyond the file it writes.
const diskMargin = 512 << 20

// Dir returns the cache folder (see the package doc), creating it.
func Dir() (string, error) {
	dir := os.Getenv("GLASSBOX_TESTCACHE")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "glassbox-testcache", Spec)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// SD15 returns the path of the sd15-rand checkpoint of variant ("f16" or
// "f32"), generating it if the cache folder lacks a valid one. It skips t
// when the disk has too little free space to write it, and fails t on any
// other error.
func SD15(t testing.TB, variant string) string {
	t.Helper()
	path, skip, err := sd15(variant, t.Logf)
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// sd15 is SD15 without the testing.TB: the path, or why the test skips,
// or an error.
func sd15(variant string, logf func(string, ...any)) (path, skip string, err error) {
	o, ok := Variants[variant]
	if !ok {
		return "", "", fmt.Errorf("sdtest: variant %q is not f16 or f32", variant)
	}
	dir, err := Dir()
	if err != nil {
		return "", "", fmt.Errorf("sdtest: cache folder: %w", err)
	}
	path = filepath.Join(dir, fileNames[variant])
	unlock, err := lock(filepath.Join(dir, ".sd15-rand.lock"))
	if err != nil {
		return "", "", fmt.Errorf("sdtest: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		err := synth.CheckSD1File(path, o)
		if err == nil {
			return path, "", nil
		}
		logf("sdtest: regenerating %s: %v", path, err)
	}
	size := synth.SD1Size(o)
	if free, ok := freeDisk(dir); ok && free < size+diskMargin {
		return "", fmt.Sprintf("sdtest: %s needs %.1f GB free for %s (%.1f GB + margin), it has %.1f GB (set GLASSBOX_TESTCACHE to a roomier folder)",
			dir, float64(size+diskMargin)/1e9, fileNames[variant], float64(size)/1e9, float64(free)/1e9), nil
	}
	logf("sdtest: generating %s (%.1f GB, once per cache folder)", path, float64(size)/1e9)
	if err := generate(context.Background(), path, o); err != nil {
		return "", "", fmt.Errorf("sdtest: %w", err)
	}
	return path, "", nil
}

// NeedMemory skips t unless the machine has at least bytes of memory
// available (MemAvailable of /proc/meminfo; where that is unknown the test
// runs).
func NeedMemory(t testing.TB, bytes int64) {
	t.Helper()
	if avail, ok := availableMemory(); ok && avail < bytes {
		t.Skipf("sdtest: needs %.1f GB of available memory, the machine has %.1f GB", float64(bytes)/1e9, float64(avail)/1e9)
	}
}
