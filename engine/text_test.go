package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sample"
)

func TestText(t *testing.T) {
	tx := storiesText(t)
	g := prompts(t)[0]
	opts := model.SessionOptions{CtxLen: 128}
	tests := []struct {
		name       string
		req        TextRequest
		prompt     int    // prompt tokens, 0 = don't check
		textPrefix string // generated text starts with this
	}{
		{"text", TextRequest{Prompt: "Once upon a time", MaxTokens: 8}, 5, ", there was a little girl"},
		{"ids", TextRequest{PromptIDs: g.IDs, MaxTokens: 8}, 5, ", there was a little girl"},
		{"no bos", TextRequest{Prompt: "Once upon a time", NoBOS: true, MaxTokens: 2}, 4, ""},
		{"chat", TextRequest{Prompt: "Hi", Chat: true, System: "Be kind.", MaxTokens: 2}, 0, ""},
		{"messages", TextRequest{Messages: []chat.Message{{Role: "user", Content: "Hi"}}, MaxTokens: 2}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Session = opts
			res, err := tx.Generate(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prompt > 0 && res.PromptTokens != tc.prompt {
				t.Errorf("%d prompt tokens, want %d", res.PromptTokens, tc.prompt)
			}
			if tc.req.Chat || tc.req.Messages != nil {
				if res.PromptTokens < 10 {
					t.Errorf("chat prompt has %d tokens: template not applied?", res.PromptTokens)
				}
			}
			if !strings.HasPrefix(res.Text, tc.textPrefix) {
				t.Errorf("text %q, want prefix %q", res.Text, tc.textPrefix)
			}
			if res.KVBytes <= 0 || res.ArenaBytes <= 0 {
				t.Errorf("KV %d, arena %d bytes: want both reported", res.KVBytes, res.ArenaBytes)
			}
		})
	}
	_, err := tx.Generate(context.Background(), TextRequest{PromptIDs: []int{1, 600}, Session: opts})
	if st, _ := pipeline.StageOf(err); st != pipeline.StageEncode || !strings.Contains(fmtErr(err), "600") {
		t.Errorf("id 600: got %v, want an encode error naming it", err)
	}
	if _, err := LoadText(context.Background(), "/nonexistent.gguf"); err == nil {
		t.Error("loading a missing file succeeded")
	} else if st, _ := pipeline.StageOf(err); st != pipeline.StageLoad {
		t.Errorf("missing file: stage %q, want load (%v)", st, err)
	}
	var pe *pipeline.Error
	_, err = tx.Generate(context.Background(), TextRequest{Prompt: "x", Sampling: sampleBadTemp(), Session: opts})
	if !errors.As(err, &pe) {
		t.Errorf("temperature -1: got %v, want a stage error", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func sampleBadTemp() sample.Params { return sample.Params{Temperature: -1} }

// TestTextJSON: format "json" makes stories260K (a model of children's
// stories, which never writes JSON by itself) produce one JSON object, in
// greedy and in sampled runs, ending at end of generation once the object
// is closed.
func TestTextJSON(t *testing.T) {
	ctx := context.Background()
	tx := storiesText(t)
	for _, sp := range []sample.Params{{}, {Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: 3}} {
		res, err := tx.Generate(ctx, TextRequest{Prompt: "Once upon a time", MaxTokens: 120, Format: "json", Sampling: sp,
			Session: model.SessionOptions{CtxLen: 256}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v: %q (%s)", sp, res.Text, res.StopDetail)
		switch res.StopReason {
		case StopEOG:
			if !json.Valid([]byte(res.Text)) || !sample.JSONValid(res.Text) {
				t.Errorf("%+v: ended with %q, not one JSON object", sp, res.Text)
			}
		case StopLength: // cut by the token limit: a prefix of an object
		default:
			t.Errorf("%+v: stop %q", sp, res.StopReason)
		}
		if !strings.HasPrefix(strings.TrimSpace(res.Text), "{") {
			t.Errorf("%+v: %q does not start an object", sp, res.Text)
		}
	}
	if _, err := tx.Generate(ctx, TextRequest{Prompt: "x", Format: "yaml"}); err == nil {
		t.Error("format yaml was accepted")
	}
}

// TestTextJSONThinking: with a format, a reasoning model thinks freely
// first. Over an R1-style template (the prompt opens the block), which
// stories260K never closes, the greedy thinking is the same as without the
// format, and there is no answer yet.
func TestTextJSONThinking(t *testing.T) {
	ctx := context.Background()
	tx, err := LoadText(ctx, shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	var got [2]*Result
	for i, format := range []string{"", "json"} {
		got[i], err = tx.Generate(ctx, TextRequest{Messages: []chat.Message{{Role: "user", Content: "Once upon a time"}},
			MaxTokens: 24, Format: format, SplitThinking: true, Session: model.SessionOptions{CtxLen: 256}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if got[1].Thinking == "" || got[1].Thinking != got[0].Thinking || got[1].Text != "" {
		t.Errorf("with the format: thinking %q, answer %q; without: thinking %q", got[1].Thinking, got[1].Text, got[0].Thinking)
	}
}

// TestLogprobs: each greedy token's logprob is the log-softmax of the
// reference's logits for that step (golden gen32, llama.cpp one token at a
// time), the picked token heads its alternatives, and the numbers reach
// the token events.
func TestLogprobs(t *testing.T) {
	tx := storiesText(t)
	ids := readIDs(t, "golden/seq48.ids")
	want := readIDs(t, "golden/stories260K.seq48.greedy32.ids")
	raw, err := os.ReadFile(shared.Path(t, "golden/stories260K.seq48.gen32.logits.f32"))
	if err != nil {
		t.Fatal(err)
	}
	vocab := tx.Model.Config().VocabSize
	var events []api.Token
	ctx := pipeline.WithTrace(context.Background(), &pipeline.Trace{Token: func(tok api.Token) { events = append(events, tok) }})
	res, err := tx.Generate(ctx, TextRequest{PromptIDs: ids, NoBOS: true, MaxTokens: len(want), Logprobs: true, TopLogprobs: 3,
		Session: model.SessionOptions{CtxLen: 128}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, want) || len(res.Logprobs) != len(want) || len(events) != len(want) {
		t.Fatalf("tokens %v (%d logprobs, %d events), want %v", res.Tokens, len(res.Logprobs), len(events), want)
	}
	tok, _ := tx.Tokenizer()
	for k, lp := range res.Logprobs {
		row := make([]float32, vocab)
		for i := range row {
			row[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(k*vocab+i):]))
		}
		var sum, sq float64
		for _, v := range row {
			sum += math.Exp(float64(v))
			sq += float64(v) * float64(v)
		}
		ref := float64(row[want[k]]) - math.Log(sum)
		// Our logits match these within NMSE 2e-6 (the golden README's
		// "vs default" tolerance): an RMS error of √(2e-6·mean square).
		// A logprob moves by the token's logit error less the
		// probability-weighted mean error: within 4× that RMS.
		bound := 4 * math.Sqrt(2e-6*sq/float64(vocab))
		if d := math.Abs(lp.Logprob - ref); d > bound {
			t.Errorf("token %d: logprob %.6f, the reference's logits give %.6f (%.2g apart, bound %.2g)", k, lp.Logprob, ref, d, bound)
		}
		if len(lp.Top) != 3 || lp.Top[0].ID != want[k] || lp.Top[0].Logprob != lp.Logprob ||
			lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Errorf("token %d: alternatives %+v do not start with the greedy pick %d, most likely first", k, lp.Top, want[k])
		}
		if lp.Piece != tok.Piece(want[k]) {
			t.Errorf("token %d: piece %q, want %q", k, lp.Piece, tok.Piece(want[k]))
		}
		if e := events[k].Logprob; e == nil || e.Logprob != lp.Logprob {
			t.Errorf("token %d: event logprob %+v, result %+v", k, e, lp)
		}
	}
	// The same steps through a bare session: the logprobs are exactly its
	// logits' log-softmax (float64, math.Exp).
	s, err := tx.Model.NewSession(model.SessionOptions{CtxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits := make([]float32, vocab)
	seq := append(slices.Clone(ids), want...)
	if err := s.Forward(context.Background(), ids, 0, logits); err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if k > 0 {
			if err := s.Forward(context.Background(), seq[len(ids)+k-1:len(ids)+k], len(ids)+k-1, logits); err != nil {
				t.Fatal(err)
			}
		}
		mx := float64(slices.Max(logits))
		var sum float64
		for _, v := range logits {
			sum += math.Exp(float64(v) - mx)
		}
		if self := float64(logits[want[k]]) - mx - math.Log(sum); math.Abs(self-res.Logprobs[k].Logprob) > 1e-9 {
			t.Errorf("token %d: logprob %.12f, the session's logits give %.12f", k, res.Logprobs[k].Logprob, self)
		}
	}
	// Through the batcher, as served with --parallel.
	b := NewBatcher(tx.Model, model.SessionOptions{CtxLen: 128}, 2)
	defer b.Close()
	r, err := tx.Prepare(context.Background(), TextRequest{PromptIDs: ids, NoBOS: true, MaxTokens: len(want), Logprobs: true, TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	bres, err := b.Generate(context.Background(), r, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if k >= len(bres.Logprobs) || math.Abs(bres.Logprobs[k].Logprob-res.Logprobs[k].Logprob) > 1e-5 || len(bres.Logprobs[k].Top) != 3 {
			t.Fatalf("batched: logprobs %+v, alone %+v", bres.Logprobs, res.Logprobs)
		}
	}
	// A reply that ends with end-of-generation: that token has no logprob.
	r, err = tx.Prepare(context.Background(), TextRequest{PromptIDs: ids, NoBOS: true, MaxTokens: len(want), Logprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	r.IsEOG = func(id int) bool { return id == want[3] }
	s2, err := tx.Model.NewSession(model.SessionOptions{CtxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	eres, err := Generate(context.Background(), s2, vocab, r)
	if err != nil {
		t.Fatal(err)
	}
	if eres.StopReason != StopEOG || len(eres.Tokens) != 4 || len(eres.Logprobs) != 3 {
		t.Errorf("stopped %s after %d tokens with %d logprobs; want EOG after 4, 3 logprobs", eres.StopReason, len(eres.Tokens), len(eres.Logprobs))
	}
	if _, err := tx.Generate(context.Background(), TextRequest{Prompt: "x", TopLogprobs: 2}); err == nil {
		t.Error("top logprobs without logprobs was accepted")
	}
	if _, err := tx.Generate(context.Background(), TextRequest{Prompt: "x", Logprobs: true, TopLogprobs: 21}); err == nil {
		t.Error("21 top logprobs were accepted")
	}
}

// readIDs reads a shared file of space-separated token ids.
func readIDs(t *testing.T, rel string) []int {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n)
	}
	return ids
}

// TestPromptLogprobs: each prompt token's logprob given the tokens before
// it is the log-softmax of the reference's logits at the position before
// (golden seq48, every position in one batch), in chunks of any size (each
// within the bound of the rows' rounding); the
// first token has none; with NoGenerate nothing is generated, and a
// generation after a scored prompt is the plain one.
func TestPromptLogprobs(t *testing.T) {
	tx := storiesText(t)
	ids := readIDs(t, "golden/seq48.ids")
	raw, err := os.ReadFile(shared.Path(t, "golden/stories260K.seq48.logits.f32"))
	if err != nil {
		t.Fatal(err)
	}
	vocab := tx.Model.Config().VocabSize
	tok, _ := tx.Tokenizer()
	for _, batch := range []int{48, 7, 1} {
		res, err := tx.Generate(context.Background(), TextRequest{PromptIDs: ids, NoBOS: true, PromptLogprobs: true, TopLogprobs: 2,
			NoGenerate: true, Session: model.SessionOptions{CtxLen: 128, Batch: batch}})
		if err != nil {
			t.Fatal(err)
		}
		lps := res.PromptLogprobs
		if len(res.Tokens) != 0 || res.StopReason != StopLength || len(lps) != len(ids) || lps[0].Logprob != 0 || lps[0].Top != nil ||
			lps[0].Piece != tok.Piece(ids[0]) {
			t.Fatalf("batch %d: %d tokens (%s), %d prompt logprobs, first %+v", batch, len(res.Tokens), res.StopReason, len(lps), lps[0])
		}
		for k := 1; k < len(ids); k++ {
			row := make([]float32, vocab)
			for i := range row {
				row[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*((k-1)*vocab+i):]))
			}
			var sum, sq float64
			for _, v := range row {
				sum += math.Exp(float64(v))
				sq += float64(v) * float64(v)
			}
			ref := float64(row[ids[k]]) - math.Log(sum)
			if d := math.Abs(lps[k].Logprob - ref); d > 4*math.Sqrt(2e-6*sq/float64(vocab)) {
				t.Errorf("batch %d, token %d: logprob %.6f, the reference's logits give %.6f", batch, k, lps[k].Logprob, ref)
			}
			if len(lps[k].Top) != 2 || lps[k].Top[0].Logprob < lps[k].Top[1].Logprob || lps[k].Piece != tok.Piece(ids[k]) {
				t.Errorf("batch %d, token %d: %+v", batch, k, lps[k])
			}
		}
	}
	plain, err := tx.Generate(context.Background(), TextRequest{PromptIDs: ids, NoBOS: true, MaxTokens: 16, Session: model.SessionOptions{CtxLen: 128}})
	if err != nil {
		t.Fatal(err)
	}
	scored, err := tx.Generate(context.Background(), TextRequest{PromptIDs: ids, NoBOS: true, MaxTokens: 16, PromptLogprobs: true,
		Session: model.SessionOptions{CtxLen: 128, Batch: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(scored.Tokens, plain.Tokens) || len(scored.PromptLogprobs) != len(ids) {
		t.Errorf("generated after scoring %v, plainly %v", scored.Tokens, plain.Tokens)
	}
}
