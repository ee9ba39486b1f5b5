package sample

import (
	"math"
	"strings"
	"testing"
)

// FuzzStopMatcher checks the matcher's contract on arbitrary text cut at
// arbitrary places: the output is the text before the stop string that is
// complete first (earliest end; at equal ends, earliest start).
func FuzzStopMatcher(f *testing.F) {
	f.Add("hello</s>world", "</s>", "\n\n", uint64(12345))
	f.Add("aaab", "aab", "x", uint64(1))
	f.Add("日本語<|im_end|>", "<|im_end|>", "語<", uint64(99))
	f.Add("000100000", "010000", "1", uint64(0)) // found by fuzzing: a later start that completes first wins
	f.Fuzz(func(t *testing.T, text, stop1, stop2 string, cuts uint64) {
		stops := []string{stop1, stop2}
		want, end := text, -1
		for _, s := range stops {
			if s == "" {
				continue
			}
			i := strings.Index(text, s)
			if i < 0 {
				continue
			}
			if e := i + len(s); end < 0 || e < end || e == end && i < len(want) {
				want, end = text[:i], e
			}
		}
		m := NewStopMatcher(stops)
		var out strings.Builder
		rest := text
		for rest != "" {
			k := 1 + int(cuts%5)
			cuts = cuts/5 + 7
			k = min(k, len(rest))
			e, stopped := m.Push(rest[:k])
			out.WriteString(e)
			rest = rest[k:]
			if stopped {
				break
			}
		}
		out.WriteString(m.Flush())
		if out.String() != want {
			t.Fatalf("text %q stops %q: output %q, want %q", text, stops, out.String(), want)
		}
	})
}

// FuzzSample runs the sampler on arbitrary logits: it must return a valid
// id (or -1 for no logits) and never panic.
func FuzzSample(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64}, float32(0.8), 2, float32(0.9), float32(0.1), uint64(1))
	f.Fuzz(func(t *testing.T, raw []byte, temp float32, topK int, topP, minP float32, seed uint64) {
		logits := make([]float32, len(raw)/4)
		for i := range logits {
			b := raw[4*i:]
			logits[i] = math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
		}
		s := New(Params{Temperature: temp, TopK: topK, TopP: topP, MinP: minP, RepeatPenalty: 1.2, PenaltyLastN: 8, Seed: seed})
		id := s.Sample(logits, []int{0, 1, -5, 1 << 30})
		if len(logits) == 0 && id != -1 || len(logits) > 0 && (id < 0 || id >= len(logits)) {
			t.Fatalf("Sample over %d logits returned %d", len(logits), id)
		}
	})
}
