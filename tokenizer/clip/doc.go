// Package clip is the tokenizer of Stable Diffusion 1.x's text encoder
// (OpenAI CLIP ViT-L/14) exactly as stable-diffusion.cpp ("sd.cpp",
// @97d2990) tokenizes a prompt: its byte-level BPE over OpenAI's merge
// list (embedded, vocab/README.md), the A1111 emphasis syntax with sd.cpp's
// quirks, BREAK, and 77-token windows with BOS, EOS and padding.
//
// The path of a prompt (Tokenize):
//
//  1. ParseAttention: the prompt → spans of text with weights ("(x)",
//     "[x]", "(x:w)", BREAK; src/core/util.cpp: parse_prompt_attention).
//  2. Encode, per span (src/tokenizers/: CLIPTokenizer, BPETokenizer):
//     normalize (ASCII whitespace runs → one space, trimmed, A–Z
//     lowercased), the literal special tokens, the split into letter runs,
//     single digits, contractions and runs of other bytes (C-locale
//     classes, so non-ASCII bytes are "other"), GPT-2's byte-to-unicode
//     symbols and BPE merges with "</w>" on a piece's last symbol.
//  3. Windows (Tokenizer::pad_tokens): [BOS, up to 75 ids, EOS, EOS...]
//     of ChunkLen ids each, a weight per id.
//
// The merge tables are built once, on first use (55–85 ms of CPU on the
// 2-core development machine, 1.1 MiB kept; BenchmarkTables). Where sd.cpp ends the process on a prompt (an emphasis
// weight std::stof cannot read, such as "(a:.)"), this package returns an
// *Error of stage "encode"; it also bounds the prompt (MaxPromptBytes,
// MaxChunks).
//
// The goldens are ../shared/golden/sd15/clip-tokens.jsonl (sd.cpp's own
// output); testdata/sdcpp-tokens.jsonl holds more cases from sd.cpp's
// tokenizer code (testdata/README.md).
//
// Imports: the standard library only.
package clip
