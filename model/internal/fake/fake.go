// Package fake writes small synthetic GGUF models in memory for the
// architecture tests: given metadata and tensor shapes, it fills every
// tensor with deterministic pseudo-random F32 values (matrices around 0,
// norm weights around 1) and parses the result.
//
// Imports: gguf, tensor.
package fake

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Spec is a synthetic model.
type Spec struct {
	Meta   map[string]any
	Shapes map[string][]int64   // outermost first
	Scale  map[string]float32   // optional multiplier per tensor
	Values map[string][]float32 // optional exact contents per tensor
	Seed   int
}

// File writes s and parses it.
func (s *Spec) File() (*gguf.File, error) {
	var meta gguf.Metadata
	keys := make([]string, 0, len(s.Meta))
	for k := range s.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := meta.Set(k, s.Meta[k]); err != nil {
			return nil, err
		}
	}
	names := make([]string, 0, len(s.Shapes))
	for n := range s.Shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	var ts []gguf.WriteTensor
	for _, name := range names {
		// Each tensor's values depend only on its name and the seed, so
		// specs that differ in other tensors share this one's values.
		h := fnv.New32a()
		h.Write([]byte(name))
		seed := h.Sum32() ^ uint32(s.Seed*7919+1)
		shape := s.Shapes[name]
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		scale := float32(1)
		if v, ok := s.Scale[name]; ok {
			scale = v
		}
		norm := strings.HasSuffix(name, "norm.weight")
		data := make([]byte, 4*n)
		for i := range n {
			seed = seed*1664525 + 1013904223
			v := (float32(seed>>8)/(1<<24) - 0.5) * 0.4 // uniform in ±0.2
			if norm {
				v = 1 + v/4
			}
			if vals, ok := s.Values[name]; ok && int64(len(vals)) == n {
				v = vals[i]
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v*scale))
		}
		ts = append(ts, gguf.WriteTensor{Name: name, Shape: shape, Type: tensor.F32, Data: data})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, &meta, ts); err != nil {
		return nil, err
	}
	return gguf.Parse(buf.Bytes())
}
