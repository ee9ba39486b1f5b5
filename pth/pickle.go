package pth

import (
	"encoding/binary"
	"math"
	"math/big"
)

// The pickle machine below understands what torch.save writes for a state
// dict and nothing more. Values on its stack are:
//
//	nil, bool, int64, float64, string      Python scalars
//	pyTuple, *pyList, *pyDict               containers
//	pyGlobal                                a name from the allow-list
//	storageRef                              a persistent id ('storage', ...)
//	*tensorRef                              a rebuilt tensor
type (
	pyTuple  []any
	pyList   struct{ items []any }
	pyGlobal struct{ module, name string }
	pyDict   struct {
		keys []any
		vals []any
	}
	storageRef struct {
		dtype    string // storage class name, e.g. "HalfStorage"
		key      string // archive entry data/<key>
		location string
		numel    int64
	}
	tensorRef struct {
		storage storageRef
		offset  int64 // in elements
		size    []int64
		stride  []int64
	}
)

// Safety limits: the machine never holds more than these, whatever the
// input. maxNodes bounds the object graph: every value pushed counts,
// including each reference to a memo entry (BINGET), so a value shared a
// million times costs a million. The graph may still be a DAG whose tree
// is exponentially larger (a tuple doubled through the memo); nothing here
// walks values as trees except show, which is bounded, so that is harmless:
// every other use of a value looks at fixed positions (persistent ids,
// REDUCE arguments, tensor sizes of at most maxDims) or at the top-level
// state dict's entries only.
const (
	maxStack = 1 << 20
	maxMemo  = 1 << 20
	maxNodes = 1 << 24
	maxDims  = 16
)

// workPerByte bounds the interpreter's work (opcodes run plus values
// moved, see unpickler.work) per byte of pickle, show aside: each opcode is
// at least a byte and pushes at most one value, and a value is moved at
// most twice (off the stack by a MARK opcode, into its container).
const workPerByte = 3

// allowedGlobals lists every global the pickle may name.
var allowedGlobals = map[string]bool{
	"collections.OrderedDict":          true,
	"torch._utils._rebuild_tensor_v2":  true,
	"torch._utils._rebuild_parameter":  true,
	"torch.HalfStorage":                true,
	"torch.FloatStorage":               true,
	"torch.BFloat16Storage":            true,
	"torch.DoubleStorage":              true,
	"torch.LongStorage":                true,
	"torch.IntStorage":                 true,
	"torch.ShortStorage":               true,
	"torch.CharStorage":                true,
	"torch.ByteStorage":                true,
	"torch.BoolStorage":                true,
	"torch._utils._rebuild_tensor":     false, // legacy, not supported
	"__builtin__.set":                  false,
	"builtins.eval":                    false,
	"torch.serialization._get_layout":  false,
	"torch._tensor._rebuild_from_type": false,
}

// unpickler is the interpreter state.
type unpickler struct {
	data  []byte
	pos   int
	stack []any
	marks []int
	memo  map[int64]any

	nodes    int // values pushed, memo references included
	maxNodes int
	work     int // opcodes run, values moved and values shown in errors
}

func newUnpickler(data []byte) *unpickler {
	return &unpickler{data: data, memo: map[int64]any{}, maxNodes: maxNodes}
}

// show is the bounded text of v for an error message.
func (u *unpickler) show(v any) string { return show(v, &u.work) }

// pickleError carries the byte offset of the failing opcode.
type pickleError struct {
	off int
	err error
}

func (e *pickleError) Error() string { return e.err.Error() }
func (e *pickleError) Unwrap() error { return e.err }

// unpickle runs data and returns the value left by STOP.
func unpickle(data []byte) (any, error) { return newUnpickler(data).run() }

func (u *unpickler) run() (any, error) {
	for {
		if u.pos >= len(u.data) {
			return nil, &pickleError{u.pos, wrapf(ErrTruncated, "pickle ended without STOP")}
		}
		op := u.data[u.pos]
		start := u.pos
		u.pos++
		u.work++
		done, err := u.step(op)
		if err != nil {
			return nil, &pickleError{start, err}
		}
		if done {
			if len(u.stack) != 1 {
				return nil, &pickleError{start, wrapf(ErrPickle, "STOP with %d values on the stack", len(u.stack))}
			}
			return u.stack[0], nil
		}
	}
}

func (u *unpickler) take(n int) ([]byte, error) {
	if n < 0 || n > len(u.data)-u.pos {
		return nil, wrapf(ErrTruncated, "need %d bytes, %d left", n, len(u.data)-u.pos)
	}
	b := u.data[u.pos : u.pos+n]
	u.pos += n
	return b, nil
}

func (u *unpickler) u8() (int, error) {
	b, err := u.take(1)
	if err != nil {
		return 0, err
	}
	return int(b[0]), nil
}

func (u *unpickler) u16() (int, error) {
	b, err := u.take(2)
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint16(b)), nil
}

func (u *unpickler) u32() (int, error) {
	b, err := u.take(4)
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(b)), nil
}

// line reads up to and excluding the next newline (text opcodes).
func (u *unpickler) line() (string, error) {
	for i := u.pos; i < len(u.data); i++ {
		if u.data[i] == '\n' {
			s := string(u.data[u.pos:i])
			u.pos = i + 1
			return s, nil
		}
	}
	return "", wrapf(ErrTruncated, "text argument without newline")
}

func (u *unpickler) push(v any) error {
	if len(u.stack) >= maxStack {
		return wrapf(ErrLimitReached, "stack deeper than %d", maxStack)
	}
	if u.nodes++; u.nodes > u.maxNodes {
		return wrapf(ErrLimitReached, "object graph of more than %d values (memo references included)", u.maxNodes)
	}
	u.stack = append(u.stack, v)
	return nil
}

func (u *unpickler) pop() (any, error) {
	n := len(u.stack)
	if n == 0 || (len(u.marks) > 0 && u.marks[len(u.marks)-1] == n) {
		return nil, wrapf(ErrPickle, "pop from an empty stack")
	}
	v := u.stack[n-1]
	u.stack = u.stack[:n-1]
	return v, nil
}

func (u *unpickler) top() (any, error) {
	n := len(u.stack)
	if n == 0 || (len(u.marks) > 0 && u.marks[len(u.marks)-1] == n) {
		return nil, wrapf(ErrPickle, "empty stack")
	}
	return u.stack[n-1], nil
}

// popMark returns the values pushed since the last MARK and removes them.
func (u *unpickler) popMark() ([]any, error) {
	if len(u.marks) == 0 {
		return nil, wrapf(ErrPickle, "no MARK on the stack")
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := append([]any(nil), u.stack[m:]...)
	u.stack = u.stack[:m]
	u.work += len(items)
	return items, nil
}

func (u *unpickler) memoPut(idx int64) error {
	v, err := u.top()
	if err != nil {
		return err
	}
	if _, ok := u.memo[idx]; !ok && len(u.memo) >= maxMemo {
		return wrapf(ErrLimitReached, "memo larger than %d", maxMemo)
	}
	u.memo[idx] = v
	return nil
}

func (u *unpickler) memoGet(idx int64) error {
	v, ok := u.memo[idx]
	if !ok {
		return wrapf(ErrPickle, "memo entry %d not set", idx)
	}
	return u.push(v)
}

func (u *unpickler) global(module, name string) error {
	full := module + "." + name
	if !allowedGlobals[full] {
		return wrapf(ErrGlobal, "%s", quoteShort(full))
	}
	return u.push(pyGlobal{module, name})
}

// step executes one opcode; it reports true at STOP.
func (u *unpickler) step(op byte) (bool, error) {
	switch op {
	case 0x80: // PROTO
		v, err := u.u8()
		if err != nil {
			return false, err
		}
		if v > 5 {
			return false, wrapf(ErrPickle, "pickle protocol %d", v)
		}
	case 0x95: // FRAME: an 8-byte length hint, no semantics
		if _, err := u.take(8); err != nil {
			return false, err
		}
	case '.': // STOP
		return true, nil
	case '(': // MARK
		if len(u.marks) >= maxStack {
			return false, wrapf(ErrLimitReached, "too many marks")
		}
		u.marks = append(u.marks, len(u.stack))
	case 'N': // NONE
		return false, u.push(nil)
	case 0x88: // NEWTRUE
		return false, u.push(true)
	case 0x89: // NEWFALSE
		return false, u.push(false)
	case 'K': // BININT1
		v, err := u.u8()
		if err != nil {
			return false, err
		}
		return false, u.push(int64(v))
	case 'M': // BININT2
		v, err := u.u16()
		if err != nil {
			return false, err
		}
		return false, u.push(int64(v))
	case 'J': // BININT (signed 32-bit)
		b, err := u.take(4)
		if err != nil {
			return false, err
		}
		return false, u.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case 0x8a: // LONG1: little-endian two's complement of n bytes
		n, err := u.u8()
		if err != nil {
			return false, err
		}
		b, err := u.take(n)
		if err != nil {
			return false, err
		}
		v, err := decodeLong(b)
		if err != nil {
			return false, err
		}
		return false, u.push(v)
	case 'G': // BINFLOAT (big-endian float64)
		b, err := u.take(8)
		if err != nil {
			return false, err
		}
		return false, u.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case 'X': // BINUNICODE
		n, err := u.u32()
		if err != nil {
			return false, err
		}
		b, err := u.take(n)
		if err != nil {
			return false, err
		}
		return false, u.push(string(b))
	case 0x8c, 'U': // SHORT_BINUNICODE, SHORT_BINSTRING
		n, err := u.u8()
		if err != nil {
			return false, err
		}
		b, err := u.take(n)
		if err != nil {
			return false, err
		}
		return false, u.push(string(b))
	case 'T': // BINSTRING
		n, err := u.u32()
		if err != nil {
			return false, err
		}
		b, err := u.take(n)
		if err != nil {
			return false, err
		}
		return false, u.push(string(b))
	case ')': // EMPTY_TUPLE
		return false, u.push(pyTuple{})
	case ']': // EMPTY_LIST
		return false, u.push(&pyList{})
	case '}': // EMPTY_DICT
		return false, u.push(&pyDict{})
	case 't': // TUPLE
		items, err := u.popMark()
		if err != nil {
			return false, err
		}
		return false, u.push(pyTuple(items))
	case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
		n := int(op - 0x84)
		t := make(pyTuple, n)
		for i := n - 1; i >= 0; i-- {
			v, err := u.pop()
			if err != nil {
				return false, err
			}
			t[i] = v
		}
		return false, u.push(t)
	case 'l': // LIST
		items, err := u.popMark()
		if err != nil {
			return false, err
		}
		return false, u.push(&pyList{items: items})
	case 'd': // DICT
		items, err := u.popMark()
		if err != nil {
			return false, err
		}
		d := &pyDict{}
		u.work += len(items)
		return false, errJoin(d.setItems(items), u.push(d))
	case 'q': // BINPUT
		i, err := u.u8()
		if err != nil {
			return false, err
		}
		return false, u.memoPut(int64(i))
	case 'r': // LONG_BINPUT
		i, err := u.u32()
		if err != nil {
			return false, err
		}
		return false, u.memoPut(int64(i))
	case 0x94: // MEMOIZE
		return false, u.memoPut(int64(len(u.memo)))
	case 'h': // BINGET
		i, err := u.u8()
		if err != nil {
			return false, err
		}
		return false, u.memoGet(int64(i))
	case 'j': // LONG_BINGET
		i, err := u.u32()
		if err != nil {
			return false, err
		}
		return false, u.memoGet(int64(i))
	case 'c': // GLOBAL "module\nname\n"
		m, err := u.line()
		if err != nil {
			return false, err
		}
		n, err := u.line()
		if err != nil {
			return false, err
		}
		return false, u.global(m, n)
	case 0x93: // STACK_GLOBAL
		n, err := u.pop()
		if err != nil {
			return false, err
		}
		m, err := u.pop()
		if err != nil {
			return false, err
		}
		ms, ok1 := m.(string)
		ns, ok2 := n.(string)
		if !ok1 || !ok2 {
			return false, wrapf(ErrPickle, "STACK_GLOBAL needs two strings")
		}
		return false, u.global(ms, ns)
	case 'Q': // BINPERSID
		pid, err := u.pop()
		if err != nil {
			return false, err
		}
		s, err := u.persistentLoad(pid)
		if err != nil {
			return false, err
		}
		return false, u.push(s)
	case 'R': // REDUCE
		args, err := u.pop()
		if err != nil {
			return false, err
		}
		fn, err := u.pop()
		if err != nil {
			return false, err
		}
		v, err := u.reduce(fn, args)
		if err != nil {
			return false, err
		}
		return false, u.push(v)
	case 's': // SETITEM
		v, err := u.pop()
		if err != nil {
			return false, err
		}
		k, err := u.pop()
		if err != nil {
			return false, err
		}
		d, err := u.dictOnTop()
		if err != nil {
			return false, err
		}
		return false, d.setItems([]any{k, v})
	case 'u': // SETITEMS
		items, err := u.popMark()
		if err != nil {
			return false, err
		}
		d, err := u.dictOnTop()
		if err != nil {
			return false, err
		}
		u.work += len(items)
		return false, d.setItems(items)
	case 'a': // APPEND
		v, err := u.pop()
		if err != nil {
			return false, err
		}
		l, err := u.listOnTop()
		if err != nil {
			return false, err
		}
		l.items = append(l.items, v)
	case 'e': // APPENDS
		items, err := u.popMark()
		if err != nil {
			return false, err
		}
		l, err := u.listOnTop()
		if err != nil {
			return false, err
		}
		u.work += len(items)
		l.items = append(l.items, items...)
	case 'b': // BUILD: only the state of an OrderedDict (its _metadata) is accepted, and ignored
		state, err := u.pop()
		if err != nil {
			return false, err
		}
		if _, err := u.dictOnTop(); err != nil {
			return false, wrapf(ErrPickle, "BUILD on something other than a dict")
		}
		if _, ok := state.(*pyDict); !ok && state != nil {
			return false, wrapf(ErrPickle, "BUILD state is %s, want a dict", typeName(state))
		}
	default:
		return false, wrapf(ErrOpcode, "0x%02x", op)
	}
	return false, nil
}

func errJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (u *unpickler) dictOnTop() (*pyDict, error) {
	v, err := u.top()
	if err != nil {
		return nil, err
	}
	d, ok := v.(*pyDict)
	if !ok {
		return nil, wrapf(ErrPickle, "SETITEM on %s, want a dict", typeName(v))
	}
	return d, nil
}

func (u *unpickler) listOnTop() (*pyList, error) {
	v, err := u.top()
	if err != nil {
		return nil, err
	}
	l, ok := v.(*pyList)
	if !ok {
		return nil, wrapf(ErrPickle, "APPEND on %s, want a list", typeName(v))
	}
	return l, nil
}

func (d *pyDict) setItems(kv []any) error {
	if len(kv)%2 != 0 {
		return wrapf(ErrPickle, "odd number of dict items (%d)", len(kv))
	}
	for i := 0; i < len(kv); i += 2 {
		switch kv[i].(type) {
		case string, int64, bool, nil, float64:
		default:
			return wrapf(ErrPickle, "dict key of type %s", typeName(kv[i]))
		}
		d.keys = append(d.keys, kv[i])
		d.vals = append(d.vals, kv[i+1])
	}
	return nil
}

// decodeLong decodes LONG1's little-endian two's complement integer.
func decodeLong(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) > 8 {
		// Wider than int64: only accept values that still fit.
		be := make([]byte, len(b))
		for i := range b {
			be[len(b)-1-i] = b[i]
		}
		v := new(big.Int).SetBytes(be)
		if b[len(b)-1]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		if !v.IsInt64() {
			return 0, wrapf(ErrPickle, "integer does not fit 64 bits")
		}
		return v.Int64(), nil
	}
	var x uint64
	for i := len(b) - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	shift := uint(64 - 8*len(b))
	return int64(x<<shift) >> shift, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case pyTuple:
		return "tuple"
	case *pyList:
		return "list"
	case *pyDict:
		return "dict"
	case pyGlobal:
		return "global"
	case storageRef:
		return "storage"
	case *tensorRef:
		return "tensor"
	}
	return "unknown"
}
