package clip

import (
	"errors"
	"fmt"
	"math"
)

// ChunkLen is the length of one window of the text encoder: BOS, up to
// ChunkTokens ids, EOS, padding.
const (
	ChunkLen    = 77
	ChunkTokens = ChunkLen - 2
)

// Limits on a prompt. stable-diffusion.cpp has none; a prompt of N bytes
// gives at most N ids plus 74 padding ids per BREAK (5 bytes), so
// MaxPromptBytes bounds the work, and MaxChunks bounds the windows a
// prompt of BREAKs can ask the text encoder and the UNet's
// cross-attention for (16 KiB of text without BREAK fits in 219).
const (
	MaxPromptBytes = 16 << 10
	MaxChunks      = 256
)

// Stage is the pipeline stage of every error of this package.
const Stage = "encode"

// Causes, for errors.Is.
var (
	ErrWeight  = errors.New("bad emphasis weight")
	ErrTooLong = errors.New("prompt too long")
)

// Error is an encode-stage error about a prompt; Offset is the byte of the
// prompt it is about, or -1.
type Error struct {
	Offset int
	Err    error
}

func (e *Error) Error() string {
	if e.Offset < 0 {
		return "encode: prompt: " + e.Err.Error()
	}
	return fmt.Sprintf("encode: prompt: byte %d: %v", e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Stage reports the pipeline stage the error belongs to.
func (e *Error) Stage() string { return Stage }

// Tokens is a prompt ready for the text encoder: Chunks windows of
// ChunkLen ids, and the emphasis weight of each id (1 for BOS, EOS and
// padding).
type Tokens struct {
	IDs     []int32
	Weights []float32
	Chunks  int
}

// Tokenize turns a prompt into the text encoder's windows, as
// stable-diffusion.cpp's FrozenCLIPEmbedderWithCustomWords::tokenize with
// 77-token windows: the prompt's emphasis spans (ParseAttention) are
// encoded one by one (Encode) with their weights; a BREAK pads the ids
// with EOS to the next multiple of 75; then ids that fit in one window
// become [BOS, ids, EOS, padding], and longer ones windows of 75 ids each
// between BOS and EOS, the last padded (no A1111 comma backtracking).
//
// Besides ParseAttention's errors, it rejects prompts longer than
// MaxPromptBytes or needing more than MaxChunks windows, and weights that
// overflowed float32 by multiplying (the reference would go on to encode
// infinities and NaNs).
func Tokenize(prompt string) (*Tokens, error) {
	if len(prompt) > MaxPromptBytes {
		return nil, &Error{Offset: -1, Err: fmt.Errorf("%w: %d bytes, more than the %d a prompt may have", ErrTooLong, len(prompt), MaxPromptBytes)}
	}
	t, err := vocab()
	if err != nil {
		return nil, err
	}
	spans, err := ParseAttention(prompt)
	if err != nil {
		return nil, err
	}
	var s scratch
	var ids []int32
	var weights []float32
	for _, sp := range spans {
		if w := float64(sp.Weight); math.IsInf(w, 0) || math.IsNaN(w) {
			return nil, &Error{Offset: -1, Err: fmt.Errorf("%w: the weight of %q is %v (nested weights multiplied past float32's range)", ErrWeight, sp.Text, sp.Weight)}
		}
		if sp.Text == "BREAK" && sp.Weight == breakWeight {
			for len(ids)%ChunkTokens != 0 {
				ids = append(ids, EOS)
				weights = append(weights, 1)
			}
			continue
		}
		n := len(ids)
		ids = s.encode(t, sp.Text, ids)
		for range len(ids) - n {
			weights = append(weights, sp.Weight)
		}
	}
	chunks := max(1, (len(ids)+ChunkTokens-1)/ChunkTokens)
	if chunks > MaxChunks {
		return nil, &Error{Offset: -1, Err: fmt.Errorf("%w: %d ids make %d windows of %d tokens, more than the %d a prompt may have", ErrTooLong, len(ids), chunks, ChunkLen, MaxChunks)}
	}
	out := &Tokens{IDs: make([]int32, 0, chunks*ChunkLen), Weights: make([]float32, 0, chunks*ChunkLen), Chunks: chunks}
	for c := range chunks {
		lo, hi := c*ChunkTokens, min((c+1)*ChunkTokens, len(ids))
		out.IDs = append(out.IDs, BOS)
		out.Weights = append(out.Weights, 1)
		out.IDs = append(out.IDs, ids[lo:hi]...)
		out.Weights = append(out.Weights, weights[lo:hi]...)
		out.IDs = append(out.IDs, EOS)
		out.Weights = append(out.Weights, 1)
		for len(out.IDs) < (c+1)*ChunkLen {
			out.IDs = append(out.IDs, Pad)
			out.Weights = append(out.Weights, 1)
		}
	}
	return out, nil
}
