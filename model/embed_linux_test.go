package model

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/kernel"
)

// TestEmbeddingLookupsStayOut checks that the binder gives a token
// embedding whose lookups read their rows from the file: after looking up
// every row, no more of the mapped table's pages are mapped in than before
// (through the mapping, each lookup brought in the pages around its row:
// all 35 of this table's), and the rows are the file's.
func TestEmbeddingLookupsStayOut(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/tiny-llama-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const rows, cols = 512, 256
	b := NewBinder(f)
	m := b.Matrix("token_embd.weight", rows, cols)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	table, _, err := f.TensorData("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	f.Evict(table) // what parsing the header brought in (not the pages shared with neighbours)
	before := mappedPages(t, table)
	got := make([]float32, rows*cols)
	for r := range rows {
		m.Row(r, got[r*cols:(r+1)*cols])
	}
	if n := mappedPages(t, table); n != before {
		t.Errorf("after %d lookups, %d pages of the %d-byte table are mapped in, want the %d before them", rows, n, len(table), before)
	}
	want := make([]float32, rows*cols)
	if err := kernel.Dequantize(m.Type, table, want); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("row %d column %d: %g, the file has %g", i/cols, i%cols, got[i], want[i])
		}
	}
}

// mappedPages counts the pages b spans that are mapped in this process
// (present in its page table: /proc/self/pagemap bit 63; mincore would
// report the page cache's view of a file mapping instead).
func mappedPages(t *testing.T, b []byte) int {
	t.Helper()
	const page = 4096
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer pm.Close()
	p := uintptr(unsafe.Pointer(&b[0]))
	start, end := p&^(page-1), (p+uintptr(len(b))+page-1)&^(page-1)
	entries := make([]byte, 8*((end-start)/page))
	if _, err := pm.ReadAt(entries, int64(start/page*8)); err != nil {
		t.Fatalf("pagemap: %v", err)
	}
	n := 0
	for i := 0; i < len(entries); i += 8 {
		n += int(binary.LittleEndian.Uint64(entries[i:]) >> 63)
	}
	return n
}
