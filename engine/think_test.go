package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/sample"
)

func TestThinkSplitter(t *testing.T) {
	for _, tc := range []struct {
		open                bool
		reply, think, answr string
	}{
		{false, "<think>\nLet me see.\n</think>\n\nIt is 4.", "Let me see.\n", "It is 4."},
		{false, "\n <think>a</think>b", "a", "b"},
		{false, "It is 4.", "", "It is 4."},
		{false, "It is <think>4</think>.", "", "It is <think>4</think>."}, // only a block at the start
		{false, "  \n", "", ""},
		{false, "<thin", "", "<thin"},                                  // an unfinished tag at the end is text
		{false, "<think>never closed </thi", "never closed </thi", ""}, // …of the part it was in
		{true, "Hmm.\n</think>\n\nYes.", "Hmm.\n", "Yes."},
		{true, "</think>Yes.", "", "Yes."},
		{false, "<think></think>\n\nYes.</think>", "", "Yes.</think>"},
		{false, "<tool>x", "", "<tool>x"},
	} {
		// Every way of cutting the reply into tokens splits it the same.
		rng := rand.New(rand.NewPCG(1, uint64(len(tc.reply))))
		for trial := range 50 {
			sp := newThinkSplitter(tc.open)
			var think, answer string
			rest := tc.reply
			for rest != "" {
				n := 1 + rng.IntN(len(rest))
				if trial == 0 {
					n = len(rest) // whole
				} else if trial == 1 {
					n = 1 // byte by byte
				}
				th, an := sp.push(rest[:n])
				think, answer, rest = think+th, answer+an, rest[n:]
			}
			th, an := sp.flush()
			think, answer = think+th, answer+an
			if think != tc.think || answer != tc.answr {
				t.Fatalf("open %v, %q (trial %d): thinking %q, answer %q; want %q, %q", tc.open, tc.reply, trial, think, answer, tc.think, tc.answr)
			}
		}
	}
	for _, tc := range []struct {
		prompt string
		open   bool
	}{
		{"<|User|>hi<|Assistant|><think>\n", true},
		{"<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{"<|im_start|>assistant\n", false},
	} {
		if got := promptOpensThink(tc.prompt); got != tc.open {
			t.Errorf("promptOpensThink(%q) = %v", tc.prompt, got)
		}
	}
}

// FuzzThinkSplitter: however a reply is cut into tokens, the thinking and
// the answer come out the same as from the whole reply, and none of the
// reply's non-space text is lost but the tags.
func FuzzThinkSplitter(f *testing.F) {
	for _, s := range []string{"<think>a</think>b", " <think>\nx</thi", "plain", "<th", "</think>y"} {
		f.Add(s, false, uint8(3))
		f.Add(s, true, uint8(1))
	}
	f.Fuzz(func(t *testing.T, reply string, open bool, cut uint8) {
		whole := newThinkSplitter(open)
		wt, wa := whole.push(reply)
		ft, fa := whole.flush()
		wt, wa = wt+ft, wa+fa
		sp := newThinkSplitter(open)
		var think, answer string
		n := int(cut%7) + 1
		for rest := reply; rest != ""; {
			k := min(n, len(rest))
			th, an := sp.push(rest[:k])
			think, answer, rest = think+th, answer+an, rest[k:]
		}
		th, an := sp.flush()
		think, answer = think+th, answer+an
		if think != wt || answer != wa {
			t.Fatalf("%q (open %v) in pieces of %d: %q, %q; whole: %q, %q", reply, open, n, think, answer, wt, wa)
		}
		if len(think)+len(answer) > len(reply) {
			t.Fatalf("%q: more out than in: %q, %q", reply, think, answer)
		}
	})
}

// TestThinkFirst: with a format, a reasoning model's thinking is free and
// its answer constrained, whether the reply opens the block, the prompt
// opened it, or there is none; a </think> split over tokens closes it.
func TestThinkFirst(t *testing.T) {
	pieces := []string{"<think>", "</", "think>", "</think>", "hm", "{", "}", "\n", "x", ""} // 9: end of generation
	v := sample.NewVocab(len(pieces), func(id int) string { return pieces[id] }, func(id int) bool { return id == 9 })
	id := func(p string) int { return slices.Index(pieces, p) }
	allowed := func(c *thinkFirst) string {
		logits := make([]float32, len(pieces))
		if !c.Mask(logits) {
			return "none"
		}
		var s []string
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) {
				s = append(s, strconv.Quote(pieces[i]))
			}
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name   string
		opened bool
		reply  []string // the picks; before each, and at the end, the allowed tokens
		want   []string
	}{
		{"block", false, []string{"<think>", "hm", "</think>", "\n", "{", "}"}, []string{
			`"<think>" "{" "\n"`, // the block, or the answer's first byte
			`"<think>" "</" "think>" "</think>" "hm" "{" "}" "\n" "x" ""`,
			`"<think>" "</" "think>" "</think>" "hm" "{" "}" "\n" "x" ""`,
			`"{" "\n"`, `"{"`, `"}" "\n"`, `""`}}, // one newline of whitespace (sample/json.go)
		{"split close", true, []string{"hm", "</", "think>", "{"}, []string{
			`"<think>" "</" "think>" "</think>" "hm" "{" "}" "\n" "x" ""`,
			`"<think>" "</" "think>" "</think>" "hm" "{" "}" "\n" "x" ""`,
			`"<think>" "</" "think>" "</think>" "hm" "{" "}" "\n" "x" ""`,
			`"{" "\n"`, `"}" "\n"`}},
		{"no block", false, []string{"{"}, []string{`"<think>" "{" "\n"`, `"}" "\n"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newThinkFirst(sample.ObjectSchema().Constraint(v), id("<think>"), func(i int) string { return pieces[i] }, tc.opened)
			for i, p := range tc.reply {
				if got := allowed(c); got != tc.want[i] {
					t.Fatalf("before %q (pick %d): allowed %s, want %s", p, i, got, tc.want[i])
				}
				c.Accept(id(p))
			}
			if got := allowed(c); got != tc.want[len(tc.reply)] {
				t.Errorf("at the end: allowed %s, want %s", got, tc.want[len(tc.reply)])
			}
		})
	}
}
