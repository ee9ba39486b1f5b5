package imageio

import (
	"bytes"
	"compress/zlib"
	"errors"
	"image"
	"image/png"
	"math"
	"testing"
)

func testImage() *image.NRGBA {
	s := make([]uint8, 3*5*7)
	for i := range s {
		s[i] = uint8(i * 7)
	}
	img, _ := RGB8(s, 5, 7)
	return img
}

func TestRoundTrip(t *testing.T) {
	texts := []Text{
		{KeyParameters, "a café at dawn\nSteps: 4, Seed: 42, Size: 7x5, Model: taef2"},
		{KeyJob, `{"seed":42,"model_sha256":"abc","note":"日本語 ✓"}`},
		{"Comment", "with a NUL \x00 inside"},
	}
	var buf bytes.Buffer
	if err := Encode(&buf, testImage(), texts); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	for _, c := range []struct{ typ, key string }{{"tEXt", KeyParameters}, {"iTXt", KeyJob}, {"iTXt", "Comment"}} {
		if !bytes.Contains(data, []byte(c.typ+c.key)) {
			t.Errorf("%s not stored as %s", c.key, c.typ)
		}
	}
	got, err := ReadText(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(texts) {
		t.Fatalf("read %d texts, want %d", len(got), len(texts))
	}
	for i := range texts {
		if got[i] != texts[i] {
			t.Errorf("text %d: %q, want %q", i, got[i], texts[i])
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := testImage()
	for y := 0; y < 5; y++ {
		for x := 0; x < 7; x++ {
			r1, g1, b1, _ := img.At(x, y).RGBA()
			r2, g2, b2, _ := want.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				t.Fatalf("pixel %d,%d differs", x, y)
			}
		}
	}
	p, h, w := Planar(img)
	if h != 5 || w != 7 || p[len(p)-1] != float32(testImage().Pix[4*34+2])/255 {
		t.Fatalf("planar %dx%d last %v", h, w, p[len(p)-1])
	}
}

func TestCompressedText(t *testing.T) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write([]byte("compressed ✓"))
	zw.Close()
	var buf bytes.Buffer
	if err := Encode(&buf, testImage(), nil); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	var out bytes.Buffer
	out.Write(b[:33])
	writeChunk(&out, "iTXt", append([]byte("k\x00\x01\x00en\x00\x00"), z.Bytes()...))
	writeChunk(&out, "zTXt", append([]byte("z\x00\x00"), z.Bytes()[:0]...))
	out.Write(b[33:])
	if _, err := ReadText(bytes.NewReader(out.Bytes())); err == nil {
		t.Fatal("empty zTXt stream accepted")
	}
	out.Reset()
	out.Write(b[:33])
	writeChunk(&out, "iTXt", append([]byte("k\x00\x01\x00en\x00\x00"), z.Bytes()...))
	out.Write(b[33:])
	got, err := ReadText(bytes.NewReader(out.Bytes()))
	if err != nil || len(got) != 1 || got[0].Value != "compressed ✓" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadTextErrors(t *testing.T) {
	var buf bytes.Buffer
	Encode(&buf, testImage(), []Text{{"k", "v"}})
	good := buf.Bytes()
	badCRC := append([]byte(nil), good...)
	i := bytes.Index(badCRC, []byte("tEXtk"))
	badCRC[i+6] ^= 1 // flip a bit of the value
	cases := map[string][]byte{
		"not png":   []byte("GIF89a........"),
		"bad crc":   badCRC,
		"truncated": good[:len(good)-20],
	}
	for name, data := range cases {
		if _, err := ReadText(bytes.NewReader(data)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, k := range []string{"", " lead", "trail ", "a  b", string(make([]byte, 80)), "tab\t"} {
		if err := Encode(&bytes.Buffer{}, testImage(), []Text{{k, "v"}}); err == nil {
			t.Errorf("keyword %q accepted", k)
		}
	}
}

func TestQuantize(t *testing.T) {
	in := []float32{0, 1, -0.1, 1.2, float32(math.NaN()), 0.5}
	want := []uint8{0, 255, 0, 255, 0, 128} // 127.5 rounds to even
	got := Quantize(in)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Quantize(%v) = %d, want %d", in[i], got[i], want[i])
		}
	}
}

func FuzzReadText(f *testing.F) {
	var buf bytes.Buffer
	Encode(&buf, testImage(), []Text{{KeyParameters, "p"}, {KeyJob, "✓"}})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		texts, err := ReadText(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, tx := range texts {
			if tx.Key == "" {
				t.Fatal("empty key returned")
			}
		}
	})
}
