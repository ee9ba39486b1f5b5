package engine

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
)

// TestEmbeddingLookupsStayOut checks that token-embedding lookups read
// their rows from the file: after a generation that looked up every
// token, no more of the mapped table's pages are mapped in than before it.
// Through the mapping, each lookup brought in the pages around its row.
func TestEmbeddingLookupsStayOut(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/tiny-llama-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if !f.HasTensor("output.weight") {
		t.Fatal("tiny-llama-Q8_0 has no output matrix: its embedding table is not lookup-only")
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	table, _, err := f.TensorData("token_embd.weight")
	if err != nil {
		t.Fatal(err)
	}
	f.Evict(table) // what parsing the header or loading brought in (not the pages shared with neighbours)
	before := mappedPages(t, table)
	s := newSession(t, m, model.SessionOptions{CtxLen: 128})
	res, err := Generate(context.Background(), s, m.Config().VocabSize, Request{
		Prompt: []int{1, 100, 200, 300, 400}, MaxTokens: 60, Decoder: &idText{}})
	if err != nil {
		t.Fatal(err)
	}
	if n := mappedPages(t, table); n != before {
		t.Errorf("after %d lookups, %d pages of the %d-byte embedding table are mapped in, want the %d before them", len(res.Tokens)+5, n, len(table), before)
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
