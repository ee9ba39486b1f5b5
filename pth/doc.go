// Package pth reads PyTorch checkpoints (.pth files written by torch.save
// with the zip serialization, PyTorch ≥ 1.6) without Python.
//
// A checkpoint is a zip archive with one top folder holding data.pkl (a
// pickled state dict), byteorder, and data/<key> entries: the raw bytes of
// each tensor storage. The pickle is read by a small interpreter that knows
// only the opcodes and globals a state dict uses (collections.OrderedDict,
// torch._utils._rebuild_tensor_v2, torch.*Storage); anything else is an
// error, and no pickle code is ever executed. The state dict may be the
// pickle's top object or the "state_dict" entry of a top-level dict (PyTorch
// Lightning's training checkpoints, such as Stable Diffusion's .ckpt files). Storages of stored
// (uncompressed) entries alias the memory-mapped file; compressed entries
// are rejected.
//
// References: the pickle opcode list in CPython's Lib/pickletools.py and
// PEP 307; torch/serialization.py (_save, _load) for the archive layout.
//
// A checkpoint is untrusted input, and a pickle of a few hundred bytes can
// describe an object graph whose tree is exponentially large (a tuple
// doubled through the memo) or cyclic (a list holding itself). The
// interpreter's work is linear in the pickle: every value pushed counts
// against a limit on the graph (memo references included), nothing walks a
// value as a tree, and values quoted in errors are printed within a fixed
// budget (show: a few levels, a few items, a few hundred bytes).
//
// Errors belong to the load stage and carry the file, the archive entry and,
// for pickle errors, the byte offset in data.pkl.
//
// Imports: standard library and tensor (dtypes).
package pth
