// Package atomicfile writes files so that a reader never sees half of one
// and hashes files by streaming them.
//
// Every output glassbox writes (PNGs, frames, latents, synthesized
// checkpoints, caches) goes through Write: the bytes go to a temporary
// file in the destination's folder (same file system, so the rename is
// atomic on POSIX), which is renamed over the destination only when the
// writer and the close succeeded. A failed or interrupted write leaves
// the old file, or none, and no partial one.
package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write calls fn on a temporary file beside path and renames it to path
// with permission mode when fn and the close succeed; otherwise it
// removes the temporary file and returns the error. It returns the
// file's size.
func Write(path string, mode os.FileMode, fn func(io.Writer) error) (n int64, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.partial")
	if err != nil {
		return 0, err
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err = fn(tmp); err != nil {
		return 0, err
	}
	st, err := tmp.Stat()
	if err != nil {
		return 0, err
	}
	if err = tmp.Chmod(mode); err != nil { // CreateTemp makes 0600
		return 0, err
	}
	if err = tmp.Close(); err != nil {
		return 0, err
	}
	if err = os.Rename(name, path); err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// SHA256 returns the SHA-256 of the file at path in lower-case hex and
// the number of bytes hashed.
func SHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", n, fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
