// Package safetensors reads and writes the .safetensors format
// (https://github.com/huggingface/safetensors, "Format"): an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// end of the header) plus an optional "__metadata__" object of strings, then
// the tensors' bytes, little-endian and row-major.
//
// Open maps the file read-only: tensor data alias the mapping and no byte of
// weights is copied. Every header field is checked against the file before
// it is used (header length, JSON, dtypes, shapes, offsets inside the data
// section and matching the shape's size, no overlaps), so a truncated or
// hostile file fails with an error naming the tensor and the numbers.
//
// Imports: tensor, internal/mmap.
package safetensors
