package image

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/home"
)

// TestFileSHA256 hashes a small file (not cached) and a 64 MiB one
// (cached by size and time: a cached entry is used while they hold, and
// the file is hashed again once its time changes).
func TestFileSHA256(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("glassbox"), 0o644)
	got, err := FileSHA256(small)
	want := sha256.Sum256([]byte("glassbox"))
	if err != nil || got != hex.EncodeToString(want[:]) {
		t.Fatalf("small: %s, %v", got, err)
	}
	big := filepath.Join(dir, "big")
	f, _ := os.Create(big)
	f.Truncate(64 << 20)
	f.Close()
	zeros := sha256.Sum256(make([]byte, 64<<20))
	if got, err := FileSHA256(big); err != nil || got != hex.EncodeToString(zeros[:]) {
		t.Fatalf("big: %s, %v", got, err)
	}
	cache := filepath.Join(home.Home(), "sha256-cache.json")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	// Same size and time, other bytes: the cache answers (as intended:
	// that is what makes it cheap) ...
	st, _ := os.Stat(big)
	f, _ = os.OpenFile(big, os.O_WRONLY, 0)
	f.WriteAt([]byte{1}, 0)
	f.Close()
	os.Chtimes(big, st.ModTime(), st.ModTime())
	if got, _ := FileSHA256(big); got != hex.EncodeToString(zeros[:]) {
		t.Errorf("the cache was not used")
	}
	// ... and a new time hashes again.
	os.Chtimes(big, st.ModTime().Add(time.Second), st.ModTime().Add(time.Second))
	b := make([]byte, 64<<20)
	b[0] = 1
	fresh := sha256.Sum256(b)
	if got, _ := FileSHA256(big); got != hex.EncodeToString(fresh[:]) {
		t.Errorf("a changed file was not hashed again")
	}
}
