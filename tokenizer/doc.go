// Package tokenizer is the encode stage: it turns text into token ids and
// back, agreeing token for token with llama.cpp (llama-vocab.cpp, commit
// c392e5094 and later) on the same GGUF file.
//
// A Tokenizer is built from a GGUF file's tokenizer.ggml.* metadata by
// FromGGUF and is immutable afterwards, so one value may be shared by any
// number of goroutines. Three models are supported, chosen by
// tokenizer.ggml.model:
//
//   - "llama": SentencePiece-style BPE driven by token scores, with byte
//     fallback (<0xNN> tokens) and the leading-space rule (spm.go).
//   - "gpt2": byte-level BPE driven by merge ranks (tokenizer.ggml.merges),
//     with the GPT-2 byte-to-unicode mapping and a pre-tokenizer named by
//     tokenizer.ggml.pre, written as hand-made scanners (bpe.go, pretok*.go):
//     default (also gpt-neox, which has no key), gpt-2 (mpt, phi-2, olmo),
//     llama3/llama-bpe, qwen2, qwen35, deepseek-llm, deepseek-coder, deepseek-v3,
//     falcon, starcoder (refact, command-r, smollm), gpt-4o/llama4, tekken,
//     bloom and viking, each checked against Python's regex module running
//     llama.cpp's expressions (testdata/pretok.json).
//   - "bert": WordPiece, greedy longest match with a BERT normalizer (wpm.go).
//   - "t5": SentencePiece's unigram model (ugm.go): the model's normalizer
//     (its precompiled character map, a Darts-clone double array, and the
//     whitespace rules; charsmap.go), then Viterbi over the pieces' scores,
//     with byte fallback where the model has it; EOS appended, as T5 does.
//
// FromSentencePiece builds the "t5" tokenizer straight from a SentencePiece
// model file (spiece.model; a ModelProto read by this package's own
// protobuf wire-format reader, protowire.go and spmodel.go), agreeing id for
// id with sentencepiece 0.1.97's SentencePieceProcessor.encode
// (../shared/vocab/ugm, testdata/ugm-random.json). A GGUF "t5" vocabulary
// is encoded the same way, without byte fallback (llama.cpp's UGM has none).
// Here the package follows sentencepiece rather than llama.cpp, whose UGM
// tokenizer departs from it in corner cases (user-defined pieces scored 0,
// a space before every word when merging whitespace, a NUL byte ending a
// charsmap match).
//
// Special tokens (control, user-defined, unknown) are cut out of the text
// before the model runs (special.go): user-defined tokens always, control
// tokens only when Encode is asked to parse special text.
//
// Invalid UTF-8 in the input is never an error, and is treated as llama.cpp
// treats it. The "llama" model keeps the bytes through byte fallback; only a
// space right after a truncated multi-byte sequence comes back as "▁",
// because the sequence's lead byte claims the escaped space's first bytes.
// "gpt2" replaces each invalid byte with U+FFFD before pre-tokenizing;
// "bert" drops it. Valid UTF-8 round-trips exactly through Encode and
// Decode for "llama" and "gpt2" vocabularies (see TestRoundTrip).
// Decode returns exactly the bytes the pieces hold, so it can return
// invalid UTF-8 for a sequence that ends inside a character; the
// StreamDecoder never does.
//
// Use: FromGGUF (or FromSentencePiece), then Encode (text -> ids), Decode or a StreamDecoder
// (ids -> text), IsEOG to stop generation, BOS/EOS/AddBOS/Piece/VocabSize
// for the rest. Errors are *Error values whose Stage is "encode".
//
// Imports: gguf and the standard library only.
package tokenizer
