package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/chat"
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
