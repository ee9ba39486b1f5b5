package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// spieceTensor is where ComfyUI keeps a T5 text encoder's SentencePiece
// model inside its checkpoint.
const spieceTensor = "spiece_model"

// maxSPModel bounds a SentencePiece model file read whole.
const maxSPModel = 1 << 30

// sentencePieceOf returns the SentencePiece tokenizer of a file that is not
// GGUF: a .model file itself, or a checkpoint's spiece_model tensor. It
// returns nil and no error for a checkpoint without one (the CLIP path).
func sentencePieceOf(path string) (*tokenizer.Tokenizer, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 9)
	n, _ := io.ReadFull(fh, head)
	head = head[:n]
	isCheckpoint := bytes.HasPrefix(head, []byte("PK\x03\x04")) || (n == 9 && head[8] == '{')
	if !isCheckpoint {
		defer fh.Close()
		st, err := fh.Stat()
		if err != nil {
			return nil, err
		}
		if st.Size() > maxSPModel {
			return nil, fmt.Errorf("encode: %s: %d bytes is neither a checkpoint nor a SentencePiece model (at most %d bytes)", path, st.Size(), maxSPModel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tok, err := tokenizer.FromSentencePiece(b)
		if err != nil {
			return nil, fmt.Errorf("%s is not a GGUF file or a checkpoint, and as a SentencePiece model: %w", path, err)
		}
		return tok, nil
	}
	fh.Close()
	f, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, ok := f.Tensor(spieceTensor)
	if !ok {
		for _, name := range []string{"shared.weight", "encoder.final_layer_norm.weight", "token_embedding.weight"} {
			if _, t5 := f.Tensor(name); t5 {
				return nil, &checkpoint.Error{Path: path, Tensor: spieceTensor,
					Err: fmt.Errorf("%w: a T5 text encoder (%s) without its SentencePiece model: tokenize with its spiece.model", checkpoint.ErrMissing, name)}
			}
		}
		return nil, nil
	}
	if t.DType.TypeSize() != 1 || len(t.Shape) != 1 {
		return nil, &checkpoint.Error{Path: path, Tensor: spieceTensor, Err: fmt.Errorf("is %s %v, want the model's bytes (one dimension of 1-byte elements)", t.DType, t.Shape)}
	}
	tok, err := tokenizer.FromSentencePiece(t.Data) // copies what it keeps
	if err != nil {
		return nil, &checkpoint.Error{Path: path, Tensor: spieceTensor, Err: err}
	}
	return tok, nil
}
