package all

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
)

// TestYaRNModel: YaRN in a file's metadata. A factor of 1 changes nothing.
// A factor of 8 leaves the first position's logits as they were (it
// attends to itself alone, whatever the angles and the attention scale)
// and changes the later ones. An architecture whose attention does not
// apply YaRN's factor refuses it.
func TestYaRNModel(t *testing.T) {
	man, dir := readManifest(t)
	seq := man.Sequence.IDs[:12]
	src := filepath.Join(dir, man.Models["tiny-llama-F32"].Model)
	base := open(t, dir, man.Models["tiny-llama-F32"].Model)
	vocab := base.Config().VocabSize
	opts := model.SessionOptions{CtxLen: 64, Batch: 32, Threads: 2, KVF32: true}
	want := batchLogits(t, session(t, base, opts), seq, vocab)
	yarn := func(factor float32) []float32 {
		m := openPath(t, relabel(t, src, "llama", map[string]any{"llama.rope.scaling.type": "yarn",
			"llama.rope.scaling.factor": factor, "llama.rope.scaling.original_context_length": uint32(32)}))
		if y := m.Config().RopeYaRN; y == nil || y.Factor != factor || y.OrigCtx != 32 {
			t.Fatalf("config: %+v", m.Config().RopeYaRN)
		}
		return batchLogits(t, session(t, m, opts), seq, vocab)
	}
	one := yarn(1)
	for i := range seq {
		closeRows(t, "factor 1", i, one[i*vocab:(i+1)*vocab], want[i*vocab:(i+1)*vocab])
	}
	eight := yarn(8)
	closeRows(t, "factor 8, first position", 0, eight[:vocab], want[:vocab])
	var d float64
	for i := vocab; i < len(want); i++ {
		d = max(d, math.Abs(float64(eight[i]-want[i])))
	}
	if d < 1e-3 {
		t.Errorf("factor 8 moved the later logits by only %g", d)
	}
	f, err := gguf.Open(relabel(t, filepath.Join(dir, man.Models["tiny-phi3-F32"].Model), "phi3", map[string]any{"phi3.rope.scaling.type": "yarn",
		"phi3.rope.scaling.factor": float32(4), "phi3.rope.scaling.original_context_length": uint32(32)}))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := model.Load(f); err == nil || !strings.Contains(err.Error(), `RoPE scaling "yarn" is not supported for this architecture`) {
		t.Errorf("phi3 with YaRN: %v", err)
	}
}
