package backend

import (
	"context"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/engine"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// CountTokens is plan → load → encode: the prompt's tokens, as a
// generation of req would evaluate them.
func (b *Backend) CountTokens(ctx context.Context, req *server.GenerateRequest) (int, error) {
	o := req.Options
	lease, opts, _, _, err := b.admit(ctx, req.Model, o.NumCtx, o.NumBatch, o.NumThread, req.KeepAlive)
	if err != nil {
		return 0, err
	}
	defer lease.Release()
	sm := lease.Value()
	r, err := sm.text.Prepare(ctx, textRequest(req, sm, opts))
	if err != nil {
		return 0, err
	}
	return len(r.Prompt), nil
}

// header opens a model's file for what its metadata holds (tokenizer,
// chat template), without loading its weights.
func (b *Backend) header(name string) (*gguf.File, error) {
	_, path, err := b.lookup(name)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return f, nil
}

// Tokenize is the encode stage alone: the model's tokenizer, from its
// file's metadata.
func (b *Backend) Tokenize(ctx context.Context, model, text string, addSpecial, parseSpecial bool) ([]server.TokenPiece, error) {
	f, err := b.header(model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	ids, err := tok.Encode(text, addSpecial, parseSpecial)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageEncode, err, "")
	}
	out := make([]server.TokenPiece, len(ids))
	for i, id := range ids {
		out[i] = server.TokenPiece{ID: id, Bytes: []byte(tok.Piece(id))}
	}
	return out, nil
}

// Detokenize is the decode stage alone; an id outside the vocabulary is
// an error that says its size.
func (b *Backend) Detokenize(ctx context.Context, model string, ids []int) (string, error) {
	f, err := b.header(model)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return "", pipeline.Wrap(pipeline.StageDecode, err, "")
	}
	for i, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			return "", server.BadRequest(pipeline.Errorf(pipeline.StageDecode, "", "token %d (number %d) is outside the vocabulary of %d", id, i+1, tok.VocabSize()))
		}
	}
	return tok.DecodeSpecial(ids), nil
}

// RenderPrompt is the chat template's part of the encode stage.
func (b *Backend) RenderPrompt(ctx context.Context, req *server.GenerateRequest) (string, error) {
	f, err := b.header(req.Model)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, terr := f.Meta.String(chat.KeyTemplate)
	treq := textRequest(req, &served{template: terr == nil}, model.SessionOptions{})
	prompt, _, err := engine.RenderPrompt(f, &treq)
	return prompt, err
}

// Embed is plan → load → encode → prefill, pooling the final hidden
// states of each input (engine.Text.Embed) in a session of its own.
func (b *Backend) Embed(ctx context.Context, req *server.EmbedRequest) (*server.EmbedResult, error) {
	lease, opts, _, load, err := b.admit(ctx, req.Model, req.NumCtx, req.NumBatch, req.NumThread, req.KeepAlive)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	res, err := lease.Value().text.Embed(ctx, engine.EmbedRequest{Inputs: req.Input, InputIDs: req.InputIDs, Pooling: req.Pooling,
		Truncate: req.Truncate, Normalize: req.Normalize, Dimensions: req.Dimensions, Session: opts})
	if err != nil {
		return nil, err
	}
	return &server.EmbedResult{Embeddings: res.Embeddings, PromptTokens: res.PromptTokens(), Truncated: res.Truncated,
		Pooling: res.Pooling, LoadDuration: load, EvalDuration: res.EncodeTime + res.EvalTime}, nil
}
