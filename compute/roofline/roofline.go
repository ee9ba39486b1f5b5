// Package roofline measures the physical limits of this machine that
// glassbox's speed figures are compared against: read bandwidth from DRAM
// (one thread and N threads, over a buffer far larger than the last-level
// cache) and peak int8, float32 and (where the CPU has AVX-512 BF16)
// bfloat16 multiply-add throughput (Williams,
// Waterman & Patterson 2009, "Roofline: an insightful visual performance
// model"). Results are cached per machine in the glassbox home.
//
// Imports: compute, kernel, internal/home and the standard library.
package roofline

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/kernel"
)

// Result is one probe of the machine.
type Result struct {
	Machine     string    `json:"machine"` // CPU model and logical CPU count
	Threads     int       `json:"threads"`
	BufferBytes int64     `json:"buffer_bytes"`
	ReadGBs1    float64   `json:"read_gbs_1thread"` // GB/s = 1e9 bytes/s
	ReadGBsN    float64   `json:"read_gbs_nthreads"`
	Int8GOPS    float64   `json:"int8_gops"` // 2 ops per multiply-add, all threads
	Int8Kernel  string    `json:"int8_kernel"`
	F32GFLOPS   float64   `json:"f32_gflops"`
	F32Kernel   string    `json:"f32_kernel"`
	BF16GFLOPS  float64   `json:"bf16_gflops,omitempty"` // bf16 pair products into float32; 0: the CPU has none
	BF16Kernel  string    `json:"bf16_kernel,omitempty"`
	KernelImpl  string    `json:"kernel_impl"` // kernel.Active() when measured
	Measured    time.Time `json:"measured"`
	Seconds     float64   `json:"seconds"` // how long the probe took
}

// Options tunes a probe; the zero value is the default.
type Options struct {
	BufferBytes int64 // default DefaultBuffer
	Passes      int   // timed passes per bandwidth figure, best kept (default 3)
}

// DefaultBuffer is 1 GiB: several times any last-level cache (this kind of
// machine has up to 300 MiB), so reads come from DRAM.
const DefaultBuffer = 1 << 30

// Probe measures the machine with threads threads (<= 0: physical cores).
func Probe(threads int, opt Options) (Result, error) {
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	if opt.BufferBytes <= 0 {
		opt.BufferBytes = DefaultBuffer
	}
	if opt.Passes <= 0 {
		opt.Passes = 3
	}
	start := time.Now()
	res := Result{Machine: Machine(), Threads: threads, BufferBytes: opt.BufferBytes,
		KernelImpl: kernel.Active(), Measured: start.UTC()}
	buf := make([]byte, opt.BufferBytes)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // touch every page so reads are not of the zero page
	}
	res.ReadGBs1 = readBandwidth(buf, 1, opt.Passes)
	res.ReadGBsN = readBandwidth(buf, threads, opt.Passes)
	run, ops, name := kernel.PeakInt8()
	res.Int8GOPS, res.Int8Kernel = peak(run, ops, threads)/1e9, name
	run, ops, name = kernel.PeakF32()
	res.F32GFLOPS, res.F32Kernel = peak(run, ops, threads)/1e9, name
	if run, ops, name = kernel.PeakBF16(); run != nil {
		res.BF16GFLOPS, res.BF16Kernel = peak(run, ops, threads)/1e9, name
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

var sink uint64

// Reader measures read bandwidth on demand over one buffer larger than the
// last-level cache, so that a workload's speed can be paired with the
// bandwidth of the same moment on a machine whose neighbours come and go.
type Reader struct {
	buf     []byte
	threads int
}

// NewReader allocates and touches a buffer of bytes (<= 0: DefaultBuffer)
// read by threads goroutines (<= 0: physical cores).
func NewReader(bytes int64, threads int) *Reader {
	if bytes <= 0 {
		bytes = DefaultBuffer
	}
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	buf := make([]byte, bytes)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12)
	}
	return &Reader{buf: buf, threads: threads}
}

// GBs reads the whole buffer once and returns the rate in GB/s.
func (r *Reader) GBs() float64 { return readBandwidth(r.buf, r.threads, 1) }

// Window reads the buffer in whole passes, at least two and at least
// bytes in all, after one pass it does not count (the first pass after
// other work reads low, by up to a third here: the buffer's pages have
// left the TLB), and returns the rate over the counted passes (sustained:
// the bytes over the time, which a dip of the machine's bandwidth lowers
// as it lowers a workload's of the same length) and the better of the
// first two (a short probe's figure), in GB/s.
func (r *Reader) Window(bytes int64) (sustained, best float64) {
	r.GBs()
	passes := max(2, int((bytes+int64(len(r.buf))-1)/int64(len(r.buf))))
	var secs float64
	for i := range passes {
		g := r.GBs()
		secs += float64(len(r.buf)) / g / 1e9
		if i < 2 {
			best = max(best, g)
		}
	}
	return float64(passes) * float64(len(r.buf)) / secs / 1e9, best
}

// readBandwidth returns the best of passes timings of threads goroutines
// each streaming its own contiguous share of buf, in GB/s.
func readBandwidth(buf []byte, threads, passes int) float64 {
	best := 0.0
	for range passes {
		var wg sync.WaitGroup
		sums := make([]uint64, threads)
		t0 := time.Now()
		for t := range threads {
			lo, hi := t*len(buf)/threads, (t+1)*len(buf)/threads
			wg.Add(1)
			go func() {
				defer wg.Done()
				sums[t] = kernel.StreamRead(buf[lo:hi])
			}()
		}
		wg.Wait()
		el := time.Since(t0).Seconds()
		for _, s := range sums {
			sink ^= s
		}
		best = max(best, float64(len(buf))/el/1e9)
	}
	return best
}

// peak runs a compute loop on threads goroutines for about 0.2 s and
// returns operations per second (best of three).
func peak(run func(int), opsPerIter int64, threads int) float64 {
	iters := 1 << 16
	for {
		t0 := time.Now()
		run(iters)
		if time.Since(t0) > 20*time.Millisecond || iters > 1<<30 {
			break
		}
		iters *= 2
	}
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		t0 := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run(iters)
			}()
		}
		wg.Wait()
		best = max(best, float64(opsPerIter)*float64(iters)*float64(threads)/time.Since(t0).Seconds())
	}
	return best
}

// Machine names this machine for the cache: CPU model and logical CPUs.
func Machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s × %d", model, runtime.NumCPU())
}

// CachePath is the file results are cached in: roofline.json in the
// glassbox home ($GLASSBOX_HOME, default ~/.glassbox).
func CachePath() (string, error) {
	return filepath.Join(home.Home(), "roofline.json"), nil
}

// ErrNotCached is returned by Load when this machine has no cached result
// for the thread count.
var ErrNotCached = errors.New("roofline: no cached result for this machine")

// cacheKey identifies a cached result; v2 results have the bf16 peak, so
// an older cache entry is measured again.
func cacheKey(threads int) string {
	return fmt.Sprintf("%s | threads=%d | %s | v2", Machine(), threads, kernel.Active())
}

func readCache(path string) (map[string]Result, error) {
	m := map[string]Result{}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("roofline: read cache: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("roofline: cache %s is corrupt: %w", path, err)
	}
	return m, nil
}

// Load returns the cached result for this machine and thread count.
func Load(threads int) (Result, error) {
	if threads <= 0 {
		threads = compute.PhysicalCores()
	}
	path, err := CachePath()
	if err != nil {
		return Result{}, err
	}
	m, err := readCache(path)
	if err != nil {
		return Result{}, err
	}
	r, ok := m[cacheKey(threads)]
	if !ok {
		return Result{}, ErrNotCached
	}
	return r, nil
}

// Save stores r in the cache (replacing the entry for its machine and
// thread count).
func Save(r Result) error {
	path, err := CachePath()
	if err != nil {
		return err
	}
	m, err := readCache(path)
	if err != nil {
		m = map[string]Result{} // a corrupt cache is rewritten
	}
	m[cacheKey(r.Threads)] = r
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("roofline: save: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("roofline: save: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("roofline: save: %w", err)
	}
	return nil
}

// Get returns the cached result, probing (and caching) when there is none
// or fresh is set.
func Get(threads int, fresh bool, opt Options) (Result, bool, error) {
	if !fresh {
		if r, err := Load(threads); err == nil {
			return r, true, nil
		}
	}
	r, err := Probe(threads, opt)
	if err != nil {
		return r, false, err
	}
	return r, false, Save(r)
}
