package engine

import (
	"math/rand/v2"
	"testing"
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
