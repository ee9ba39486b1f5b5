package tokenizer

import (
	"fmt"
	"math/rand/v2"
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
