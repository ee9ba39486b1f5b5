package clip

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"strings"
	"sync"
)

// The ids of the vocabulary (OpenAI CLIP, as stable-diffusion.cpp's
// CLIPTokenizer::load_from_merges builds it): 0..255 the GPT-2
// byte-to-unicode characters, 256..511 the same with "</w>" (a byte that
// ends a word), 512..49405 one per merge in rank order, then the two
// special tokens.
const (
	NumMerges = 48894 // merges used: lines 1..48894 of the merge file
	BOS       = 49406 // <|startoftext|>
	EOS       = 49407 // <|endoftext|>; also the padding and the unknown token
	Pad       = EOS
	VocabSize = 49408
)

//go:embed vocab/bpe_simple_vocab_16e6.txt.gz
var mergesGz []byte

// tables are the BPE tables, built once on first use.
type tables struct {
	byteID    [256]int32        // id of byte b as a word's inner symbol
	byteEndID [256]int32        // id of byte b ending a word (with "</w>")
	merges    map[uint64]uint64 // (left id << 32 | right id) → (rank << 32 | merged id)
}

var (
	tablesOnce sync.Once
	theTables  *tables
	tablesErr  error
)

// vocab returns the tables, building them on the first call. The build
// only fails if the embedded file is damaged (a broken build).
func vocab() (*tables, error) {
	tablesOnce.Do(func() { theTables, tablesErr = buildTables(mergesGz) })
	return theTables, tablesErr
}

// byteRunes returns GPT-2's bytes_to_unicode in its order: the printable
// bytes '!'..'~', 161..172 and 174..255 map to themselves, the other 68
// bytes to U+0100, U+0101, ... in increasing byte order. order[i] is the
// byte whose character has id i.
func byteRunes() (order [256]byte, r [256]rune) {
	n := 0
	printable := func(b int) bool { return b >= '!' && b <= '~' || b >= 161 && b <= 172 || b >= 174 }
	for b := range 256 {
		if printable(b) {
			order[n], r[b] = byte(b), rune(b)
			n++
		}
	}
	extra := 0
	for b := range 256 {
		if !printable(b) {
			order[n], r[b] = byte(b), rune(256+extra)
			n++
			extra++
		}
	}
	return order, r
}

// buildTables reads the first NumMerges merges of the gzipped merge file
// and resolves them to ids. The text is decompressed only as far as it
// is needed (about 400 KB of 3.2 MB), and the strings are slices of it
// and of one buffer of merged symbols, so the build allocates little.
func buildTables(gz []byte) (*tables, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("clip: embedded merges: %w", err)
	}
	var raw []byte
	chunk := make([]byte, 64<<10)
	for lines := 0; lines <= NumMerges; {
		n, err := zr.Read(chunk)
		lines += bytes.Count(chunk[:n], []byte{'\n'})
		raw = append(raw, chunk[:n]...)
		if err != nil {
			if lines <= NumMerges {
				return nil, fmt.Errorf("clip: embedded merges: %d lines, want %d: %v", lines, NumMerges+1, err)
			}
			break
		}
	}
	text := string(raw)
	_, text, _ = strings.Cut(text, "\n") // the header line

	type merge struct{ left, right, joined string }
	merges := make([]merge, NumMerges)
	var joined strings.Builder
	joined.Grow(len(raw) / 8)
	for i := range merges {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		left, right, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("clip: embedded merges: line %d has no space", i+1)
		}
		merges[i] = merge{left: left, right: right}
		joined.WriteString(left)
		joined.WriteString(right)
	}
	all := joined.String()
	for i := range merges {
		n := len(merges[i].left) + len(merges[i].right)
		merges[i].joined, all = all[:n], all[n:]
	}

	t := &tables{merges: make(map[uint64]uint64, NumMerges)}
	order, r := byteRunes()
	ids := make(map[string]int32, VocabSize) // the encoder: a later duplicate wins, as in std::map assignment
	for i, b := range order {
		ids[string(r[b])] = int32(i)
		ids[string(r[b])+"</w>"] = int32(256 + i)
	}
	for i, m := range merges {
		ids[m.joined] = int32(512 + i)
	}
	for b := range 256 {
		t.byteID[b], t.byteEndID[b] = ids[string(r[b])], ids[string(r[b])+"</w>"]
	}
	for rank, m := range merges {
		l, okl := ids[m.left]
		rr, okr := ids[m.right]
		if !okl || !okr {
			continue // a merge of strings that are no symbol can never apply
		}
		t.merges[uint64(l)<<32|uint64(rr)] = uint64(rank)<<32 | uint64(ids[m.joined])
	}
	return t, nil
}
