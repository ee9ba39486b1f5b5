package gguf

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// sparseModel writes a header-only GGUF of about size bytes of Q4_0
// weights to dir and extends it sparsely, so the data costs no disk.
func sparseModel(t testing.TB, dir string, size int64) string {
	t.Helper()
	var m Metadata
	m.Set("general.architecture", "llama")
	const rows, cols = 4096, 4096
	per, _ := tensor.Q4_0.RowBytes(rows * cols)
	var ts []WriteTensor
	for i := int64(0); i*per < size; i++ {
		ts = append(ts, WriteTensor{Name: fmt.Sprintf("blk.%d.weight", i), Shape: []int64{rows, cols}, Type: tensor.Q4_0})
	}
	p := filepath.Join(dir, "sparse.gguf")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	total, err := WriteHeader(fh, &m, ts)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(total); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// rssBytes reads this process's resident set size (Linux only).
func rssBytes() (int64, bool) {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// TestOpenDoesNotReadData opens a 2 GB model and checks that resident
// memory grows by far less than the file: only header pages are touched.
func TestOpenDoesNotReadData(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS accounting is read from /proc")
	}
	p := sparseModel(t, t.TempDir(), 2<<30)
	runtime.GC()
	before, _ := rssBytes()
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after, _ := rssBytes()
	if f.Size < 2<<30 || f.TensorBytes() < 2<<30-(9<<20) {
		t.Fatalf("file %d bytes, tensors %d bytes", f.Size, f.TensorBytes())
	}
	if grow := after - before; grow > 8<<20 {
		t.Errorf("opening a %d-byte model grew RSS by %d bytes", f.Size, grow)
	}
	// Touching one tensor makes only its pages resident.
	d := f.Data(&f.Tensors[0])
	var sum byte
	for i := 0; i < len(d); i += 4096 {
		sum += d[i]
	}
	touched, _ := rssBytes()
	if grow := touched - after; grow > int64(len(d))+(4<<20) {
		t.Errorf("touching %d bytes grew RSS by %d", len(d), grow)
	}
	_ = sum
}

func BenchmarkOpen2GB(b *testing.B) {
	p := sparseModel(b, b.TempDir(), 2<<30)
	b.ReportAllocs()
	before, _ := rssBytes()
	for b.Loop() {
		f, err := Open(p)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	after, _ := rssBytes()
	b.ReportMetric(float64(after-before)/(1<<20), "MiB-RSS-growth")
}

func TestWriteHeaderMatchesWrite(t *testing.T) {
	var m Metadata
	m.Set("general.architecture", "llama")
	ts := []WriteTensor{
		{Name: "a", Shape: []int64{3, 32}, Type: tensor.Q8_0, Data: make([]byte, 3*34)},
		{Name: "b", Shape: []int64{5}, Type: tensor.F32, Data: make([]byte, 20)},
	}
	var full, head bytes.Buffer
	if err := Write(&full, &m, ts); err != nil {
		t.Fatal(err)
	}
	total, err := WriteHeader(&head, &m, ts)
	if err != nil {
		t.Fatal(err)
	}
	if total != int64(full.Len()) || !bytes.HasPrefix(full.Bytes(), head.Bytes()) {
		t.Fatalf("header says %d bytes, full file has %d", total, full.Len())
	}
}
