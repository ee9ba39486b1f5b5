// Package shared locates the project's shared test data: the folder
// "shared" beside the repository (real tiny models, reference
// vocabularies, golden outputs). GLASSBOX_SHARED overrides the location.
//
// Tests use Path, which fails the test when the data is missing: a test
// that silently skips its real-model check could never fail.
package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared data folder.
func Dir() (string, error) {
	if d := os.Getenv("GLASSBOX_SHARED"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			s := filepath.Join(filepath.Dir(d), "shared")
			if _, err := os.Stat(s); err != nil {
				return "", errors.New("shared data not found at " + s + " (set GLASSBOX_SHARED)")
			}
			return s, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("shared data: no go.mod above " + wd)
		}
	}
}

// Path returns the path of rel inside the shared folder, failing t if the
// file does not exist.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared data missing: %v", err)
	}
	return p
}
