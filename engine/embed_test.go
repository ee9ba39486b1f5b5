package engine

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
)

// tinyText loads the shared F32 tiny llama with its tokenizer.
func tinyText(t *testing.T) *Text {
	t.Helper()
	tx, err := LoadText(context.Background(), shared.Path(t, "models/tiny-llama-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// hiddenRows evaluates ids from position 0 of a new session and returns
// their final hidden states, [len(ids)][dim].
func hiddenRows(t *testing.T, tx *Text, ids []int) []float32 {
	t.Helper()
	s := newSession(t, tx.Model, model.SessionOptions{CtxLen: 64})
	h := make([]float32, len(ids)*tx.Model.Config().Dim)
	if err := s.(model.Embedder).Hidden(context.Background(), ids, 0, h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHiddenStatesGiveLogits: the hidden states Hidden returns are what
// the output matrix turns into the logits Forward returns, row by row (the
// file's F32 output.weight multiplied here in float64).
func TestHiddenStatesGiveLogits(t *testing.T) {
	tx := tinyText(t)
	cfg := tx.Model.Config()
	tok, err := tx.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("Once upon a time, a fox met a bird", true, false)
	if err != nil {
		t.Fatal(err)
	}
	h := hiddenRows(t, tx, ids)
	logits := make([]float32, len(ids)*cfg.VocabSize)
	if err := newSession(t, tx.Model, model.SessionOptions{CtxLen: 64}).Forward(context.Background(), ids, 0, logits); err != nil {
		t.Fatal(err)
	}
	raw, info, err := tx.File.TensorData("output.weight")
	if err != nil || info.Type.String() != "F32" {
		t.Fatalf("output.weight: %v (%v)", err, info)
	}
	worst := 0.0
	for r := range ids {
		for v := range cfg.VocabSize {
			var dot float64
			for k := range cfg.Dim {
				w := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(v*cfg.Dim+k):]))
				dot += float64(h[r*cfg.Dim+k]) * float64(w)
			}
			got := float64(logits[r*cfg.VocabSize+v])
			worst = max(worst, math.Abs(got-dot)/max(1, math.Abs(dot)))
		}
	}
	if worst > 1e-4 {
		t.Fatalf("logits differ from hidden states × output.weight by up to %.2g (relative)", worst)
	}
}

func TestEmbed(t *testing.T) {
	tx := tinyText(t)
	cfg := tx.Model.Config()
	tok, _ := tx.Tokenizer()
	ctx := context.Background()
	a, b := "Once upon a time", "The cat sat on the mat and looked at the moon for a long time"
	embed := func(req EmbedRequest) *EmbedResult {
		t.Helper()
		res, err := tx.Embed(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	near := func(what string, got, want []float32, tol float64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > tol {
				t.Fatalf("%s: value %d is %g, want %g", what, i, got[i], want[i])
			}
		}
	}
	// The reference: pooled by hand from each text's own hidden states.
	ref := func(text, pool string, normalize bool, dims int) []float32 {
		ids, _ := tok.Encode(text, true, false)
		h := hiddenRows(t, tx, ids)
		sum := make([]float64, cfg.Dim)
		for r := range ids {
			if pool == PoolMean || pool == PoolLast && r == len(ids)-1 || pool == PoolCLS && r == 0 {
				for k := range sum {
					sum[k] += float64(h[r*cfg.Dim+k])
				}
			}
		}
		if pool == PoolMean {
			for k := range sum {
				sum[k] /= float64(len(ids))
			}
		}
		return finishVector(sum, dims, normalize)
	}
	for _, pool := range []string{PoolMean, PoolLast, PoolCLS} {
		// a again after the longer b: its keys overwrite b's.
		res := embed(EmbedRequest{Inputs: []string{a, b, a}, Pooling: pool})
		near(pool+" a", res.Embeddings[0], ref(a, pool, false, 0), 1e-5)
		near(pool+" b", res.Embeddings[1], ref(b, pool, false, 0), 1e-5)
		near(pool+" a again", res.Embeddings[2], res.Embeddings[0], 0)
		// In prompt chunks of 3 tokens.
		chunked := embed(EmbedRequest{Inputs: []string{b}, Pooling: pool, Session: model.SessionOptions{Batch: 3}})
		near(pool+" b in chunks", chunked.Embeddings[0], res.Embeddings[1], 1e-4)
	}
	// The model names no pooling: mean, as Ollama's.
	res := embed(EmbedRequest{Inputs: []string{b}, Normalize: true})
	if res.Pooling != PoolMean || res.Dim != cfg.Dim || res.PromptTokens() != res.Tokens[0] {
		t.Fatalf("pooling %q, dim %d, tokens %v", res.Pooling, res.Dim, res.Tokens)
	}
	near("normalized", res.Embeddings[0], ref(b, PoolMean, true, 0), 1e-6)
	var ss float64
	for _, v := range res.Embeddings[0] {
		ss += float64(v) * float64(v)
	}
	if math.Abs(ss-1) > 1e-5 {
		t.Fatalf("normalized vector has squared length %g", ss)
	}
	short := embed(EmbedRequest{Inputs: []string{b}, Normalize: true, Dimensions: 16})
	near("16 dimensions", short.Embeddings[0], ref(b, PoolMean, true, 16), 1e-6)

	// Longer than the context: an encode-stage error with both numbers,
	// or cut with truncate and said so.
	n := len(mustEncode(t, tx, b))
	_, err := tx.Embed(ctx, EmbedRequest{Inputs: []string{a, b}, Session: model.SessionOptions{CtxLen: 6}})
	if st, _ := pipeline.StageOf(err); st != pipeline.StageEncode || !strings.Contains(err.Error(), "input 1 has "+itoa(n)+" tokens but the context holds 6") {
		t.Fatalf("too long: %v", err)
	}
	cut := embed(EmbedRequest{Inputs: []string{a, b}, Truncate: true, Session: model.SessionOptions{CtxLen: 6}})
	if len(cut.Truncated) != 1 || cut.Truncated[0] != 1 || cut.Tokens[1] != 6 {
		t.Fatalf("truncated %v, tokens %v", cut.Truncated, cut.Tokens)
	}

	for _, tc := range []struct {
		req  EmbedRequest
		want string
	}{
		{EmbedRequest{Inputs: []string{a}, Pooling: "max"}, `pooling "max" is not supported`},
		{EmbedRequest{Inputs: []string{a}, Dimensions: cfg.Dim + 1}, "dimensions " + itoa(cfg.Dim+1) + ": the model's embeddings have " + itoa(cfg.Dim)},
		{EmbedRequest{}, "no inputs to embed"},
		{EmbedRequest{Inputs: []string{a, ""}}, ""},
	} {
		_, err := tx.Embed(ctx, tc.req)
		if tc.want == "" {
			// An empty input is BOS alone where the vocabulary adds it.
			if tok.AddBOS() && err != nil || !tok.AddBOS() && err == nil {
				t.Errorf("%+v: %v", tc.req, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}

// TestEmbedModelPooling: a file's pooling_type chooses the pooling when
// the request names none; a reranker's is refused.
func TestEmbedModelPooling(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		pooling uint32
		want    string
	}{{1, PoolMean}, {2, PoolCLS}, {3, PoolLast}, {4, ""}} {
		path := shared.WithMeta(t, "models/tiny-llama-F32.gguf", "pool", map[string]any{"llama.pooling_type": tc.pooling})
		tx, err := LoadText(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tx.Embed(ctx, EmbedRequest{Inputs: []string{"a fox"}})
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "pooling_type 4 (a reranker's, or unknown) makes no embedding")):
			t.Errorf("pooling_type 4: %v", err)
		case tc.want != "" && (err != nil || res.Pooling != tc.want):
			t.Errorf("pooling_type %d: %v, %v", tc.pooling, res, err)
		}
		tx.Close()
	}
}

func mustEncode(t *testing.T, tx *Text, s string) []int {
	t.Helper()
	tok, _ := tx.Tokenizer()
	ids, err := tok.Encode(s, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
