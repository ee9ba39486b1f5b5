package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sample"
)

func TestText(t *testing.T) {
	tx, err := LoadText(context.Background(), shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
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
	_, err = tx.Generate(context.Background(), TextRequest{PromptIDs: []int{1, 600}, Session: opts})
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
