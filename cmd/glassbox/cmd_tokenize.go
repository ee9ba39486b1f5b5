package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/tokenizer"
)

func init() {
	register(&command{name: "tokenize", summary: "print the token ids of a text (as llama.cpp would tokenize it; CLIP's windows for a diffusion checkpoint; T5's SentencePiece model)", run: runTokenize})
	register(&command{name: "detokenize", summary: "print the text of token ids", run: runDetokenize})
}

// loadTokenizer opens a model file and builds its tokenizer.
func loadTokenizer(model string) (*tokenizer.Tokenizer, func(), error) {
	f, err := openModel(model)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return tok, func() { f.Close() }, nil
}

func runTokenize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "tokenize", "-m MODEL [--no-bos] [--special] [--json] [TEXT]\n\n"+
		"Without TEXT, all of standard input is the text, byte for byte.\n"+
		"For a diffusion checkpoint (.safetensors, .ckpt) the text is a prompt: its CLIP windows of 77\n"+
		"tokens as stable-diffusion.cpp makes them, with --json {\"tokens\", \"weights\", \"n_chunks\"}.\n"+
		"A SentencePiece unigram model (T5's spiece.model), or a T5 checkpoint holding one in its\n"+
		"spiece_model tensor, tokenizes as sentencepiece does, with EOS appended (not with --no-bos).")
	model := fs.String("m", "", "model file path or store name")
	noBOS := fs.Bool("no-bos", false, "do not add BOS/EOS even if the model asks for them")
	special := fs.Bool("special", false, "turn the text of control tokens (<|im_start|>, <s>) into those tokens")
	asJSON := fs.Bool("json", false, "print a JSON array of {id, piece}")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fmt.Fprintf(env.stderr, "glassbox tokenize: give the text as one argument (quote it), or on standard input\n")
		return errUsage
	}
	var tok *tokenizer.Tokenizer
	if path, err := resolveModel(*model); err == nil && !isGGUF(path) {
		if tok, err = sentencePieceOf(path); err != nil {
			return err
		}
		if tok == nil {
			return tokenizeCheckpoint(env, path, pos, *asJSON)
		}
	}
	if tok == nil {
		t, done, err := loadTokenizer(*model)
		if err != nil {
			return err
		}
		defer done()
		tok = t
	}
	text, err := tokenizeText(env, pos)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(text, !*noBOS, *special)
	if err != nil {
		return err
	}
	if *asJSON {
		// A piece that is part of a character (a byte token) is not valid
		// UTF-8: its bytes are given as numbers too.
		type item struct {
			ID    int    `json:"id"`
			Piece string `json:"piece"`
			Bytes []int  `json:"bytes,omitempty"`
		}
		items := make([]item, len(ids))
		for i, id := range ids {
			p := tok.Piece(id)
			items[i] = item{ID: id, Piece: p}
			if !utf8.ValidString(p) {
				for _, b := range []byte(p) {
					items[i].Bytes = append(items[i].Bytes, int(b))
				}
			}
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(items)
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte('\n')
	_, err = io.WriteString(env.stdout, b.String())
	return err
}

// tokenizeText returns the text to tokenize: the argument, or all of
// standard input.
func tokenizeText(env *cmdEnv, pos []string) (string, error) {
	if len(pos) == 1 {
		return pos[0], nil
	}
	b, err := io.ReadAll(env.stdin)
	if err != nil {
		return "", fmt.Errorf("encode: reading standard input: %w", err)
	}
	return string(b), nil
}

func runDetokenize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "detokenize", "-m MODEL [--special] ID...\n\n"+
		"Without IDs, they are read from standard input (separated by spaces or newlines).\n"+
		"The text is printed exactly, with no newline added.")
	model := fs.String("m", "", "model file path or store name")
	special := fs.Bool("special", false, "write control tokens (<s>, <|im_end|>) as their text")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	tok, done, err := loadTokenizer(*model)
	if err != nil {
		return err
	}
	defer done()
	if len(pos) == 0 {
		b, err := io.ReadAll(env.stdin)
		if err != nil {
			return fmt.Errorf("decode: reading standard input: %w", err)
		}
		pos = strings.Fields(string(b))
	}
	ids := make([]int, len(pos))
	for i, s := range pos {
		id, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("decode: argument %d: %q is not a token id", i+1, s)
		}
		if id < 0 || id >= tok.VocabSize() {
			return fmt.Errorf("decode: argument %d: id %d is outside the vocabulary (0..%d)", i+1, id, tok.VocabSize()-1)
		}
		ids[i] = id
	}
	text := tok.Decode(ids)
	if *special {
		text = tok.DecodeSpecial(ids)
	}
	_, err = io.WriteString(env.stdout, text)
	return err
}
