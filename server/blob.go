package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
)

// Uploads: Ollama's /api/blobs, where its CLI sends a local GGUF file
// before a create names it. An upload is bounded by Config.MaxBlobBytes
// and by the room on the backend's disk, looked at before the first byte
// is written and again as the bytes arrive, so an upload cannot fill the
// disk the store (and the journal) live on.

// BlobDisk is a Backend's optional capability: the bytes free on the disk
// its uploads are written to (ok false when it cannot tell: then only
// MaxBlobBytes bounds an upload).
type BlobDisk interface {
	BlobFree() (free int64, ok bool)
}

// blobReserve is what an upload leaves free on the disk.
const blobReserve = 1 << 30

// blobCheckEvery is how many bytes of an upload arrive between looks at
// the disk (a statfs each).
var blobCheckEvery int64 = 64 << 20

// ollamaBlob is HEAD and POST /api/blobs/{digest}: whether a blob is held
// (200, else 404), and its upload (201; a body whose SHA-256 is not the
// digest is a 400, one over the limit a 413, one the disk has no room for
// a 507).
func (s *Server) ollamaBlob(w http.ResponseWriter, r *http.Request) {
	digest := r.PathValue("digest")
	if r.Method == http.MethodHead {
		ok, err := s.cfg.Backend.HasBlob(r.Context(), digest)
		switch {
		case err != nil:
			writeOllamaError(w, toError(err))
		case ok:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
		return
	}
	body := &blobReader{r: r.Body, limit: s.cfg.MaxBlobBytes, next: blobCheckEvery}
	if d, ok := s.cfg.Backend.(BlobDisk); ok {
		body.free = d.BlobFree
	}
	e := body.room(r.ContentLength)
	if e == nil {
		if err := s.cfg.Backend.PutBlob(r.Context(), digest, body); err != nil {
			e = toError(err)
			if errors.Is(err, syscall.ENOSPC) {
				e.Status, e.Code, e.Hint = http.StatusInsufficientStorage, "insufficient_storage", blobDiskHint
			}
		}
		if body.err != nil {
			e = body.err // the reader's refusal, however the backend wrapped it
		}
	}
	if e != nil {
		if e.Status == http.StatusRequestEntityTooLarge || e.Status == http.StatusInsufficientStorage {
			w.Header().Set("Connection", "close") // the rest of the body is not worth reading
		}
		writeOllamaError(w, e)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

const blobDiskHint = "free space on the store's disk, or start serve with a --home on a larger one"

// blobReader is an upload's body under the blob limit and the disk's room.
type blobReader struct {
	r     io.Reader
	n     int64                // bytes read
	limit int64                // MaxBlobBytes
	next  int64                // n at which the disk is looked at again
	free  func() (int64, bool) // nil: the disk is not looked at
	err   *Error               // why the upload was cut off
}

// room checks an upload of length bytes (-1: unknown, sent chunked) before
// any is read.
func (b *blobReader) room(length int64) *Error {
	if length > b.limit {
		return &Error{Status: http.StatusRequestEntityTooLarge, Stage: "deliver", Code: "blob_too_large",
			Message: fmt.Sprintf("upload of %d bytes (%s) exceeds the blob limit of %d bytes (%s)", length, sizeText(length), b.limit, sizeText(b.limit)),
			Hint:    "raise --max-blob"}
	}
	if b.free == nil {
		return nil
	}
	free, ok := b.free()
	switch {
	case !ok:
	case length > 0 && free-blobReserve < length:
		room := max(free-blobReserve, 0)
		return &Error{Status: http.StatusInsufficientStorage, Stage: "deliver", Code: "insufficient_storage",
			Message: fmt.Sprintf("upload of %s does not fit on the store's disk: %s free, less the %s kept free, leaves room for %s",
				sizeText(length), sizeText(free), sizeText(blobReserve), sizeText(room)),
			Hint: blobDiskHint}
	case free < blobReserve:
		return b.short(free)
	}
	return nil
}

// short is the refusal of an upload the disk has no room left for.
func (b *blobReader) short(free int64) *Error {
	msg := fmt.Sprintf("the store's disk has %s free, less than the %s kept free", sizeText(free), sizeText(blobReserve))
	if b.n > 0 {
		msg = fmt.Sprintf("the store's disk is down to %s free after %s of the upload arrived, less than the %s kept free",
			sizeText(free), sizeText(b.n), sizeText(blobReserve))
	}
	return &Error{Status: http.StatusInsufficientStorage, Stage: "deliver", Code: "insufficient_storage", Message: msg, Hint: blobDiskHint}
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if room := b.limit - b.n + 1; int64(len(p)) > room { // one byte past the limit tells
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.n > b.limit {
		b.err = &Error{Status: http.StatusRequestEntityTooLarge, Stage: "deliver", Code: "blob_too_large",
			Message: fmt.Sprintf("upload exceeds the blob limit of %d bytes (%s): more arrived", b.limit, sizeText(b.limit)),
			Hint:    "raise --max-blob"}
		return 0, b.err
	}
	if b.free != nil && b.n >= b.next {
		b.next = b.n + blobCheckEvery
		if free, ok := b.free(); ok && free < blobReserve {
			b.err = b.short(free)
			return 0, b.err
		}
	}
	return n, err
}

// sizeText writes n bytes for a reader: three significant digits of the
// largest binary unit it reaches ("32.0 KiB", "1.00 GiB").
func sizeText(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	f, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		if f < 1024 && unit != "" {
			break
		}
		f, unit = f/1024, u
	}
	switch {
	case f < 10:
		return fmt.Sprintf("%.2f %s", f, unit)
	case f < 100:
		return fmt.Sprintf("%.1f %s", f, unit)
	}
	return fmt.Sprintf("%.0f %s", f, unit)
}
