// Package home locates the glassbox home folder, where the journal
// (journal.db) and the model store live: $GLASSBOX_HOME if set, otherwise
// ~/.glassbox.
//
// Imports: the standard library only.
package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// Env is the environment variable that overrides the home folder.
const Env = "GLASSBOX_HOME"

// Home returns the glassbox home folder: $GLASSBOX_HOME, or .glassbox in
// the user's home directory. When neither is known (no $HOME), it is
// .glassbox in the working directory. It does not create the folder.
func Home() string {
	if d := os.Getenv(Env); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".glassbox")
	}
	return ".glassbox"
}

// Ensure returns Home after creating it (mode 0700) if it does not exist.
func Ensure() (string, error) {
	d := Home()
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("glassbox home %s: %w", d, err)
	}
	return d, nil
}
