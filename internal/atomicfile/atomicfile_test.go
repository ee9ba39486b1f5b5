package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		old     string // the destination's content before, "" for none
		fn      func(io.Writer) error
		want    string // the destination's content after
		wantErr error
	}{
		{"new file", "", func(w io.Writer) error { _, err := io.WriteString(w, "hello"); return err }, "hello", nil},
		{"replaces", "old", func(w io.Writer) error { _, err := io.WriteString(w, "new!"); return err }, "new!", nil},
		{"failed write keeps the old file", "old", func(w io.Writer) error { io.WriteString(w, "half"); return boom }, "old", boom},
		{"failed write leaves no file", "", func(w io.Writer) error { io.WriteString(w, "half"); return boom }, "", boom},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.png")
			if c.old != "" {
				if err := os.WriteFile(path, []byte(c.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			n, err := Write(path, 0o644, c.fn)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			got, rerr := os.ReadFile(path)
			if c.want == "" {
				if !os.IsNotExist(rerr) {
					t.Fatalf("file exists after a failed write: %q %v", got, rerr)
				}
			} else if string(got) != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
			if err == nil {
				if n != int64(len(c.want)) {
					t.Fatalf("size %d, want %d", n, len(c.want))
				}
				st, _ := os.Stat(path)
				if st.Mode().Perm() != 0o644 {
					t.Fatalf("mode %v, want 0644", st.Mode().Perm())
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".partial") {
					t.Fatalf("temporary file left behind: %s", e.Name())
				}
			}
		})
	}
}

func TestWriteMissingFolder(t *testing.T) {
	_, err := Write(filepath.Join(t.TempDir(), "no", "such", "f"), 0o644, func(io.Writer) error { return nil })
	if err == nil {
		t.Fatal("no error for a missing folder")
	}
}

func TestSHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("abc"), 0o600)
	sum, n, err := SHA256(path)
	// FIPS 180-2, appendix B.1: SHA-256("abc").
	if err != nil || n != 3 || sum != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("SHA256 = %s %d %v", sum, n, err)
	}
	if _, _, err := SHA256(path + ".missing"); err == nil {
		t.Fatal("no error for a missing file")
	}
}
