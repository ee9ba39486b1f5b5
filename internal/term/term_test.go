package term

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestNotTerminals checks files that are not terminals, among them
// character devices that are not (/dev/null: a mode-bit check takes it for
// one).
func TestNotTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	regular, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	files := map[string]*os.File{"pipe read end": r, "pipe write end": w, "regular file": regular, "nil": nil}
	if runtime.GOOS != "windows" {
		for _, dev := range []string{"/dev/null", "/dev/zero"} {
			f, err := os.Open(dev)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if st, _ := f.Stat(); st.Mode()&os.ModeCharDevice == 0 {
				t.Fatalf("%s is not a character device: the test means one", dev)
			}
			files[dev] = f
		}
	}
	for name, f := range files {
		if IsTerminal(f) {
			t.Errorf("IsTerminal(%s) = true", name)
		}
	}
}

// TestPseudoTerminal checks that a terminal is one: the master side of a
// new pseudo-terminal answers the terminal attribute request.
func TestPseudoTerminal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pseudo-terminals are opened the Linux way here")
	}
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	defer f.Close()
	if !IsTerminal(f) {
		t.Error("IsTerminal(/dev/ptmx) = false")
	}
}
