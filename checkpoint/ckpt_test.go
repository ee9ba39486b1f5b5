package checkpoint

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/pth"
)

// ckptTensor is one tensor of a test .ckpt.
type ckptTensor struct {
	name    string
	storage string // torch storage class: HalfStorage, FloatStorage, BFloat16Storage
	shape   []int
	data    []byte
}

// pickler writes the pickle opcodes torch.save (protocol 2) uses.
type pickler struct{ b []byte }

func (p *pickler) op(b ...byte)       { p.b = append(p.b, b...) }
func (p *pickler) global(m, n string) { p.b = append(p.b, "c"+m+"\n"+n+"\n"...) }
func (p *pickler) int(v int)          { p.op('J'); p.b = binary.LittleEndian.AppendUint32(p.b, uint32(v)) }
func (p *pickler) str(s string) {
	p.op('X')
	p.b = binary.LittleEndian.AppendUint32(p.b, uint32(len(s)))
	p.b = append(p.b, s...)
}
func (p *pickler) tuple(vs ...int) {
	p.op('(')
	for _, v := range vs {
		p.int(v)
	}
	p.op('t')
}
func (p *pickler) orderedDict() { p.global("collections", "OrderedDict"); p.op(')', 'R') }

// tensor pickles _rebuild_tensor_v2(storage key, 0, shape, contiguous
// strides, False, OrderedDict()).
func (p *pickler) tensor(key string, t ckptTensor) {
	p.global("torch._utils", "_rebuild_tensor_v2")
	p.op('(', '(')
	p.str("storage")
	p.global("torch", t.storage)
	p.str(key)
	p.str("cpu")
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	p.int(n)
	p.op('t', 'Q')
	p.int(0)
	p.tuple(t.shape...)
	stride := make([]int, len(t.shape))
	s := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		stride[i] = s
		s *= t.shape[i]
	}
	p.tuple(stride...)
	p.op(0x89) // False
	p.orderedDict()
	p.op('t', 'R')
}

// writeCkpt writes a .ckpt as PyTorch Lightning saves SD: a dict
// {"epoch": 6, "global_step": 470000, "state_dict": OrderedDict(...)}
// (wrapped = false: the bare state dict), zipped with stored entries.
func writeCkpt(t *testing.T, path string, ts []ckptTensor, wrapped bool) {
	t.Helper()
	var p pickler
	p.op(0x80, 2)
	if wrapped {
		p.op('}', '(')
		p.str("epoch")
		p.int(6)
		p.str("global_step")
		p.int(470000)
		p.str("state_dict")
	}
	p.orderedDict()
	p.op('(')
	for i, x := range ts {
		p.str(x.name)
		p.tensor(strconv.Itoa(i), x)
	}
	p.op('u')
	if wrapped {
		p.op('u')
	}
	p.op('.')
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, b []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	add("archive/data.pkl", p.b)
	add("archive/byteorder", []byte("little"))
	for i, x := range ts {
		add("archive/data/"+strconv.Itoa(i), x.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32s(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f16s(v ...float32) []byte {
	b := make([]byte, 2*len(v))
	kernel.FP32sToFP16(b, v)
	return b
}

func bf16s(v ...float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(x)>>16))
	}
	return b
}

// TestOpenCkpt: a .ckpt (state dict under "state_dict", as SD's are, or
// bare) opens through the pth reader with its tensors in F32, F16 and BF16
// alike; model_ema.* is kept apart.
func TestOpenCkpt(t *testing.T) {
	ts := []ckptTensor{
		{PrefixUNet + "out.2.bias", "HalfStorage", []int{2}, f16s(0.5, -2)},
		{PrefixVAE + "decoder.conv_out.bias", "FloatStorage", []int{3}, f32s(1, 2, 3)},
		{PrefixTextEncoder + "final_layer_norm.weight", "BFloat16Storage", []int{2, 1}, bf16s(1.5, -0.25)},
		{"model_ema.diffusion_modelout2bias", "HalfStorage", []int{2}, f16s(0.25, 4)},
	}
	for _, wrapped := range []bool{true, false} {
		t.Run(map[bool]string{true: "state_dict", false: "bare"}[wrapped], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.ckpt")
			writeCkpt(t, path, ts, wrapped)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Format != "pth" || len(f.Names()) != 4 {
				t.Fatalf("format %s, names %v", f.Format, f.Names())
			}
			b := NewBinder(f)
			want := map[string][]float32{
				ts[0].name: {0.5, -2}, ts[1].name: {1, 2, 3}, ts[2].name: {1.5, -0.25},
			}
			for name, w := range want {
				tt, _ := f.Tensor(name)
				got := b.Float32(name, tt.Shape...)
				if len(got) != len(w) {
					t.Fatalf("%s: %v (%v)", name, got, b.Err())
				}
				for i := range w {
					if got[i] != w[i] {
						t.Errorf("%s: %v, want %v", name, got, w)
					}
				}
			}
			if b.Err() != nil {
				t.Fatal(b.Err())
			}
			if u := b.Unused(); len(u) != 1 || !strings.HasPrefix(u[0], PrefixEMA) {
				t.Errorf("unused %v", u)
			}
		})
	}
}

// TestOpenErrors: files that are not checkpoints fail at open, saying
// what they are.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name  string
		path  string
		want  string
		errIs error
	}{
		{"gguf llm", shared.Path(t, "models/stories260K.gguf"), "a GGUF language model (llama)", ErrFamily},
		{"text", write("notes.txt", []byte("hello, world")), `is neither a .safetensors file nor a PyTorch zip checkpoint (first bytes "hello, wo")`, nil},
		{"empty", write("empty.safetensors", nil), "is neither", nil},
		{"missing", filepath.Join(dir, "nope.ckpt"), "no such file", os.ErrNotExist},
		{"bad safetensors", write("bad.safetensors", append([]byte{100, 0, 0, 0, 0, 0, 0, 0}, "{}"...)), "runs past the end", nil},
		{"bad zip", write("bad.ckpt", []byte("PK\x03\x04 not really")), "", pth.ErrNotZip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.errIs != nil && !errors.Is(err, tc.errIs) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "load: ") {
				t.Errorf("error %q does not name the load stage", err)
			}
		})
	}
}

// TestOpenTAEF2: the shared TAEF2 decoder opens (a .pth) and is named a
// tiny autoencoder for 32-channel latents, not an SD checkpoint.
func TestOpenTAEF2(t *testing.T) {
	f, err := Open(shared.Path(t, "models/taef2/taef2_decoder.pth"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := Detect(f)
	if d.Family != TinyVAE || d.LatentChannels != 32 {
		t.Fatalf("Detect = %v", d)
	}
	if _, err := SD1Components(f, nil); !errors.Is(err, ErrFamily) || !strings.Contains(err.Error(), "tiny autoencoder model (1.weight [64 32 3 3]") {
		t.Fatalf("SD1Components: %v", err)
	}
}
