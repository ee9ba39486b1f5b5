package synth

import (
	"testing"

	"github.com/glassbox-ai/glassbox/tokenizer"
)

// TestSyntheticVocabTokenizes loads the synthetic vocabulary with the
// project's tokenizer: text round-trips, common words become whole pieces
// and unknown characters fall back to bytes.
func TestSyntheticVocabTokenizes(t *testing.T) {
	f := writeTiny(t, Options{Config: Config{Name: "v", Dim: 64, Layers: 1, NumHeads: 2, NumKVHeads: 2, HiddenDim: 64,
		VocabSize: 32000, CtxLen: 64, RopeBase: 10000, NormEps: 1e-5}, Format: "F32"})
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"the cat sat on the mat", "Hello, World! 123", "naïve 日本 👋\n\ttabs"} {
		ids, err := tok.Encode(text, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if ids[0] != 1 {
			t.Errorf("%q: first id %d, want BOS 1", text, ids[0])
		}
		if got := tok.Decode(ids[1:]); got != text {
			t.Errorf("%q: decodes to %q", text, got)
		}
		if text == "the cat sat on the mat" && len(ids) > 8 {
			t.Errorf("%q: %d tokens %v, want whole-word pieces", text, len(ids), ids)
		}
	}
}
