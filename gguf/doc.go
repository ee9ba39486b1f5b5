// Package gguf reads and writes GGUF model files, the container format of
// llama.cpp/ggml (specification: ggml's docs/gguf.md). A file is a header
// (magic "GGUF", version, counts), typed key/value metadata, a tensor
// directory, padding to the alignment (general.alignment, default 32) and the
// tensor data.
//
// Open memory-maps the file read-only and parses only the header: tensor
// data is never copied on open, and only the pages a caller touches become
// resident. Parse does the same over a byte slice (tests and fuzzing).
//
// The reader treats its input as hostile: every count is checked against
// the bytes that remain before anything is allocated, every offset against
// the file size, and every failure is an *Error naming the byte offset and
// the key or tensor involved. It never panics on input.
//
// Versions 2 and 3 are read (version 1, with 32-bit counts, predates every
// model in use and is refused with a clear error). Files are little-endian.
//
// Shapes: GGUF lists a tensor's dimensions innermost first (ggml's ne[0] is
// the row length). TensorInfo.Shape is outermost first, glassbox's row-major
// convention (see package tensor), so a GGUF "[256, 512]" matrix is
// Shape{512, 256}: 512 rows of 256 elements.
//
// Imports: tensor and the standard library.
package gguf
