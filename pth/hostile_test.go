package pth

import (
	"bytes"
	"errors"
	"testing"
)

// maxErrorText bounds the text of any error Parse returns for the
// hostile pickles (location, cause and a value shown within maxShowBytes).
const maxErrorText = 1024

// doublingPID is a pickle whose BINPERSID id is a 5-tuple with, first, a
// tuple doubled n times through the memo (BINPUT 0, BINGET 0, TUPLE2): n+1
// tuples in memory, 2^n leaves for anything that walks it as a tree.
func doublingPID(n int) []byte {
	p := []byte{0x80, 2, '(', ')'}
	for range n {
		p = append(p, 'q', 0, 'h', 0, 0x86)
	}
	return append(p, 'N', 'N', 'N', 'N', 't', 'Q', '.')
}

// hostilePickles are small pickles whose object graph is far larger as a
// tree than in memory, or cyclic: every one must fail (or load) after work
// linear in its size, with a short error.
func hostilePickles() []struct {
	name string
	pkl  []byte
	want error
} {
	// A list that contains itself, as the storage offset of a tensor.
	selfList := []byte{0x80, 2}
	selfList = append(selfList, global("torch._utils", "_rebuild_tensor_v2")...)
	selfList = append(selfList, '(')
	selfList = append(selfList, '(', 'X', 7, 0, 0, 0)
	selfList = append(selfList, "storage"...)
	selfList = append(selfList, global("torch", "FloatStorage")...)
	selfList = append(selfList, 'X', 1, 0, 0, 0, '0', 'X', 3, 0, 0, 0, 'c', 'p', 'u', 'K', 1, 't', 'Q')
	selfList = append(selfList, ']', 'q', 1, 'h', 1, 'a') // [L] with L inside itself
	selfList = append(selfList, ')', ')', 0x89, 'N', 't', 'R', '.')
	// A long string as a global name.
	longGlobal := append([]byte{0x80, 2, 'c'}, bytes.Repeat([]byte("os"), 50000)...)
	longGlobal = append(longGlobal, "\nsystem\n."...)
	return []struct {
		name string
		pkl  []byte
		want error
	}{
		{"doubled tuple n=24 as a persistent id", doublingPID(24), ErrPickle},
		{"doubled tuple n=60 as a persistent id", doublingPID(60), ErrPickle},
		{"self-containing list as a storage offset", selfList, ErrPickle},
		{"100 kB global name", longGlobal, ErrGlobal},
	}
}

// TestHostilePickles builds the small .pth files (a tuple doubled
// through the memo inside the tuple given to BINPERSID, n = 24 and 60) and
// others of the kind, and checks each fails in the load stage with a short
// error after work linear in the pickle (counted, not timed).
func TestHostilePickles(t *testing.T) {
	for _, h := range hostilePickles() {
		t.Run(h.name, func(t *testing.T) {
			file := checkpoint(t, h.pkl, nil, false)
			_, err := Parse(file)
			if !errors.Is(err, h.want) {
				t.Fatalf("Parse (%d-byte file): %v, want %v", len(file), err, h.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Stage() != "load" {
				t.Fatalf("error %v is not a located load-stage *Error", err)
			}
			if n := len(err.Error()); n > maxErrorText {
				t.Errorf("error is %d bytes, want at most %d: %.200s…", n, maxErrorText, err)
			}
			u := newUnpickler(h.pkl)
			if _, err := u.run(); !errors.Is(err, h.want) {
				t.Fatalf("unpickle: %v, want %v", err, h.want)
			}
			if max := workPerByte*len(h.pkl) + maxShowNodes; u.work > max {
				t.Errorf("unpickling %d bytes did %d units of work, want at most %d", len(h.pkl), u.work, max)
			}
			t.Logf("%d-byte file, %d-byte pickle: %d units of work: %v", len(file), len(h.pkl), u.work, err)
		})
	}
}

// TestShowBounded: the printer that puts pickled values into errors stays
// within its budget whatever the value (deep, wide, shared, cyclic).
func TestShowBounded(t *testing.T) {
	var deep any = int64(1)
	for range 10000 {
		deep = pyTuple{deep, deep}
	}
	wide := make(pyTuple, 1<<16)
	for i := range wide {
		wide[i] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	}
	self := &pyList{}
	self.items = append(self.items, self, self)
	d := &pyDict{}
	d.keys = append(d.keys, "k")
	d.vals = append(d.vals, d)
	cases := []struct {
		name string
		v    any
		want string // a prefix of the output
	}{
		{"scalar", int64(-3), "-3"},
		{"string", "storage", `"storage"`},
		{"tuple", pyTuple{"a", int64(1), nil, true, 2.5}, `("a", 1, None, True, 2.5)`},
		{"global", pyGlobal{"torch", "FloatStorage"}, "torch.FloatStorage"},
		{"deep", deep, "(((("},
		{"wide", wide, `("xxxx`},
		{"self-containing list", self, "[[[["},
		{"self-containing dict", d, `{"k": {"k": `},
		{"long string", string(bytes.Repeat([]byte("ab"), 1<<20)), `"abab`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := 0
			s := show(c.v, &work)
			if len(s) > maxShowBytes {
				t.Errorf("%d bytes, want at most %d: %s", len(s), maxShowBytes, s)
			}
			if work > maxShowNodes {
				t.Errorf("visited %d values, want at most %d", work, maxShowNodes)
			}
			if !bytes.HasPrefix([]byte(s), []byte(c.want)) {
				t.Errorf("got %s, want it to start with %s", s, c.want)
			}
		})
	}
}
