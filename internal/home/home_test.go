package home

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gb")
	t.Setenv(Env, dir)
	if got := Home(); got != dir {
		t.Errorf("Home() = %q, want %q", got, dir)
	}
	got, err := Ensure()
	if err != nil || got != dir {
		t.Fatalf("Ensure() = %q, %v", got, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("home folder: %v, %v", fi, err)
	}
	t.Setenv(Env, "")
	t.Setenv("HOME", "/h")
	if got := Home(); got != "/h/.glassbox" {
		t.Errorf("default Home() = %q", got)
	}
}
