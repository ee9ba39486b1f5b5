package sample

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		emits   []string // per Push
		stopped int      // index of the Push that stops, -1 for none
		flush   string
	}{
		{"no stops passes through", nil, []string{"a", "b"}, []string{"a", "b"}, -1, ""},
		{"empty stop ignored", []string{""}, []string{"ab"}, []string{"ab"}, -1, ""},
		{"whole stop in one piece", []string{"END"}, []string{"abcENDxyz"}, []string{"abc"}, 0, ""},
		{"split across pieces", []string{"END"}, []string{"ab", "cE", "N", "Dz"}, []string{"ab", "c", "", ""}, 3, ""},
		{"false start released", []string{"END"}, []string{"aE", "Nx"}, []string{"a", "ENx"}, -1, ""},
		{"held prefix flushed at end", []string{"END"}, []string{"abcEN"}, []string{"abc"}, -1, "EN"},
		{"earliest stop wins", []string{"bc", "ab"}, []string{"xabc"}, []string{"x"}, 0, ""},
		{"first complete wins at the same start", []string{"a", "ab"}, []string{"xab"}, []string{"x"}, 0, ""},
		{"first complete wins over an earlier start", []string{"010000", "1"}, []string{"000100000"}, []string{"000"}, 0, ""},
		{"same cut when streamed", []string{"010000", "1"}, []string{"00", "01", "00000"}, []string{"0", "00", ""}, 1, ""},
		{"overlapping prefix", []string{"aab"}, []string{"a", "a", "a", "b"}, []string{"", "", "a", ""}, 3, ""},
		{"after stop nothing", []string{"X"}, []string{"aXb", "more"}, []string{"a", ""}, 0, ""},
		{"multibyte stop split mid-character", []string{"é!"}, []string{"caf", "\xc3", "\xa9", "!"}, []string{"caf", "", "", ""}, 3, ""},
		{"chat turn end", []string{"<|im_end|>"}, []string{"Hello", "<|", "im", "_end", "|>"}, []string{"Hello", "", "", "", ""}, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewStopMatcher(tt.stops)
			stoppedAt := -1
			for i, p := range tt.pieces {
				emit, stopped := m.Push(p)
				if emit != tt.emits[i] {
					t.Errorf("Push(%q) #%d emitted %q, want %q", p, i, emit, tt.emits[i])
				}
				if stopped && stoppedAt < 0 {
					stoppedAt = i
				}
			}
			if stoppedAt != tt.stopped {
				t.Errorf("stopped at push %d, want %d", stoppedAt, tt.stopped)
			}
			if f := m.Flush(); f != tt.flush {
				t.Errorf("Flush() = %q, want %q", f, tt.flush)
			}
		})
	}
}

// TestStopMatcherRandomSplits checks the defining property on random
// texts cut at random places: the output is exactly the text before the
// first stop string, whatever the cuts, and never holds invalid UTF-8 when
// the input is valid.
func TestStopMatcherRandomSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	alphabet := []string{"a", "b", "<", "|", ">", "é", "日", "\n", "</s>", "<|eot|>"}
	stops := []string{"</s>", "<|eot|>", "\n\n", "éé"}
	for iter := 0; iter < 3000; iter++ {
		var b strings.Builder
		for n := r.IntN(40); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		want := text
		cut := len(text)
		for _, s := range stops {
			if i := strings.Index(text, s); i >= 0 && i < cut {
				cut = i
			}
		}
		want = text[:cut]
		m := NewStopMatcher(stops)
		var out strings.Builder
		stopped := false
		for rest := text; rest != "" && !stopped; {
			k := 1 + r.IntN(min(len(rest), 6))
			var e string
			e, stopped = m.Push(rest[:k])
			rest = rest[k:]
			out.WriteString(e)
		}
		out.WriteString(m.Flush())
		if out.String() != want {
			t.Fatalf("text %q: output %q, want %q", text, out.String(), want)
		}
		if stopped != (cut < len(text)) {
			t.Fatalf("text %q: stopped = %v, want %v", text, stopped, cut < len(text))
		}
	}
	// Character-aligned pieces (as from a streaming detokenizer) give
	// valid UTF-8 in every emitted piece.
	m := NewStopMatcher([]string{"日本"})
	for _, p := range []string{"é", "日", "x", "日", "本"} {
		e, _ := m.Push(p)
		if !utf8.ValidString(e) {
			t.Fatalf("emitted invalid UTF-8 %q", e)
		}
	}
}

func BenchmarkStopMatcher(b *testing.B) {
	m := NewStopMatcher([]string{"</s>", "<|im_end|>", "\n\nUser:"})
	b.ReportAllocs()
	for b.Loop() {
		if _, stopped := m.Push(" token"); stopped {
			b.Fatal("stopped")
		}
	}
}
