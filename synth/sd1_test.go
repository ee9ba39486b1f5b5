package synth

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/safetensors"
)

// The golden files' sizes and hashes (golden/sd15/README.md §2, §2.6).
const (
	sd1Bytes     = 2132625446
	sd1SHA256    = "3573612e54ef4891b7df7a4cbcf938ce6d55f3491fcd9f3ac51652f35cbaebab"
	sd1F32Bytes  = 4265096604
	sd1F32SHA256 = "edb484904d0cc90ff5d39e3f20d55be837a7428107f0ad37970e9307cbc59342"
)

// goldenRow is one line of sd15-rand.tensors.tsv.
type goldenRow struct {
	k                 int
	name, shape, kind string
	offset, nbytes    int64
	sha256            string
}

func readTensorTable(t *testing.T) []goldenRow {
	t.Helper()
	f, err := os.Open(shared.Path(t, "golden/sd15/sd15-rand.tensors.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []goldenRow
	sc := bufio.NewScanner(f)
	sc.Scan() // column names
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) != 10 {
			t.Fatalf("tensors.tsv: %d columns in %q", len(c), sc.Text())
		}
		k, err1 := strconv.Atoi(c[0])
		off, err2 := strconv.ParseInt(c[7], 10, 64)
		n, err3 := strconv.ParseInt(c[8], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("tensors.tsv: %q: %v", sc.Text(), err)
		}
		rows = append(rows, goldenRow{k: k, name: c[1], shape: c[2], kind: c[3], offset: off, nbytes: n, sha256: c[9]})
	}
	return rows
}

// TestSD1Header compares the header SD1Tensors and sd1Metadata make with
// the golden header byte for byte, and the tensors' kinds with the table's.
func TestSD1Header(t *testing.T) {
	want, err := os.ReadFile(shared.Path(t, "golden/sd15/sd15-rand.header.json"))
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := sd1Header(SD1Options{})
	got := hdr[8:]
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-200)
		t.Fatalf("header differs at byte %d of %d (want %d bytes):\ngot  ...%s\nwant ...%s", i, len(got), len(want),
			got[lo:min(len(got), i+100)], want[lo:min(len(want), i+100)])
	}
	rows := readTensorTable(t)
	plans := sd1Plans(SD1Tensors())
	if len(rows) != len(plans) {
		t.Fatalf("%d tensors, table has %d", len(plans), len(rows))
	}
	kinds := []string{kindWeight: "weight", kindBias: "bias", kindNormW: "norm_w", kindNormB: "norm_b", kindEmbed: "embed"}
	for i, r := range rows {
		if p := plans[i]; p.Name != r.name || kinds[p.kind] != r.kind {
			t.Errorf("tensor %d: %s kind %s, table: %s kind %s", i, p.Name, kinds[p.kind], r.name, r.kind)
		}
	}
	if n := SD1Params(); n != 1066235307 {
		t.Errorf("SD1Params = %d, want 1066235307 (README §2.1)", n)
	}
}

// tensorHasher is an io.Writer that hashes a safetensors stream of a known
// size as it goes by: the whole stream, and each tensor's bytes (found by
// the header, which comes first).
type tensorHasher struct {
	size   int64
	head   []byte // the 8-byte length and the header
	ends   []int64
	pos    int64
	h      hash.Hash
	whole  hash.Hash
	hashes []string // of each tensor, in file order
}

func (c *tensorHasher) Write(p []byte) (int, error) {
	n := len(p)
	c.whole.Write(p)
	for len(p) > 0 {
		if c.ends == nil {
			c.head = append(c.head, p[0])
			p, c.pos = p[1:], c.pos+1
			if len(c.head) >= 8 && int64(len(c.head)) == 8+int64(binary.LittleEndian.Uint64(c.head)) {
				f, err := safetensors.ParseHeader("stream", c.head, c.size)
				if err != nil {
					return 0, err
				}
				for _, t := range f.Tensors {
					c.ends = append(c.ends, f.HeaderBytes()+t.Offset+t.Size)
				}
			}
			continue
		}
		if len(c.hashes) == len(c.ends) {
			return 0, errors.New("bytes past the last tensor")
		}
		if c.h == nil {
			c.h = sha256.New()
		}
		m := min(int64(len(p)), c.ends[len(c.hashes)]-c.pos)
		c.h.Write(p[:m])
		p, c.pos = p[m:], c.pos+m
		if c.pos == c.ends[len(c.hashes)] {
			c.hashes = append(c.hashes, hex.EncodeToString(c.h.Sum(nil)))
			c.h = nil
		}
	}
	return n, nil
}

// TestWriteSD1 writes both variants through WriteSD1 (on several workers,
// as the command does) and checks the streams: the F16 file's header
// against the golden header, each of its tensors' SHA-256 against the
// table (so a mismatch names the tensor), and each file's size and
// SHA-256 against the README's.
func TestWriteSD1(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 6.4 GB of weights (-short)")
	}
	want, err := os.ReadFile(shared.Path(t, "golden/sd15/sd15-rand.header.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows := readTensorTable(t)
	tests := []struct {
		name   string
		o      SD1Options
		size   int64
		sha256 string
	}{
		{"F16", SD1Options{Workers: 3}, sd1Bytes, sd1SHA256},
		{"F32", SD1Options{F32: true}, sd1F32Bytes, sd1F32SHA256},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &tensorHasher{size: tc.size, whole: sha256.New()}
			if err := WriteSD1(context.Background(), c, tc.o); err != nil {
				t.Fatal(err)
			}
			if len(c.hashes) != len(rows) {
				t.Fatalf("%d tensors hashed, table has %d", len(c.hashes), len(rows))
			}
			if !tc.o.F32 {
				if !bytes.Equal(c.head[8:], want) {
					t.Fatal("header differs from sd15-rand.header.json (see TestSD1Header)")
				}
				for i, r := range rows {
					if c.hashes[i] != r.sha256 {
						t.Errorf("tensor %d %s: sha256 %s, want %s", r.k, r.name, c.hashes[i], r.sha256)
					}
				}
			}
			if c.pos != tc.size || hex.EncodeToString(c.whole.Sum(nil)) != tc.sha256 {
				t.Errorf("file: %d bytes, sha256 %x; want %d, %s", c.pos, c.whole.Sum(nil), tc.size, tc.sha256)
			}
		})
	}
}

// TestWriteSD1Cancel: a cancelled context stops the write with its error.
func TestWriteSD1Cancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n int64
	err := WriteSD1(ctx, writerFunc(func(p []byte) (int, error) {
		if n += int64(len(p)); n > 10<<20 {
			cancel()
		}
		return len(p), nil
	}), SD1Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCheckSD1File: the quick check refuses a file of the wrong size, a
// wrong header and wrong values, naming what differs. (The files are
// sparse: the right size costs no disk. A file that passes is checked in
// internal/sdtest, which makes one.)
func TestCheckSD1File(t *testing.T) {
	dir := t.TempDir()
	hdr, _ := sd1Header(SD1Options{})
	sparse := func(name string, size int64, head []byte) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(head); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badHdr := bytes.Clone(hdr)
	badHdr[100] ^= 1
	tests := []struct {
		name string
		path string
		o    SD1Options
		want string
	}{
		{"missing", filepath.Join(dir, "nope"), SD1Options{}, "no such file"},
		{"size", sparse("short", 1000, hdr[:100]), SD1Options{}, "1000 bytes, sd15-rand (F16) has 2132625446"},
		{"f16 as f32", sparse("f16", sd1Bytes, hdr), SD1Options{F32: true}, "sd15-rand (F32) has 4265096604"},
		{"header", sparse("hdr", sd1Bytes, badHdr), SD1Options{}, "the header is not sd15-rand's"},
		{"values", sparse("zeros", sd1Bytes, hdr), SD1Options{}, `tensor "cond_stage_model.transformer.text_model.embeddings.position_embedding.weight": elements 0..255 are not sd15-rand's`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSD1File(tc.path, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if SD1Size(SD1Options{}) != sd1Bytes || SD1Size(SD1Options{F32: true}) != sd1F32Bytes {
		t.Errorf("SD1Size = %d, %d", SD1Size(SD1Options{}), SD1Size(SD1Options{F32: true}))
	}
}
