package sdtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// WithSpiece returns a copy of the safetensors file at path (in t's temp
// folder) with spm, a SentencePiece model's bytes, appended as the U8
// tensor spiece_model, as ComfyUI's umT5 files keep their tokenizer.
func WithSpiece(t testing.TB, path string, spm []byte) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 {
		t.Fatalf("sdtest: %s: %d bytes, not a safetensors file", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		t.Fatalf("sdtest: %s: a header of %d bytes in a file of %d", path, n, len(b))
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatalf("sdtest: %s: header: %v", path, err)
	}
	data := b[8+n:]
	entry, _ := json.Marshal(map[string]any{"dtype": "U8", "shape": []int{len(spm)}, "data_offsets": []int{len(data), len(data) + len(spm)}})
	header["spiece_model"] = entry
	hdr, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	// The data section stays 8-byte aligned: the header is padded with spaces.
	hdr = append(hdr, bytes.Repeat([]byte(" "), (8-len(hdr)%8)%8)...)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(append(append(out, hdr...), data...), spm...)
	dst := filepath.Join(t.TempDir(), "spiece-"+filepath.Base(path))
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
