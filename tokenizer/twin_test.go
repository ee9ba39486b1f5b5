package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomText mixes words, spaces, newlines, multi-byte characters and
// (when invalid) stray bytes.
func randomText(rng *rand.Rand, n int, invalid bool) string {
	parts := []string{"the", "▁", " ", "  ", "\n", "\t", "a", "ing", "Hello", "world", "é", "日本", "🦙", "'s", "123", ",", "!!", "\u00a0", "Ω", "x"}
	var b []byte
	for len(b) < n {
		if invalid && rng.IntN(20) == 0 {
			b = append(b, byte(0x80+rng.IntN(0x80)))
			continue
		}
		b = append(b, parts[rng.IntN(len(parts))]...)
	}
	return string(b)
}

// TestSPMChunking checks the cut-and-cache SentencePiece path against
// merging the whole escaped text at once (the reference algorithm).
func TestSPMChunking(t *testing.T) {
	for _, rel := range []string{"vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-baichuan.gguf", "models/stories260K.gguf"} {
		tok := load(t, rel)
		rng := rand.New(rand.NewPCG(7, uint64(len(rel))))
		for i := 0; i < 300; i++ {
			text := appendEscaped(nil, " "+randomText(rng, rng.IntN(200), i%3 == 0))
			fast, err := tok.encodeSPM(text, nil)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := tok.encodeSPMWhole(&spmState{}, text, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(fast) != fmt.Sprint(slow) {
				t.Fatalf("%s %q:\nchunked %v\n  whole %v", rel, text, fast, slow)
			}
		}
	}
}

// TestBPEMergeTwins checks the flat-array merge against the priority-queue
// merge on random words, long and short.
func TestBPEMergeTwins(t *testing.T) {
	for _, rel := range []string{"vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-deepseek-llm.gguf"} {
		tok := load(t, rel)
		rng := rand.New(rand.NewPCG(3, uint64(len(rel))))
		s := &bpeState{}
		for i := 0; i < 500; i++ {
			w := randomText(rng, 1+rng.IntN(120), i%4 == 0)
			short := append([]int32(nil), tok.bpe.mergeShort(s, w)...)
			long := tok.bpe.mergeLong(s, w)
			if fmt.Sprint(short) != fmt.Sprint(long) {
				t.Fatalf("%s %q:\nflat %v\nheap %v", rel, w, short, long)
			}
		}
	}
}

// partitionSlow is llama.cpp's tokenizer_st_partition written literally:
// for each special token in priority order, for each raw fragment, split
// at every leftmost occurrence.
func (t *Tokenizer) partitionSlow(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	var order []int
	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 && (parseSpecial || a&(attrControl|attrUnknown) == 0) {
			order = append(order, id)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return t.specialPrio[a] - t.specialPrio[b] })
	frags := []fragment{{id: -1, start: 0, end: len(text)}}
	for _, id := range order {
		tokText, a := t.tokens[id], t.attrs[id]
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			base, end := f.start, f.end
			for base < end {
				i := strings.Index(text[base:end], tokText)
				if i < 0 {
					break
				}
				m := base + i
				left := m
				if a&attrLstrip != 0 {
					for left > base && isSpaceASCII(text[left-1]) {
						left--
					}
				}
				if left > base {
					next = append(next, fragment{id: -1, start: base, end: left})
				}
				next = append(next, fragment{id: int32(id), start: m, end: m + len(tokText)})
				base = m + len(tokText)
				if a&attrRstrip != 0 {
					for base < end && isSpaceASCII(text[base]) {
						base++
					}
				}
			}
			if base < end {
				next = append(next, fragment{id: -1, start: base, end: end})
			}
		}
		frags = next
	}
	return frags
}

// TestPartitionTwin compares the one-pass partition with the literal one.
func TestPartitionTwin(t *testing.T) {
	for _, rel := range []string{"vocab/ggml-vocab-phi-3.gguf", "vocab/ggml-vocab-gpt-neox.gguf", "vocab/ggml-vocab-starcoder.gguf"} {
		tok := load(t, rel)
		var specials []string
		for id, a := range tok.attrs {
			if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
				specials = append(specials, tok.tokens[id])
			}
		}
		rng := rand.New(rand.NewPCG(11, uint64(len(rel))))
		for i := 0; i < 400; i++ {
			var b strings.Builder
			for b.Len() < rng.IntN(120) {
				switch rng.IntN(4) {
				case 0:
					s := specials[rng.IntN(len(specials))]
					if rng.IntN(3) == 0 && len(s) > 2 {
						s = s[:len(s)/2] // a partial occurrence
					}
					b.WriteString(s)
				case 1:
					b.WriteString(strings.Repeat(" ", rng.IntN(30)))
				default:
					b.WriteString(randomText(rng, rng.IntN(10), false))
				}
			}
			text := b.String()
			for _, ps := range []bool{false, true} {
				fast := tok.partition(text, ps, nil)
				slow := tok.partitionSlow(text, ps)
				if fmt.Sprint(fast) != fmt.Sprint(slow) {
					t.Fatalf("%s parseSpecial=%v %q:\nfast %v\nslow %v", rel, ps, text, fast, slow)
				}
			}
		}
	}
}
