package imageio

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"unicode/utf8"
)

// Text is one text chunk.
type Text struct {
	Key   string // 1-79 Latin-1 characters, no leading, trailing or double spaces
	Value string // UTF-8
}

// Keys other tools and glassbox use.
const (
	KeyParameters = "parameters" // generation settings, as A1111-style tools write them
	KeyJob        = "glassbox"   // JSON record of the job
)

var pngSig = []byte("\x89PNG\r\n\x1a\n")

// ErrFormat marks a malformed PNG.
var ErrFormat = errors.New("malformed PNG")

// Encode writes img as PNG with the given text chunks.
func Encode(w io.Writer, img image.Image, texts []Text) error {
	for _, t := range texts {
		if err := checkKey(t.Key); err != nil {
			return err
		}
		if !utf8.ValidString(t.Value) {
			return fmt.Errorf("deliver: PNG text %q is not valid UTF-8", t.Key)
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&buf, img); err != nil {
		return fmt.Errorf("deliver: encode PNG: %w", err)
	}
	b := buf.Bytes()
	// The stdlib writes the signature then IHDR (8+4+4+13+4 bytes) first.
	const ihdrEnd = 8 + 25
	if len(b) < ihdrEnd || string(b[12:16]) != "IHDR" {
		return fmt.Errorf("deliver: image/png wrote no IHDR first")
	}
	if _, err := w.Write(b[:ihdrEnd]); err != nil {
		return err
	}
	for _, t := range texts {
		typ, data := textChunk(t)
		if err := writeChunk(w, typ, data); err != nil {
			return err
		}
	}
	_, err := w.Write(b[ihdrEnd:])
	return err
}

func checkKey(k string) error {
	if len(k) < 1 || len(k) > 79 || k[0] == ' ' || k[len(k)-1] == ' ' {
		return fmt.Errorf("deliver: PNG text keyword %q must be 1-79 characters without leading or trailing spaces", k)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < 32 || c > 126 || (c == ' ' && i > 0 && k[i-1] == ' ') {
			return fmt.Errorf("deliver: PNG text keyword %q: only printable ASCII, no double spaces", k)
		}
	}
	return nil
}

// latin1 returns s encoded as Latin-1, or false if it cannot be, or holds NUL.
func latin1(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r == 0 || r > 0xff {
			return nil, false
		}
		out = append(out, byte(r))
	}
	return out, true
}

func textChunk(t Text) (string, []byte) {
	if v, ok := latin1(t.Value); ok {
		return "tEXt", append(append([]byte(t.Key), 0), v...)
	}
	// iTXt: keyword, NUL, compression flag 0, method 0, empty language tag,
	// NUL, empty translated keyword, NUL, UTF-8 text.
	d := append([]byte(t.Key), 0, 0, 0, 0, 0)
	return "iTXt", append(d, t.Value...)
}

func writeChunk(w io.Writer, typ string, data []byte) error {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	crc.Write(data)
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], crc.Sum32())
	for _, p := range [][]byte{hdr[:], data, tail[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// maxText bounds one decompressed zTXt/iTXt value.
const maxText = 16 << 20

// ReadText returns the text chunks (tEXt, zTXt, iTXt) of a PNG stream, in
// file order, checking every chunk's CRC. It stops at IEND.
func ReadText(r io.Reader) ([]Text, error) {
	var sig [8]byte
	if _, err := io.ReadFull(r, sig[:]); err != nil || !bytes.Equal(sig[:], pngSig) {
		return nil, fmt.Errorf("%w: no PNG signature", ErrFormat)
	}
	var texts []Text
	off := int64(8)
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("%w: at byte %d: truncated chunk header", ErrFormat, off)
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		typ := string(hdr[4:])
		if n > 1<<31-1 {
			return nil, fmt.Errorf("%w: at byte %d: chunk %q of %d bytes", ErrFormat, off, typ, n)
		}
		isText := typ == "tEXt" || typ == "zTXt" || typ == "iTXt"
		crc := crc32.NewIEEE()
		crc.Write(hdr[4:])
		var data []byte
		if isText {
			if n > maxText {
				return nil, fmt.Errorf("%w: at byte %d: %s chunk of %d bytes", ErrFormat, off, typ, n)
			}
			data = make([]byte, n)
			if _, err := io.ReadFull(r, data); err != nil {
				return nil, fmt.Errorf("%w: at byte %d: truncated %s chunk", ErrFormat, off, typ)
			}
			crc.Write(data)
		} else if _, err := io.CopyN(crc, r, int64(n)); err != nil {
			return nil, fmt.Errorf("%w: at byte %d: truncated %s chunk", ErrFormat, off, typ)
		}
		var tail [4]byte
		if _, err := io.ReadFull(r, tail[:]); err != nil {
			return nil, fmt.Errorf("%w: at byte %d: truncated %s chunk", ErrFormat, off, typ)
		}
		if binary.BigEndian.Uint32(tail[:]) != crc.Sum32() {
			return nil, fmt.Errorf("%w: at byte %d: %s chunk CRC mismatch", ErrFormat, off, typ)
		}
		if isText {
			t, err := parseText(typ, data)
			if err != nil {
				return nil, fmt.Errorf("%w: at byte %d: %v", ErrFormat, off, err)
			}
			texts = append(texts, t)
		}
		if typ == "IEND" {
			return texts, nil
		}
		off += 12 + int64(n)
	}
}

func parseText(typ string, d []byte) (Text, error) {
	k := bytes.IndexByte(d, 0)
	if k < 1 || k > 79 {
		return Text{}, fmt.Errorf("%s chunk: bad keyword", typ)
	}
	key := fromLatin1(d[:k])
	rest := d[k+1:]
	switch typ {
	case "tEXt":
		return Text{key, fromLatin1(rest)}, nil
	case "zTXt":
		if len(rest) < 1 || rest[0] != 0 {
			return Text{}, fmt.Errorf("zTXt %q: unknown compression method", key)
		}
		v, err := inflate(rest[1:])
		if err != nil {
			return Text{}, fmt.Errorf("zTXt %q: %v", key, err)
		}
		return Text{key, fromLatin1(v)}, nil
	}
	// iTXt
	if len(rest) < 2 {
		return Text{}, fmt.Errorf("iTXt %q: truncated", key)
	}
	compressed, method := rest[0], rest[1]
	rest = rest[2:]
	for range 2 { // language tag, translated keyword
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return Text{}, fmt.Errorf("iTXt %q: truncated", key)
		}
		rest = rest[i+1:]
	}
	if compressed == 1 {
		if method != 0 {
			return Text{}, fmt.Errorf("iTXt %q: unknown compression method %d", key, method)
		}
		v, err := inflate(rest)
		if err != nil {
			return Text{}, fmt.Errorf("iTXt %q: %v", key, err)
		}
		rest = v
	}
	if !utf8.Valid(rest) {
		return Text{}, fmt.Errorf("iTXt %q: text is not UTF-8", key)
	}
	return Text{key, string(rest)}, nil
}

func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	v, err := io.ReadAll(io.LimitReader(zr, maxText+1))
	if err != nil {
		return nil, err
	}
	if len(v) > maxText {
		return nil, fmt.Errorf("decompresses to more than %d bytes", maxText)
	}
	return v, nil
}

func fromLatin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}
