package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Blobs are files a client uploads by their SHA-256 before it names them
// in a create (Ollama's /api/blobs, which its CLI uses to import a local
// GGUF file): kept under blobs/ in the store, each verified against the
// digest that names it.

// blobFile returns the path of the blob named digest ("sha256:" and 64
// hex digits).
func (s *Store) blobFile(digest string) (string, error) {
	hexSum, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || !sha256RE.MatchString(hexSum) {
		return "", fmt.Errorf("blob digest %q: want sha256: and 64 lowercase hex digits", digest)
	}
	return filepath.Join(s.Dir, "blobs", "sha256-"+hexSum), nil
}

// BlobPath returns the path of an uploaded blob, or of a stored model's
// file with that SHA-256 (a create took the blob, or the model came
// otherwise), or an error that says how to upload it.
func (s *Store) BlobPath(digest string) (string, error) {
	p, err := s.blobFile(digest)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if all, err := s.List(); err == nil {
		for _, e := range all {
			if "sha256:"+e.SHA256 == digest {
				if _, err := os.Stat(e.Path); err == nil {
					return e.Path, nil
				}
			}
		}
	}
	return "", fmt.Errorf("blob %s was not uploaded (POST /api/blobs/%s first)", digest, digest)
}

// DropBlob removes an uploaded blob once a model holds its bytes (a hard
// link or a copy), so removing that model frees them; a later create
// from the same digest finds the model's file.
func (s *Store) DropBlob(digest string) error {
	p, err := s.blobFile(digest)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// FreeBytes is the room uploads have: the bytes free to this user on the
// store's disk (ok false where the platform cannot tell).
func (s *Store) FreeBytes() (free int64, ok bool) { return freeBytes(s.Dir) }

// PutBlob stores r's bytes as the blob named digest, if they have that
// SHA-256; what does not match is removed. An upload of a blob the store
// holds is read and dropped.
func (s *Store) PutBlob(digest string, r io.Reader) (int64, error) {
	p, err := s.blobFile(digest)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.Dir, ".partial"), "blob-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), r)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, diskError(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != digest {
		return n, fmt.Errorf("the uploaded %d bytes have digest %s, not %s", n, got, digest)
	}
	return n, os.Rename(tmp.Name(), p)
}
