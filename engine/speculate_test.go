package engine

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/sample"
)

func loadText(t *testing.T, rel string) *Text {
	t.Helper()
	tx, err := LoadText(context.Background(), shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// TestSpeculate: decoding with a draft model gives exactly the tokens
// plain decoding gives — greedy and sampled, whatever the draft (the same
// weights, coarser quantizations of them), the proposals per step and the
// confidence cut, up to a token limit or a full context — and the draft's
// proposals are counted.
func TestSpeculate(t *testing.T) {
	ctx := context.Background()
	target := loadText(t, "models/tiny-llama-Q8_0.gguf")
	var prompt []int
	ids, err := os.ReadFile(shared.Path(t, "golden/seq48.ids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(ids))[:12] {
		id, _ := strconv.Atoi(f)
		prompt = append(prompt, id)
	}
	greedy := sample.Params{RepeatPenalty: 1}
	sampled := sample.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 7, RepeatPenalty: 1.1, PenaltyLastN: 64}
	for _, tc := range []struct {
		name   string
		params sample.Params
		max    int // tokens to generate
		ctx    int // context (0: the model's)
	}{
		{"greedy", greedy, 80, 0},
		{"sampled", sampled, 80, 0},
		{"to a full context", greedy, 0, len(prompt) + 30},
		{"a short limit", sampled, 3, 0},
	} {
		req := TextRequest{PromptIDs: prompt, Sampling: tc.params, MaxTokens: tc.max, Session: model.SessionOptions{CtxLen: tc.ctx}}
		plain, err := target.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, draft := range []string{"Q8_0", "Q4_0", "Q2_K"} {
			d := loadText(t, "models/tiny-llama-"+draft+".gguf")
			if err := target.CheckDraft(d); err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{1, 4, 9} {
				for _, minProb := range []float64{0, 0.6} {
					r := req
					r.Draft, r.DraftMax, r.DraftMinProb = d, k, minProb
					res, err := target.Generate(ctx, r)
					if err != nil {
						t.Fatal(err)
					}
					what := tc.name + ", draft " + draft + ", k " + strconv.Itoa(k) + ", min prob " + strconv.FormatFloat(minProb, 'g', -1, 64)
					if !slices.Equal(res.Tokens, plain.Tokens) || res.StopReason != plain.StopReason || res.Text != plain.Text {
						t.Errorf("%s: tokens %v (%s), plain %v (%s)", what, res.Tokens, res.StopReason, plain.Tokens, plain.StopReason)
					}
					if res.Accepted > res.Drafted || res.Passes == 0 || res.Passes >= len(res.Tokens) && res.Accepted > 0 ||
						minProb == 0 && len(res.Tokens) > 2 && res.Drafted == 0 || draft == "Q8_0" && tc.params.Temperature == 0 && res.Accepted != res.Drafted {
						t.Errorf("%s: %s (%d tokens)", what, res.SpeculationNote(), len(res.Tokens))
					}
				}
			}
		}
	}
}

// TestSpeculateCached: with sessions kept for both models, a chat's next
// turn finds the conversation in the draft's cache as in the model's, and
// the tokens are still plain decoding's.
func TestSpeculateCached(t *testing.T) {
	ctx := context.Background()
	target, d := loadText(t, "models/tiny-llama-Q8_0.gguf"), loadText(t, "models/tiny-llama-Q4_0.gguf")
	cache, dcache := NewSessionCache(1), NewSessionCache(1)
	defer cache.Close()
	defer dcache.Close()
	prompt := []int{1, 317, 269, 368, 302, 263}
	for turn := range 3 {
		req := TextRequest{PromptIDs: prompt, Sampling: sample.Params{RepeatPenalty: 1}, MaxTokens: 12, Session: model.SessionOptions{CtxLen: 128}}
		plain, err := target.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		req.Cache, req.Draft, req.DraftCache, req.DraftMax = cache, d, dcache, 3
		res, err := target.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Tokens, plain.Tokens) {
			t.Errorf("turn %d: tokens %v, plain %v", turn, res.Tokens, plain.Tokens)
		}
		if turn > 0 && (res.DraftCached == 0 || res.CachedTokens == 0) {
			t.Errorf("turn %d: the draft's cache held %d prompt tokens, the model's %d", turn, res.DraftCached, res.CachedTokens)
		}
		prompt = append(append(slices.Clone(prompt), res.Tokens...), 263, 302) // the next turn repeats the conversation
	}
}

// TestCheckDraft: a draft of another vocabulary is refused at load,
// naming the difference; the shared tiny models all have one vocabulary.
func TestCheckDraft(t *testing.T) {
	target := loadText(t, "models/tiny-llama-Q8_0.gguf")
	if err := target.CheckDraft(loadText(t, "models/tiny-qwen2-Q8_0.gguf")); err != nil {
		t.Errorf("the same vocabulary: %v", err)
	}
	other := shared.WithToken(t, shared.Path(t, "models/stories260K.gguf"), "other", 300, "▁glass")
	d, err := LoadText(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := target.CheckDraft(d); err == nil || !strings.HasPrefix(err.Error(), "load: the draft model's token 300 is \"▁glass\"") {
		t.Errorf("err %v", err)
	}
}
