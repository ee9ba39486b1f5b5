package vae

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// ReadF32 reads a raw little-endian float32 file (the golden data's and
// glassbox's latent format: no header) that must hold exactly n values.
func ReadF32(path string, n int) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load: latents: %w", err)
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("load: latents %s has %d bytes; the shape needs %d float32 values (%d bytes)", path, len(b), n, 4*n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// WriteF32 writes v as raw little-endian float32.
func WriteF32(w io.Writer, v []float32) error {
	bw := bufio.NewWriter(w)
	var b [4]byte
	for _, x := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WeightBytes returns the bytes the decoder's packed weights occupy.
func (d *Decoder) WeightBytes() int64 {
	var n int64
	add := func(c interface{ Bytes() int64 }) { n += c.Bytes() }
	add(d.in)
	addBlock := func(b *block) {
		add(b.c0)
		add(b.c2)
		add(b.c4)
		if b.pool != nil {
			add(b.pool.expand)
			add(b.pool.reduce)
			n += 4 * int64(len(b.pool.gamma)+len(b.pool.beta))
		}
	}
	for i := range d.mid {
		addBlock(&d.mid[i])
	}
	for s := range d.stages {
		n += d.stages[s].up.Bytes()
		for i := range d.stages[s].blocks {
			addBlock(&d.stages[s].blocks[i])
		}
	}
	add(d.out)
	return n
}
