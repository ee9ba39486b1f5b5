package gguf

import "fmt"

// KV is one metadata entry, with the byte offset where its key starts.
type KV struct {
	Key    string
	Value  Value
	Offset int64
}

// Metadata is the ordered key/value section of a GGUF file. Its getters
// return an *Error wrapping ErrMissingKey or ErrWrongType rather than a zero
// value, so a model never runs on a silently defaulted hyperparameter.
type Metadata struct {
	KVs   []KV
	index map[string]int
}

func (m *Metadata) add(kv KV) bool {
	if m.index == nil {
		m.index = make(map[string]int)
	}
	if _, dup := m.index[kv.Key]; dup {
		return false
	}
	m.index[kv.Key] = len(m.KVs)
	m.KVs = append(m.KVs, kv)
	return true
}

// Set adds or replaces key (for the writer and tests).
func (m *Metadata) Set(key string, x any) error {
	v, err := MakeValue(x)
	if err != nil {
		return err
	}
	if i, ok := m.index[key]; ok {
		m.KVs[i].Value = v
		return nil
	}
	m.add(KV{Key: key, Value: v, Offset: -1})
	return nil
}

// Lookup returns the value of key.
func (m *Metadata) Lookup(key string) (Value, bool) {
	i, ok := m.index[key]
	if !ok {
		return Value{}, false
	}
	return m.KVs[i].Value, true
}

// Has reports whether key is present.
func (m *Metadata) Has(key string) bool { _, ok := m.index[key]; return ok }

func (m *Metadata) get(key string) (KV, error) {
	i, ok := m.index[key]
	if !ok {
		return KV{}, &Error{Offset: -1, Key: key, Err: ErrMissingKey}
	}
	return m.KVs[i], nil
}

func mistyped(kv KV, want string) error {
	return &Error{Offset: kv.Offset, Key: kv.Key, Err: wrapf(ErrWrongType, "want %s, file has %s", want, kv.Value.TypeName())}
}

// String returns a string value.
func (m *Metadata) String(key string) (string, error) {
	kv, err := m.get(key)
	if err != nil {
		return "", err
	}
	s, ok := kv.Value.v.(string)
	if !ok {
		return "", mistyped(kv, "string")
	}
	return s, nil
}

// Bool returns a bool value.
func (m *Metadata) Bool(key string) (bool, error) {
	kv, err := m.get(key)
	if err != nil {
		return false, err
	}
	b, ok := kv.Value.v.(bool)
	if !ok {
		return false, mistyped(kv, "bool")
	}
	return b, nil
}

// Int returns a value of any integer type as int64 (writers differ on
// uint32 versus int32 for the same key).
func (m *Metadata) Int(key string) (int64, error) {
	kv, err := m.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := kv.Value.Int()
	if !ok {
		return 0, mistyped(kv, "integer")
	}
	return n, nil
}

// Uint32 returns an integer value that must fit in a uint32.
func (m *Metadata) Uint32(key string) (uint32, error) {
	n, err := m.Int(key)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > 1<<32-1 {
		kv, _ := m.get(key)
		return 0, &Error{Offset: kv.Offset, Key: key, Err: wrapf(ErrWrongType, "value %d does not fit in uint32", n)}
	}
	return uint32(n), nil
}

// Float returns a float32 or float64 value as float64.
func (m *Metadata) Float(key string) (float64, error) {
	kv, err := m.get(key)
	if err != nil {
		return 0, err
	}
	f, ok := kv.Value.Float()
	if !ok {
		return 0, mistyped(kv, "float")
	}
	return f, nil
}

// Strings returns an array of strings.
func (m *Metadata) Strings(key string) ([]string, error) {
	kv, err := m.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := kv.Value.v.([]string)
	if !ok {
		return nil, mistyped(kv, "array[string]")
	}
	return s, nil
}

// Float32s returns an array of float32.
func (m *Metadata) Float32s(key string) ([]float32, error) {
	kv, err := m.get(key)
	if err != nil {
		return nil, err
	}
	s, ok := kv.Value.v.([]float32)
	if !ok {
		return nil, mistyped(kv, "array[float32]")
	}
	return s, nil
}

// Ints returns an array of any integer element type as []int64.
func (m *Metadata) Ints(key string) ([]int64, error) {
	kv, err := m.get(key)
	if err != nil {
		return nil, err
	}
	if kv.Value.Type != TypeArray {
		return nil, mistyped(kv, "array of integers")
	}
	n := kv.Value.Len()
	out := make([]int64, n)
	switch a := kv.Value.v.(type) {
	case []uint8:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int8:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []uint16:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int16:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []uint32:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int32:
		for i, x := range a {
			out[i] = int64(x)
		}
	case []int64:
		copy(out, a)
	case []uint64:
		for i, x := range a {
			out[i] = int64(x)
		}
	default:
		return nil, mistyped(kv, "array of integers")
	}
	return out, nil
}

// Architecture returns general.architecture.
func (m *Metadata) Architecture() (string, error) { return m.String("general.architecture") }

// ArchKey returns "<arch>.<suffix>", e.g. ArchKey("llama", "block_count").
func ArchKey(arch, suffix string) string { return fmt.Sprintf("%s.%s", arch, suffix) }
