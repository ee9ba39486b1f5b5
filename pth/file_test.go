package pth

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tensor"
)

// The expected values were read with Python's zipfile and struct ('<e'),
// independently of this package.
func TestOpenTAEF2(t *testing.T) {
	cases := []struct {
		file        string
		params      int
		first       string
		firstShape  []int
		firstVals   []float32
		firstSum    float64
		lastName    string
		lastVals    []float32
		lastNumel   int
		wantTensors int
	}{
		{"models/taef2/taef2_decoder.pth", 1338499, "1.weight", []int{64, 32, 3, 3},
			[]float32{-0.003170013427734375, -0.0031185150146484375, -0.0157928466796875, 0.0015611648559570312},
			8.68201744556427, "19.bias", []float32{0.349365234375, 0.334716796875, 0.3193359375}, 3, 79},
		{"models/taef2/taef2_encoder.pth", 1338528, "0.weight", []int{64, 3, 3, 3},
			[]float32{-0.1405029296875, -0.06121826171875, 0.091552734375, -0.05450439453125},
			-0.07204568386077881, "14.bias", nil, 32, 79},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := Open(shared.Path(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Tensors) != c.wantTensors {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), c.wantTensors)
			}
			n := 0
			for _, tt := range f.Tensors {
				if tt.DType != tensor.F16 {
					t.Errorf("%s: dtype %v", tt.Name, tt.DType)
				}
				n += tt.Numel()
			}
			if n != c.params {
				t.Errorf("%d parameters, want %d", n, c.params)
			}
			first, err := f.Tensor(c.first)
			if err != nil {
				t.Fatal(err)
			}
			if !equalInts(first.Shape, c.firstShape) {
				t.Errorf("%s shape %v, want %v", c.first, first.Shape, c.firstShape)
			}
			v, err := first.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range c.firstVals {
				if v[i] != w {
					t.Errorf("%s[%d] = %v, want %v", c.first, i, v[i], w)
				}
			}
			var sum float64
			for _, x := range v {
				sum += float64(x)
			}
			if math.Abs(sum-c.firstSum) > 1e-9 {
				t.Errorf("%s sum %v, want %v", c.first, sum, c.firstSum)
			}
			last, err := f.Tensor(c.lastName)
			if err != nil {
				t.Fatal(err)
			}
			if last.Numel() != c.lastNumel {
				t.Errorf("%s numel %d, want %d", c.lastName, last.Numel(), c.lastNumel)
			}
			lv, _ := last.Float32s()
			for i, w := range c.lastVals {
				if lv[i] != w {
					t.Errorf("%s[%d] = %v, want %v", c.lastName, i, lv[i], w)
				}
			}
			if _, err := f.Tensor("nope"); !errors.Is(err, ErrNoTensor) {
				t.Errorf("missing tensor: %v", err)
			}
		})
	}
}

func equalInts(a, b []int) bool {
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

// pickle builders for synthetic checkpoints.
func binunicode(s string) []byte {
	b := []byte{'X', 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(len(s)))
	return append(b, s...)
}

func global(m, n string) []byte { return []byte("c" + m + "\n" + n + "\n") }

// statePickle pickles {name: tensor(storage key "0", size, stride)} the way torch.save does.
func statePickle(name, storageClass string, numel byte, size, stride []byte) []byte {
	var p []byte
	p = append(p, 0x80, 2)
	p = append(p, global("collections", "OrderedDict")...)
	p = append(p, ')', 'R', '(')
	p = append(p, binunicode(name)...)
	p = append(p, global("torch._utils", "_rebuild_tensor_v2")...)
	p = append(p, '(', '(')
	p = append(p, binunicode("storage")...)
	p = append(p, global("torch", storageClass)...)
	p = append(p, binunicode("0")...)
	p = append(p, binunicode("cpu")...)
	p = append(p, 'K', numel, 't', 'Q', 'K', 0)
	p = append(p, '(')
	for _, s := range size {
		p = append(p, 'K', s)
	}
	p = append(p, 't', '(')
	for _, s := range stride {
		p = append(p, 'K', s)
	}
	p = append(p, 't', 0x89)
	p = append(p, global("collections", "OrderedDict")...)
	p = append(p, ')', 'R', 't', 'R', 'u', '.')
	return p
}

// checkpoint zips entries; compressed selects Deflate for data.pkl.
func checkpoint(t testing.TB, pkl, storage []byte, compressed bool) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, b []byte, method uint16) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	m := zip.Store
	if compressed {
		m = zip.Deflate
	}
	add("ck/data.pkl", pkl, m)
	add("ck/byteorder", []byte("little"), zip.Store)
	add("ck/data/0", storage, zip.Store)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestParseSynthetic(t *testing.T) {
	store := f32bytes(1, 2, 3, 4, 5, 6)
	good := statePickle("w", "FloatStorage", 6, []byte{2, 3}, []byte{3, 1})
	f, err := Parse(checkpoint(t, good, store, false))
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Tensor("w")
	if err != nil {
		t.Fatal(err)
	}
	v, err := w.Float32s()
	if err != nil || !equalInts(w.Shape, []int{2, 3}) || v[5] != 6 {
		t.Fatalf("got %v %v %v", w.Shape, v, err)
	}

	evil := bytes.Replace(good, global("torch", "FloatStorage"), global("os", "system"), 1)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"compressed pickle", checkpoint(t, good, store, true), ErrCompressed},
		{"unknown global", checkpoint(t, evil, store, false), ErrGlobal},
		{"transposed", checkpoint(t, statePickle("w", "FloatStorage", 6, []byte{3, 2}, []byte{1, 3}), store, false), ErrNotContig},
		{"too big for storage", checkpoint(t, statePickle("w", "FloatStorage", 6, []byte{3, 3}, []byte{3, 1}), store, false), ErrStorage},
		{"storage shorter than numel", checkpoint(t, statePickle("w", "FloatStorage", 9, []byte{3, 3}, []byte{3, 1}), store, false), ErrStorage},
		{"bool storage", checkpoint(t, statePickle("w", "BoolStorage", 6, []byte{6}, []byte{1}), store, false), ErrWrongDType},
		{"truncated pickle", checkpoint(t, good[:len(good)-1], store, false), ErrTruncated},
		{"bad opcode", checkpoint(t, append([]byte{0x80, 2, 'i'}, good[2:]...), store, false), ErrOpcode},
		{"not a zip", []byte("hello, world"), ErrNotZip},
		{"truncated archive", checkpoint(t, good, store, false)[:100], ErrNotZip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.data)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Stage() != "load" {
				t.Fatalf("error %v is not a located *Error", err)
			}
		})
	}
}

func TestF16ToF32(t *testing.T) {
	cases := []struct {
		h    uint16
		want float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x0001, 5.9604645e-08}, {0x03ff, 6.097555e-05},
		{0x7bff, 65504}, {0x0000, 0}, {0x3555, 0.33325195},
	}
	for _, c := range cases {
		if got := F16ToF32(c.h); got != c.want {
			t.Errorf("F16ToF32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	if g := F16ToF32(0x7c00); !math.IsInf(float64(g), 1) {
		t.Errorf("inf: %v", g)
	}
	if g := F16ToF32(0x7e00); !math.IsNaN(float64(g)) {
		t.Errorf("nan: %v", g)
	}
}

func FuzzParse(f *testing.F) {
	store := f32bytes(1, 2, 3, 4, 5, 6)
	f.Add(checkpoint(f, statePickle("w", "FloatStorage", 6, []byte{2, 3}, []byte{3, 1}), store, false))
	f.Add(checkpoint(f, statePickle("w", "HalfStorage", 6, []byte{6}, []byte{1}), store, false))
	f.Fuzz(func(t *testing.T, data []byte) {
		ck, err := Parse(data)
		if err != nil {
			if n := len(err.Error()); n > maxErrorText+2*maxNameText {
				t.Fatalf("error text of %d bytes: %.200s", n, err)
			}
			return
		}
		for i := range ck.Tensors {
			tt := &ck.Tensors[i]
			if len(tt.Data) != tt.Numel()*tt.DType.TypeSize() {
				t.Fatalf("%s: %d bytes for %d elements", tt.Name, len(tt.Data), tt.Numel())
			}
			tt.Float32s()
		}
	})
}

// FuzzUnpickle runs the interpreter on arbitrary bytes: errors are fine;
// panics, errors without an offset inside the pickle, long error texts and
// work beyond workPerByte per byte are not. The seeds are small pickles, one
// for each family of opcodes (scalars, strings, tuples, lists and dicts,
// the memo, globals and REDUCE, BUILD, persistent ids, framing) and the
// hostile shapes (testdata/fuzz/FuzzUnpickle adds the doubled tuples);
// TestUnpickleState keeps a real state dict as a regression test, where it
// does not slow the fuzzer down.
func FuzzUnpickle(f *testing.F) {
	for _, s := range unpickleSeeds() {
		f.Add(s)
	}
	for _, h := range hostilePickles() {
		f.Add(h.pkl)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := newUnpickler(data)
		_, err := u.run()
		if max := workPerByte*len(data) + maxShowNodes; u.work > max {
			t.Fatalf("%d bytes took %d units of work, more than %d", len(data), u.work, max)
		}
		if err == nil {
			return
		}
		var pe *pickleError
		if !errors.As(err, &pe) || pe.off < 0 || pe.off > len(data) {
			t.Fatalf("error %v has no offset within the %d bytes", err, len(data))
		}
		if n := len(err.Error()); n > maxErrorText {
			t.Fatalf("error text of %d bytes: %.200s", n, err)
		}
	})
}

// unpickleSeeds are small pickles that exercise every opcode the
// interpreter knows, each family on its own.
func unpickleSeeds() [][]byte {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	b := func(s string) []byte { return []byte(s) }
	return [][]byte{
		// scalars and strings in a MARK tuple
		cat(b("\x80\x02(N\x88\x89K\x07M\x01\x02J\xff\xff\xff\xff\x8a\x02\x01\x80\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00"),
			b("G?\xf0\x00\x00\x00\x00\x00\x00"), binunicode("a"), b("\x8c\x01bU\x01cT\x01\x00\x00\x00dt.")),
		// tuples of every arity
		b("\x80\x02()K\x01\x85K\x01K\x02\x86K\x01K\x02K\x03\x87(K\x04tt."),
		// lists: EMPTY_LIST, APPEND, APPENDS, LIST
		b("\x80\x02]K\x01a(K\x02K\x03e(K\x04l\x86."),
		// dicts: EMPTY_DICT, SETITEM, SETITEMS, DICT
		cat(b("\x80\x02}"), binunicode("k"), b("K\x01s("), binunicode("j"), b("N\x8c\x01i\x88u("), binunicode("x"), b("K\x02d\x86.")),
		// the memo: BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET
		b("\x80\x04K\x01q\x05r\x06\x00\x00\x00\x94h\x05j\x06\x00\x00\x00h\x02\x87\x86."),
		// globals and REDUCE: GLOBAL, STACK_GLOBAL, an OrderedDict with BUILD
		cat(global("collections", "OrderedDict"), b(")R\x8c\x0bcollections\x8c\x0bOrderedDict\x93)R}b\x86.")),
		// a persistent id and a tensor: one entry of a state dict
		statePickle("w", "FloatStorage", 6, []byte{2, 3}, []byte{3, 1}),
		// framing (protocol 4)
		b("\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00K\x01."),
	}
}

// TestUnpickleState unpickles a real state dict (TAEF2's decoder, see
// testdata/README.md): 79 tensors, within the work bound.
func TestUnpickleState(t *testing.T) {
	data, err := os.ReadFile("testdata/state.pkl")
	if err != nil {
		t.Fatal(err)
	}
	u := newUnpickler(data)
	root, err := u.run()
	if err != nil {
		t.Fatal(err)
	}
	d, ok := root.(*pyDict)
	if !ok || len(d.keys) != 79 {
		t.Fatalf("root %s with %d entries, want a dict of 79", typeName(root), lenOf(root))
	}
	first, ok := d.vals[0].(*tensorRef)
	if d.keys[0] != "1.weight" || !ok || len(first.size) != 4 || first.size[0] != 64 {
		t.Errorf("first entry %v: %s, want 1.weight, a tensor of size (64, 32, 3, 3)", d.keys[0], typeName(d.vals[0]))
	}
	if max := workPerByte * len(data); u.work > max {
		t.Errorf("%d units of work for %d bytes, more than %d", u.work, len(data), max)
	}
}

// TestNodeLimit: every push counts against the object graph's limit,
// references to one memo entry included.
func TestNodeLimit(t *testing.T) {
	u := newUnpickler(doublingPID(60))
	u.maxNodes = 100
	_, err := u.run()
	if !errors.Is(err, ErrLimitReached) || !strings.Contains(err.Error(), "more than 100 values") {
		t.Fatalf("got %v, want the object graph limit", err)
	}
}
