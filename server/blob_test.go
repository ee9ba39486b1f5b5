package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestBlobLimits: an upload is refused with 413 when it is larger than the
// blob limit, said or found, and with 507 when the disk would keep less
// than blobReserve free, checked before the first byte is written and
// again as the bytes arrive; nothing is stored either way.
func TestBlobLimits(t *testing.T) {
	defer func(n int64) { blobCheckEvery = n }(blobCheckEvery)
	blobCheckEvery = 4 << 10
	const limit = 64 << 10
	f := newFake()
	var free atomic.Int64
	var shrink atomic.Int64 // bytes the free space loses at each look
	f.free = func() (int64, bool) { return free.Add(-shrink.Load()), true }
	ts := start(t, f, func(c *Config) { c.MaxBlobBytes = limit })
	blob := func(n int) ([]byte, string) {
		b := bytes.Repeat([]byte("g"), n)
		sum := sha256.Sum256(b)
		return b, "/api/blobs/sha256:" + hex.EncodeToString(sum[:])
	}
	post := func(path string, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", ts.url+path, body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	chunked := func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) } // no length: sent chunked
	plenty := int64(blobReserve + 1<<30)

	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		free    int64
		shrink  int64
		status  int
		says    []string
	}{
		{"fits", 10 << 10, false, plenty, 0, 201, nil},
		{"fits, sent chunked", 10 << 10, true, plenty, 0, 201, nil},
		{"larger than the limit, said", limit + 1, false, plenty, 0, 413, []string{"65537 bytes", "65536 bytes", "--max-blob"}},
		{"larger than the limit, found", limit + 1, true, plenty, 0, 413, []string{"65536 bytes", "--max-blob"}},
		{"more than the disk can spare, said", 32 << 10, false, blobReserve + 16<<10, 0, 507, []string{"32.0 KiB", "1.00 GiB kept free", "16.0 KiB"}},
		{"the disk fills as it arrives", 32 << 10, true, blobReserve + 10<<10, 4 << 10, 507, []string{"1.00 GiB kept free"}},
		{"the disk is already short", 1 << 10, true, blobReserve - 1, 0, 507, []string{"1.00 GiB kept free"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			free.Store(tc.free)
			shrink.Store(tc.shrink)
			b, path := blob(tc.size)
			body := io.Reader(bytes.NewReader(b))
			if tc.chunked {
				body = chunked(b)
			}
			status, msg := post(path, body)
			if status != tc.status {
				t.Fatalf("%d, want %d: %s", status, tc.status, msg)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%s does not say %q", msg, s)
				}
			}
			if held, _ := f.HasBlob(t.Context(), strings.TrimPrefix(path, "/api/blobs/")); held != (tc.status == 201) {
				t.Errorf("held after a %d: %v", status, held)
			}
		})
	}
	// A disk that fills despite the checks is a 507 too, not the upload's fault.
	free.Store(plenty)
	shrink.Store(0)
	f.putErr = fmt.Errorf("upload: write /store/.partial/blob-1: %w", syscall.ENOSPC)
	b, path := blob(100)
	if status, msg := post(path, bytes.NewReader(b)); status != 507 || !strings.Contains(msg, "no space left") {
		t.Errorf("ENOSPC: %d %s", status, msg)
	}
}
