package vae

import (
	"fmt"
	"sort"
	"strings"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/pth"
)

// binder binds checkpoint tensors by name, checking shapes, and remembers
// the first error so a model definition reads as a list of layers.
type binder struct {
	f    *pth.File
	used map[string]bool
	err  error
}

func newBinder(f *pth.File) *binder { return &binder{f: f, used: map[string]bool{}} }

func (b *binder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// tensor returns name's values as float32, checking its shape.
func (b *binder) tensor(name string, shape ...int) []float32 {
	if b.err != nil {
		return nil
	}
	t, err := b.f.Tensor(name)
	if err != nil {
		b.fail(fmt.Errorf("load: %s: missing weight %q (is this the right model file?)", b.f.Path, name))
		return nil
	}
	if !equalShape(t.Shape, shape) {
		b.fail(fmt.Errorf("load: %s: weight %q has shape %v, want %v", b.f.Path, name, t.Shape, shape))
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		b.fail(err)
		return nil
	}
	b.used[name] = true
	return v
}

// conv binds prefix.weight (and prefix.bias when bias is set).
func (b *binder) conv(prefix string, cout, cin, k, stride int, bias bool) *conv.Conv {
	w := b.tensor(prefix+".weight", cout, cin, k, k)
	var bv []float32
	if bias {
		bv = b.tensor(prefix+".bias", cout)
	}
	if b.err != nil {
		return nil
	}
	c, err := conv.NewConv(w, bv, cout, cin, k, stride)
	if err != nil {
		b.fail(fmt.Errorf("load: %s: %s: %w", b.f.Path, prefix, err))
	}
	return c
}

// upconv binds prefix.weight (no bias) as a conv applied after ×2
// nearest-neighbour upsampling.
func (b *binder) upconv(prefix string, cout, cin int) *conv.UpConv {
	w := b.tensor(prefix+".weight", cout, cin, 3, 3)
	if b.err != nil {
		return nil
	}
	c, err := conv.NewUpConv(w, nil, cout, cin)
	if err != nil {
		b.fail(fmt.Errorf("load: %s: %s: %w", b.f.Path, prefix, err))
	}
	return c
}

// finish reports the first error, or tensors the model did not use (a
// checkpoint of another architecture).
func (b *binder) finish() error {
	if b.err != nil {
		return b.err
	}
	var extra []string
	for _, t := range b.f.Tensors {
		if !b.used[t.Name] {
			extra = append(extra, t.Name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		if len(extra) > 5 {
			extra = append(extra[:5], "...")
		}
		return fmt.Errorf("load: %s: %d unexpected weights (%s): not this architecture", b.f.Path, len(extra), strings.Join(extra, ", "))
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
