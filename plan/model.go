package plan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Shape is what the planner needs to know about a model, read from its
// header alone: hyperparameters from the metadata and exact byte counts
// from the tensor directory.
type Shape struct {
	Name       string `json:"name,omitempty"`
	Arch       string `json:"arch"`
	FileType   string `json:"file_type,omitempty"` // dominant weight dtype, e.g. "Q4_K"
	Params     int64  `json:"params"`
	FileBytes  int64  `json:"file_bytes"`
	HeaderSize int64  `json:"header_bytes"` // metadata and tensor directory

	Layers     int `json:"layers"`
	Dim        int `json:"dim"`
	HiddenDim  int `json:"hidden_dim"`
	NumHeads   int `json:"num_heads"`
	NumKVHeads int `json:"num_kv_heads"`
	HeadDim    int `json:"head_dim"`
	VocabSize  int `json:"vocab_size"`
	CtxTrain   int `json:"ctx_train"`
	// A mixture of experts: each token goes through ExpertsUsed of the
	// Experts of every block (0: dense).
	Experts     int `json:"experts,omitempty"`
	ExpertsUsed int `json:"experts_used,omitempty"`

	LayerBytes     []int64 `json:"layer_bytes"`            // weights of block i
	ExpertBytes    []int64 `json:"expert_bytes,omitempty"` // of them, its experts' (a token reads ExpertsUsed/Experts of them)
	EmbeddingBytes int64   `json:"embedding_bytes"`        // token_embd
	EmbeddingRow   int64   `json:"embedding_row_bytes"`
	OutputBytes    int64   `json:"output_bytes"` // output matrix (0 when tied)
	OtherBytes     int64   `json:"other_bytes"`  // norms, rope factors, ...
	Tied           bool    `json:"tied"`         // logits use token_embd

	// matElems counts weight-matrix elements each generated token multiplies
	// (2 FLOPs each); quantBytes is the part of the weights in quantized types.
	matElems    int64
	expertElems int64 // of them, the experts' (a token multiplies ExpertsUsed/Experts of them)
	outElems    int64 // of them, the output matrix
	vecElems    int64 // elements of 1-D tensors (norms, biases)
	quantBytes  int64
	weightTy    map[tensor.DType]int64
	mats        []matrix // every weight matrix, for re-quantization estimates
}

// matrix is one weight matrix of the directory.
type matrix struct {
	name  string
	layer int // block index; -1 token_embd, -2 output, -3 other
	elems int64
	rows  int64 // elements ÷ the innermost dimension
	size  int64
	typ   tensor.DType
	stack int64 // experts stacked in it (ffn_gate_exps and its kind; rows counts all of them), 0: not an expert's
}

// ErrModel is the cause of header errors (missing or inconsistent keys).
var ErrModel = errors.New("model header")

// ReadShape reads a model's Shape from its GGUF header. Models without
// transformer blocks (block_count absent) are planned by weights alone.
func ReadShape(f *gguf.File) (*Shape, error) {
	arch, err := f.Meta.Architecture()
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	s := &Shape{Arch: arch, FileBytes: f.Size, HeaderSize: f.DataOffset, weightTy: map[tensor.DType]int64{}}
	s.Name, _ = f.Meta.String("general.name")
	key := func(k string) string { return gguf.ArchKey(arch, k) }
	if f.Meta.Has(key("block_count")) {
		if err := s.readHyper(f, key); err != nil {
			return nil, err
		}
	}
	if err := s.readTensors(f); err != nil {
		return nil, err
	}
	if len(f.Tensors) == 0 {
		return nil, fmt.Errorf("plan: %w: the file has no tensors (a vocabulary-only GGUF?)", ErrModel)
	}
	if s.Layers > 0 && s.VocabSize == 0 {
		return nil, fmt.Errorf("plan: %w: %s: no token_embd.weight, cannot size the vocabulary", ErrModel, arch)
	}
	s.FileType = s.dominantType()
	return s, nil
}

func (s *Shape) readHyper(f *gguf.File, key func(string) string) error {
	req := func(k string) (int, error) {
		v, err := intOrFirst(f, key(k))
		if err != nil {
			return 0, fmt.Errorf("plan: %w", err)
		}
		if v <= 0 || v > 1<<24 {
			return 0, fmt.Errorf("plan: %w: %s = %d is out of range", ErrModel, key(k), v)
		}
		return int(v), nil
	}
	var err error
	if s.Layers, err = req("block_count"); err != nil {
		return err
	}
	if s.Dim, err = req("embedding_length"); err != nil {
		return err
	}
	if s.NumHeads, err = req("attention.head_count"); err != nil {
		return err
	}
	s.HiddenDim, _ = req("feed_forward_length")
	s.NumKVHeads = s.NumHeads
	if f.Meta.Has(key("attention.head_count_kv")) {
		if s.NumKVHeads, err = req("attention.head_count_kv"); err != nil {
			return err
		}
	}
	s.HeadDim = s.Dim / s.NumHeads
	if f.Meta.Has(key("attention.key_length")) {
		if s.HeadDim, err = req("attention.key_length"); err != nil {
			return err
		}
	}
	s.CtxTrain, _ = req("context_length")
	if f.Meta.Has(key("expert_count")) {
		if s.Experts, err = req("expert_count"); err != nil {
			return err
		}
		if s.ExpertsUsed, err = req("expert_used_count"); err != nil {
			return err
		}
		if s.ExpertsUsed > s.Experts {
			return fmt.Errorf("plan: %w: %s = %d is more than %s = %d", ErrModel, key("expert_used_count"), s.ExpertsUsed, key("expert_count"), s.Experts)
		}
	}
	return nil
}

// expertShare is the part of an expert tensor one token reads.
func (s *Shape) expertShare() float64 {
	if s.Experts == 0 {
		return 1
	}
	return float64(s.ExpertsUsed) / float64(s.Experts)
}

// expertTouched is the part of an expert tensor a batch of n tokens
// reads: each expert that at least one of them goes through, as if each
// token chose its experts at random.
func (s *Shape) expertTouched(n float64) float64 {
	if s.Experts == 0 {
		return 1
	}
	return 1 - math.Pow(1-s.expertShare(), n)
}

// layerBytesFor is what a step of n tokens reads of block i's weights.
func (s *Shape) layerBytesFor(i int, n float64) float64 {
	b := float64(s.LayerBytes[i])
	if s.ExpertBytes != nil {
		b -= float64(s.ExpertBytes[i]) * (1 - s.expertTouched(n))
	}
	return b
}

// activeMatElems is the matrix elements one token multiplies.
func (s *Shape) activeMatElems() int64 {
	return s.matElems - int64(float64(s.expertElems)*(1-s.expertShare()))
}

// inactiveExpertBytes is what one token does not read of the experts.
func (s *Shape) inactiveExpertBytes() int64 {
	var n int64
	for _, b := range s.ExpertBytes {
		n += b
	}
	return int64(float64(n) * (1 - s.expertShare()))
}

// isExpert reports whether a block's tensor holds experts: stacked
// (blk.N.ffn_gate_exps.weight) or one per expert (blk.N.ffn_gate.E.weight,
// older Mixtral files).
func isExpert(name string) bool {
	if strings.Contains(name, "_exps.") {
		return true
	}
	parts := strings.Split(name, ".")
	if len(parts) != 5 || !strings.HasPrefix(parts[2], "ffn_") {
		return false
	}
	_, err := strconv.Atoi(parts[3])
	return err == nil
}

// intOrFirst reads an integer key, or the largest element of a per-layer
// integer array (some architectures vary head counts by layer).
func intOrFirst(f *gguf.File, k string) (int64, error) {
	v, err := f.Meta.Int(k)
	if err == nil {
		return v, nil
	}
	vs, aerr := f.Meta.Ints(k)
	if aerr != nil || len(vs) == 0 {
		return 0, err
	}
	m := vs[0]
	for _, x := range vs {
		m = max(m, x)
	}
	return m, nil
}

func (s *Shape) readTensors(f *gguf.File) error {
	if s.Layers > 0 {
		s.LayerBytes = make([]int64, s.Layers)
		if s.Experts > 0 {
			s.ExpertBytes = make([]int64, s.Layers)
		}
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.Params += t.Elements()
		if len(t.Shape) == 1 {
			s.vecElems += t.Elements()
		}
		if len(t.Shape) >= 2 {
			s.weightTy[t.Type] += t.Size
			if tr, _ := t.Type.Traits(); tr.Quantized {
				s.quantBytes += t.Size
			}
		}
		layer := -3
		switch {
		case strings.HasPrefix(t.Name, "blk."):
			rest := t.Name[len("blk."):]
			n, err := strconv.Atoi(rest[:max(0, strings.IndexByte(rest, '.'))])
			if err != nil || n < 0 || n >= s.Layers {
				return fmt.Errorf("plan: %w: tensor %q names a block outside 0..%d", ErrModel, t.Name, s.Layers-1)
			}
			s.LayerBytes[n] += t.Size
			layer = n
			if len(t.Shape) >= 2 {
				s.matElems += t.Elements()
			}
			if s.Experts > 0 && isExpert(t.Name) {
				s.ExpertBytes[n] += t.Size
				s.expertElems += t.Elements()
			}
		case t.Name == "token_embd.weight":
			layer = -1
			s.EmbeddingBytes = t.Size
			if len(t.Shape) == 2 && t.Shape[0] > 0 {
				s.VocabSize = int(t.Shape[0])
				s.EmbeddingRow = t.Size / t.Shape[0]
			}
		case t.Name == "output.weight":
			layer = -2
			s.OutputBytes = t.Size
			s.matElems += t.Elements()
			s.outElems = t.Elements()
		default:
			s.OtherBytes += t.Size
		}
		if len(t.Shape) >= 2 {
			rows := int64(1)
			if in := t.Shape[len(t.Shape)-1]; in > 0 {
				rows = t.Elements() / int64(in)
			}
			m := matrix{name: t.Name, layer: layer, elems: t.Elements(), rows: rows, size: t.Size, typ: t.Type}
			if s.Experts > 0 && layer >= 0 && isExpert(t.Name) {
				m.stack = 1
				if len(t.Shape) == 3 {
					m.stack = t.Shape[0]
				}
			}
			s.mats = append(s.mats, m)
		}
	}
	if s.Layers > 0 && !f.HasTensor("output.weight") {
		s.Tied = true
		s.outElems = int64(s.VocabSize) * int64(s.Dim)
		s.matElems += s.outElems
	}
	return nil
}

// x16Extra is the bytes the x16 layout adds to the matrices the engine
// copies into it (every weight matrix but a token embedding that is only
// looked up): X16MatrixExtra of each.
func (s *Shape) x16Extra(vnni bool) int64 {
	var n int64
	for _, m := range s.mats {
		if m.layer == -1 && !s.Tied || m.rows < 16 {
			continue
		}
		n += X16MatrixExtra(m.typ, m.rows, m.elems/m.rows, vnni)
	}
	return n
}

// X16MatrixExtra is what the x16 tiles of a rows × cols matrix of type typ
// take beyond its GGUF bytes (kernel/x16.go; cmd/glassbox tests it against
// the engine's layout): Q4_K's and Q5_K's tiles hold each row's 6-bit
// sub-block scales and mins unpacked, Q3_K's its 6-bit scales and a d per
// row, 64 bytes more per full tile of 16 rows and 256 columns (IQ4_XS: 32;
// it has x16 kernels only with AVX-512 VNNI, vnni); and the types whose
// records go in pairs pad a tile with an odd number of records in a column
// panel (2048 columns, 1024 for Q8_0: only the last, narrower one can be
// odd) by 32 bytes. MXFP4's records go in fours (VNNI only), its last one
// to three padded to a cache line: 48, 32 or 16 bytes.
func X16MatrixExtra(typ tensor.DType, rows, cols int64, vnni bool) int64 {
	tiles := rows / 16
	var n int64
	switch {
	case typ == tensor.Q4_K || typ == tensor.Q5_K || typ == tensor.Q3_K:
		n = tiles * (cols / 256) * X16ScaleBytes
	case typ == tensor.IQ4_XS && vnni: // a d per row, the 6-bit scales as bytes
		n = tiles * (cols / 256) * X16ScaleBytes / 2
	case typ == tensor.IQ4_XS:
		return 0
	case typ == tensor.MXFP4 && !vnni:
		return 0
	case typ == tensor.MXFP4:
		if rest := cols % 2048 / 32 % 4; rest != 0 {
			return tiles * (64 - 16*rest)
		}
		return 0
	}
	panel := int64(2048)
	if typ == tensor.Q8_0 {
		panel = 1024
	}
	switch typ {
	case tensor.Q4_0, tensor.Q8_0, tensor.IQ4_NL, tensor.Q5_0, tensor.Q6_K, tensor.Q3_K, tensor.IQ4_XS:
		if bs := int64(typ.BlockSize()); cols%panel/bs%2 == 1 {
			n += tiles * 32
		}
	}
	return n
}

// X16ScaleBytes is what a Q4_K, Q5_K or Q3_K x16 tile of 16 rows adds per
// 256 columns.
const X16ScaleBytes = 64

func (s *Shape) dominantType() string {
	var best tensor.DType
	var n int64 = -1
	for t, b := range s.weightTy {
		if b > n || (b == n && t < best) {
			best, n = t, b
		}
	}
	if n < 0 {
		return ""
	}
	return best.String()
}

// WeightBytes is the size of every tensor in the file.
func (s *Shape) WeightBytes() int64 {
	n := s.EmbeddingBytes + s.OutputBytes + s.OtherBytes
	for _, b := range s.LayerBytes {
		n += b
	}
	return n
}

// quantized reports whether most weight bytes are in quantized types (the
// engine then multiplies with int8 dot products).
func (s *Shape) quantized() bool {
	var all int64
	for _, b := range s.weightTy {
		all += b
	}
	return all > 0 && 2*s.quantBytes > all
}
