package synth

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/glassbox-ai/glassbox/safetensors"
	"github.com/glassbox-ai/glassbox/tensor"
)

// SD1Size returns the size in bytes of the sd15-rand file WriteSD1 writes
// for o (2,132,625,446 for F16, 4,265,096,604 for F32).
func SD1Size(o SD1Options) int64 {
	hdr, _ := sd1Header(o)
	return int64(len(hdr)) + SD1Params()*int64(o.dtype().TypeSize())
}

func (o SD1Options) dtype() tensor.DType {
	if o.F32 {
		return tensor.F32
	}
	return tensor.F16
}

// sd1Header returns the file's header (length prefix, JSON, padding).
func sd1Header(o SD1Options) ([]byte, []sdPlan) {
	plans := sd1Plans(SD1Tensors())
	dt := o.dtype()
	wts := make([]safetensors.WriteTensor, len(plans))
	for i := range plans {
		wts[i] = safetensors.WriteTensor{Name: plans[i].Name, DType: dt, Shape: plans[i].Shape}
	}
	hdr, err := safetensors.Header(wts, sd1Metadata(dt))
	if err != nil {
		panic("synth: the sd1 layout has no valid header: " + err.Error()) // a broken invariant, not input
	}
	return hdr, plans
}

// sd1Probe is how many elements CheckSD1File compares at each end of
// every tensor.
const sd1Probe = 256

// CheckSD1File reports whether the file at path is the sd15-rand file o
// describes, without reading all of it: its size, its header byte for
// byte, and the first and last 256 elements of every tensor (about 1 MB
// read, 2,260 places spread over the file). A truncated file, another
// spec, another dtype or a file whose tensors were moved fail; a few
// flipped bytes in the middle of a tensor would not, which is what a full
// SHA-256 (tens of seconds for 2 GB) is for.
func CheckSD1File(path string, o SD1Options) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if want := SD1Size(o); st.Size() != want {
		return fmt.Errorf("synth: %s: %d bytes, sd15-rand (%s) has %d", path, st.Size(), o.dtype(), want)
	}
	hdr, plans := sd1Header(o)
	got := make([]byte, len(hdr))
	if _, err := io.ReadFull(f, got); err != nil {
		return fmt.Errorf("synth: %s: %w", path, err)
	}
	if !bytes.Equal(got, hdr) {
		return fmt.Errorf("synth: %s: the header is not sd15-rand's (%s)", path, o.dtype())
	}
	dt := o.dtype()
	esize := int64(dt.TypeSize())
	x := make([]float32, sd1Probe)
	want := make([]byte, sd1Probe*esize)
	have := make([]byte, sd1Probe*esize)
	off := int64(len(hdr))
	for i := range plans {
		p := &plans[i]
		n := p.numel()
		for _, i0 := range []int64{0, max(0, n-sd1Probe)} {
			m := min(sd1Probe, n)
			p.values(x[:m], i0)
			encode(want[:m*esize], x[:m], dt)
			if _, err := f.ReadAt(have[:m*esize], off+i0*esize); err != nil {
				return fmt.Errorf("synth: %s: %w", path, err)
			}
			if !bytes.Equal(have[:m*esize], want[:m*esize]) {
				return fmt.Errorf("synth: %s: tensor %q: elements %d..%d are not sd15-rand's", path, p.Name, i0, i0+m-1)
			}
		}
		off += n * esize
	}
	return nil
}
