package kprobe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/tensor"
)

// A short probe of a few formats checks the machinery and the cache round
// trip quickly. GLASSBOX_KPROBE_FULL=1 runs the default probe and logs it.
func TestProbeAndCache(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	opt := Options{MatrixBytes: 256 << 10, Batch: time.Millisecond, Batches: 2, Types: []tensor.DType{tensor.F16, tensor.Q4_0, tensor.Q6_K}}
	threads := 2
	if os.Getenv("GLASSBOX_KPROBE_FULL") != "" {
		opt = Options{}
		if n, err := strconv.Atoi(os.Getenv("GLASSBOX_KPROBE_FULL")); err == nil && n > 1 {
			threads = n // GLASSBOX_KPROBE_FULL=1: 2 threads
		}
	}
	if _, err := Load(2); !errors.Is(err, ErrNotCached) {
		t.Fatalf("empty cache: Load err = %v", err)
	}
	r, cached, err := Get(threads, false, opt)
	if err != nil || cached {
		t.Fatalf("Get: cached %v, err %v", cached, err)
	}
	for _, f := range r.Formats {
		t.Logf("%-5s %6.1f GB/s + %5.1f ns/row (%d × %d)", f.Type, f.BytesPerS/1e9, 1e9*f.RowSeconds, f.Rows, f.Cols)
	}
	t.Logf("call %.1f µs, attention %.1f GB/s of KV + %.2f G elems/s + %.1f µs, vector %.2f G elems/s, %.2f s, build %s",
		1e6*r.CallSeconds, r.AttnKVBytesPerS/1e9, r.AttnElemsPerS/1e9, 1e6*r.AttnCallSeconds, r.VecElemsPerS/1e9, r.Seconds, r.Build)
	if r.Threads != threads || len(r.Formats) != len(opt.Types) && opt.Types != nil {
		t.Fatalf("result %+v", r)
	}
	for _, dt := range []tensor.DType{tensor.F16, tensor.Q4_0, tensor.Q6_K} {
		if v, ok := r.Rate(dt.String()); !ok || v < 1e8 || v > 1e13 {
			t.Errorf("%s: implausible rate %g", dt, v)
		}
	}
	if _, ok := r.Rate("Q1_X"); ok {
		t.Error("rate of an unprobed format")
	}
	again, cached, err := Get(threads, false, opt)
	if err != nil || !cached || again.Formats[0] != r.Formats[0] {
		t.Fatalf("second Get: cached %v, err %v", cached, err)
	}
	if _, err := Load(threads + 1); !errors.Is(err, ErrNotCached) {
		t.Fatalf("other thread count: err = %v", err)
	}
	// Only the newest keepPerMachine entries of a machine are kept; other
	// machines' stay.
	m, _ := readCache(CachePath())
	for i := range keepPerMachine + 3 {
		old := r
		old.Measured = r.Measured.Add(-time.Duration(i+1) * time.Hour)
		m[fmt.Sprintf("old build %d", i)] = old
	}
	other := r
	other.Machine = "elsewhere"
	other.Measured = r.Measured.Add(-1000 * time.Hour)
	m["other machine"] = other
	saveMap(t, m)
	if err := Save(r); err != nil {
		t.Fatal(err)
	}
	m, _ = readCache(CachePath())
	if _, ok := m["other machine"]; !ok {
		t.Error("another machine's entry was dropped")
	}
	if _, ok := m[cacheKey(r.Threads)]; !ok || len(m) != keepPerMachine+1 {
		t.Errorf("%d entries after Save, want %d of this machine (with the new one) and 1 other", len(m), keepPerMachine)
	}
	if _, ok := m[fmt.Sprintf("old build %d", keepPerMachine-2)]; !ok {
		t.Error("a recent entry was dropped")
	}
	if _, ok := m[fmt.Sprintf("old build %d", keepPerMachine-1)]; ok {
		t.Error("an entry beyond the newest 16 survived")
	}
	if err := os.WriteFile(CachePath(), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(threads); err == nil || errors.Is(err, ErrNotCached) {
		t.Fatalf("corrupt cache: err = %v", err)
	}
}

func saveMap(t *testing.T, m map[string]Result) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(CachePath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVectorElems(t *testing.T) {
	// 4·2048 + 2048 + 512 + 2·8192 + 2·512
	if got := VectorElems(2048, 8192, 2048, 512); got != 8192+2048+512+16384+1024 {
		t.Errorf("VectorElems = %g", got)
	}
}
