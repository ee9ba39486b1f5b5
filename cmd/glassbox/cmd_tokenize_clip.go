package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/checkpoint"
	tokclip "github.com/glassbox-ai/glassbox/tokenizer/clip"
)

// isGGUF reports whether the file at path starts with GGUF's magic.
func isGGUF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	return bytes.Equal(head[:n], []byte("GGUF"))
}

// clipEmbedding is the tensor that marks an SD 1.x checkpoint's CLIP text
// encoder, whose tokenizer tokenizeCheckpoint runs.
const clipEmbedding = "cond_stage_model.transformer.text_model.embeddings.token_embedding.weight"

// tokenizeCheckpoint prints a prompt's CLIP windows for a diffusion
// checkpoint: with asJSON the fields of clip-tokens.jsonl
// ({"tokens", "weights", "n_chunks"}), otherwise the ids on one line.
func tokenizeCheckpoint(env *cmdEnv, path string, pos []string, asJSON bool) error {
	f, err := checkpoint.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, ok := f.Tensor(clipEmbedding); !ok {
		return &checkpoint.Error{Path: path, Err: fmt.Errorf("has no CLIP text encoder (no %s): not an SD 1.x checkpoint", clipEmbedding)}
	}
	text, err := tokenizeText(env, pos)
	if err != nil {
		return err
	}
	tok, err := tokclip.Tokenize(text)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			Tokens  []int32   `json:"tokens"`
			Weights []float32 `json:"weights"`
			Chunks  int       `json:"n_chunks"`
		}{tok.IDs, tok.Weights, tok.Chunks})
	}
	ids := make([]string, len(tok.IDs))
	for i, id := range tok.IDs {
		ids[i] = strconv.Itoa(int(id))
	}
	_, err = io.WriteString(env.stdout, strings.Join(ids, " ")+"\n")
	return err
}
