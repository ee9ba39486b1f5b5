package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestEvict checks that evicting a tensor's pages keeps its bytes readable
// (from the file) and leaves slices that are not the file's alone.
func TestEvict(t *testing.T) {
	var m Metadata
	m.Set("general.architecture", "llama")
	data := make([]byte, 18*64*256)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	p := filepath.Join(t.TempDir(), "evict.gguf")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(fh, &m, []WriteTensor{{Name: "w", Shape: []int64{256, 2048}, Type: tensor.Q4_0, Data: data}}); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("w")
	b := f.Data(ti)
	f.Evict(b)
	if !bytes.Equal(b, data) {
		t.Fatal("tensor bytes changed after Evict")
	}
	own := bytes.Clone(data)
	f.Evict(own) // not the file's: must not be touched (MADV_DONTNEED would zero heap pages)
	if !bytes.Equal(own, data) {
		t.Fatal("Evict changed a slice that is not the file's")
	}
	// TensorReader reads the tensor's bytes from the file, offsets
	// relative to the tensor, and stops at its end.
	got := make([]byte, 100)
	if n, err := f.TensorReader(ti).ReadAt(got, 1000); n != 100 || err != nil || !bytes.Equal(got, data[1000:1100]) {
		t.Fatalf("TensorReader.ReadAt(100 bytes at 1000) = %d, %v, equal %v", n, err, bytes.Equal(got, data[1000:1100]))
	}
	if n, _ := f.TensorReader(ti).ReadAt(got, int64(len(data)-10)); n != 10 {
		t.Fatalf("TensorReader read %d bytes past the tensor's last 10", n)
	}
	parsed, err := Parse(bytes.Clone(mustRead(t, p)))
	if err != nil {
		t.Fatal(err)
	}
	pt, _ := parsed.Tensor("w")
	if r := parsed.TensorReader(pt); r != nil {
		t.Fatal("a parsed (unmapped) file has a TensorReader")
	}
	pb := parsed.Data(pt)
	parsed.Evict(pb) // parsed from memory: nothing to drop
	if !bytes.Equal(pb, data) {
		t.Fatal("Evict changed a parsed (unmapped) file's bytes")
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvictDropsResidentPages reads a 256 MiB tensor region, evicts it and
// checks that resident memory falls back (Linux accounting).
func TestEvictDropsResidentPages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RSS accounting is read from /proc")
	}
	f, err := Open(sparseModel(t, t.TempDir(), 256<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum byte
	for i := range f.Tensors {
		for _, v := range f.Data(&f.Tensors[i]) {
			sum += v
		}
	}
	touched, _ := rssBytes()
	for i := range f.Tensors {
		f.Evict(f.Data(&f.Tensors[i]))
	}
	after, ok := rssBytes()
	if !ok {
		t.Skip("no VmRSS")
	}
	if drop := touched - after; drop < 200<<20 {
		t.Errorf("resident memory fell by %d MiB after evicting 256 MiB of read tensor data (sum %d)", drop>>20, sum)
	}
}
