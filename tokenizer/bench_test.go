package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// benchText returns about n bytes of synthetic prose: Zipf-distributed
// pseudo-words (so a word cache sees realistic reuse, not one repeated
// paragraph), numbers, punctuation, line breaks and some non-Latin words.
func benchText(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	syl := []string{"ka", "ro", "ti", "en", "the", "st", "ing", "al", "qu", "ver", "on", "mi", "za", "pre", "ous", "ly"}
	words := make([]string, 5000)
	for i := range words {
		var b strings.Builder
		for k := 1 + rng.IntN(4); k > 0; k-- {
			b.WriteString(syl[rng.IntN(len(syl))])
		}
		w := b.String()
		if rng.IntN(10) == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		words[i] = w
	}
	extra := []string{"привет", "мир", "日本語", "テスト", "Ελληνικά", "🙂", "naïve", "façade"}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(words)-1))
	var b strings.Builder
	for b.Len() < n {
		switch r := rng.IntN(100); {
		case r < 2:
			b.WriteString(extra[rng.IntN(len(extra))])
		case r < 5:
			b.WriteString(strings.Repeat("1234567890", 1)[:1+rng.IntN(9)])
		default:
			b.WriteString(words[zipf.Uint64()])
		}
		switch r := rng.IntN(100); {
		case r < 6:
			b.WriteString(", ")
		case r < 9:
			b.WriteString(".\n")
		case r < 10:
			b.WriteString("'s ")
		default:
			b.WriteString(" ")
		}
	}
	return b.String()[:n]
}

func benchEncode(b *testing.B, rel string) {
	tok := load(b, rel)
	text := benchText(1 << 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	c0, n := cpuTime(), 0
	for b.Loop() {
		if _, err := tok.Encode(text, false, false); err != nil {
			b.Fatal(err)
		}
		n++
	}
	if cpu := cpuTime() - c0; cpu > 0 {
		b.ReportMetric(float64(n*len(text))/1e6/cpu.Seconds(), "MB/cpu-s")
	}
}

func BenchmarkEncodeSPM(b *testing.B)         { benchEncode(b, "vocab/ggml-vocab-llama-spm.gguf") }
func BenchmarkEncodeBPEGPT2(b *testing.B)     { benchEncode(b, "vocab/ggml-vocab-gpt-2.gguf") }
func BenchmarkEncodeBPEFalcon(b *testing.B)   { benchEncode(b, "vocab/ggml-vocab-falcon.gguf") }
func BenchmarkEncodeBPEDeepseek(b *testing.B) { benchEncode(b, "vocab/ggml-vocab-deepseek-llm.gguf") }
func BenchmarkEncodeWPM(b *testing.B)         { benchEncode(b, "vocab/ggml-vocab-bert-bge.gguf") }

func BenchmarkStreamDecode(b *testing.B) {
	tok := load(b, "vocab/ggml-vocab-gpt-2.gguf")
	text := benchText(1 << 20)
	ids, _ := tok.Encode(text, false, false)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		d := tok.NewStreamDecoder()
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
}

// BenchmarkLoad measures FromGGUF on a 102400-token byte-level vocabulary
// (the GGUF header parse included).
func BenchmarkLoad(b *testing.B) {
	path := shared.Path(b, "vocab/ggml-vocab-deepseek-llm.gguf")
	b.ReportAllocs()
	for b.Loop() {
		f, err := gguf.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := FromGGUF(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
