package kprobe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/kernel"
)

// CachePath is the file results are cached in: kprobe.json in the glassbox
// home, beside roofline.json.
func CachePath() string { return filepath.Join(home.Home(), "kprobe.json") }

// ErrNotCached is returned by Load when this machine, thread count, kernel
// set and build have no cached result.
var ErrNotCached = errors.New("kprobe: no cached kernel speeds for this machine and build")

// buildID names the code that was measured: the probe's version, the Go
// toolchain, the binary's VCS revision when the build recorded one, and
// the executable's size and modification time (so that any rebuild, of
// uncommitted changes too, measures again: its kernels may differ).
func buildID() string {
	id := fmt.Sprintf("v%d %s", Version, runtime.Version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				id += " " + s.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			id += fmt.Sprintf(" exe %d@%d", fi.Size(), fi.ModTime().Unix())
		}
	}
	return id
}

// machineKey is the part of a cache key that does not depend on the
// thread count.
func machineKey() string {
	impl := kernel.Active()
	if x16Off() {
		impl += " x16=off"
	}
	return fmt.Sprintf("%s | %s | %s", roofline.Machine(), impl, buildID())
}

func cacheKey(threads int) string {
	return fmt.Sprintf("%s | threads=%d", machineKey(), threads)
}

func readCache(path string) (map[string]Result, error) {
	m := map[string]Result{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kprobe: read cache: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("kprobe: cache %s is corrupt: %w", path, err)
	}
	return m, nil
}

// Load returns the cached result for this machine, build and thread count
// (<= 0: physical cores).
func Load(threads int) (Result, error) {
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	m, err := readCache(CachePath())
	if err != nil {
		return Result{}, err
	}
	r, ok := m[cacheKey(threads)]
	if !ok {
		return Result{}, ErrNotCached
	}
	return r, nil
}

// keepPerMachine bounds the cache: every rebuilt binary adds its own
// entries, so only the newest this many of a machine are kept (several
// binaries in use at once keep theirs).
const keepPerMachine = 16

// Save stores r in the cache, dropping the oldest entries of its machine
// beyond keepPerMachine (builds that most likely no longer run here).
func Save(r Result) error {
	path := CachePath()
	m, err := readCache(path)
	if err != nil {
		m = map[string]Result{} // a corrupt cache is rewritten
	}
	m[cacheKey(r.Threads)] = r
	var mine []string
	for k, e := range m {
		if e.Machine == r.Machine {
			mine = append(mine, k)
		}
	}
	sort.Slice(mine, func(i, j int) bool { return m[mine[i]].Measured.After(m[mine[j]].Measured) })
	for _, k := range mine[min(len(mine), keepPerMachine):] {
		delete(m, k)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kprobe: save: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("kprobe: save: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("kprobe: save: %w", err)
	}
	return nil
}

// Get returns the cached result, probing (and caching) when there is none
// or fresh is set; cached reports which.
func Get(threads int, fresh bool, opt Options) (r Result, cached bool, err error) {
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	if !fresh {
		if r, err := Load(threads); err == nil {
			return r, true, nil
		}
	}
	if r, err = Probe(threads, opt); err != nil {
		return r, false, err
	}
	return r, false, Save(r)
}
