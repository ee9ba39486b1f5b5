// Package safetensors reads and writes the .safetensors format
// (https://github.com/huggingface/safetensors, "Format"): an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// end of the header) plus an optional "__metadata__" object of strings, then
// the tensors' bytes, little-endian and row-major.
//
// Open maps the file read-only: tensor data alias the mapping and no byte of
// weights is copied; ReadHeader reads only the directory (for plans and
// listings of multi-gigabyte files). Every header field is checked against
// the file before it is used: the header length (at most MaxHeader, the
// reference's 100,000,000 bytes), one JSON object and nothing but padding
// after it, no name twice, known dtypes, shapes of at most 8 non-negative
// dimensions whose byte size does not overflow, offsets inside the data
// section and matching the shape's size, and metadata values that are
// strings. The tensors must tile the data section exactly — no overlap, no
// gap, no bytes after the last — as the reference reader requires
// (safetensors/src/tensor.rs: Metadata::validate); entries may come in any
// order in the JSON. A truncated or hostile file fails with an error naming
// the file, the tensor and the numbers, in the load stage.
//
// Write streams a file from tensors that fill themselves (a 2 GB checkpoint
// never needs to be in memory): compact JSON in the order given, metadata
// last, data contiguous, the header padded with spaces to a multiple of 8
// as the reference pads it.
//
// Imports: tensor, internal/mmap.
package safetensors
