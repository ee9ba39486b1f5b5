package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a metadata value (gguf_metadata_value_type).
type ValueType uint32

// Metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var typeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of a scalar of type t (0 for string and array,
// whose size depends on content).
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one value of type t can occupy.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return t.size()
}

func (t ValueType) valid() bool { return t <= TypeFloat64 }

// Value is one metadata value. Scalars hold the Go type matching Type
// (uint8, int8, ..., float64, bool, string). Arrays hold a typed slice
// ([]uint8 ... []float64, []bool, []string) or, for nested arrays, []Value;
// Elem is the element type of an array.
type Value struct {
	Type ValueType
	Elem ValueType // element type when Type == TypeArray
	v    any
}

// Any returns the Go value.
func (v Value) Any() any { return v.v }

// Len returns the number of elements of an array value, or 0.
func (v Value) Len() int {
	switch a := v.v.(type) {
	case []Value:
		return len(a)
	case []string:
		return len(a)
	case []bool:
		return len(a)
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	return 0
}

// TypeName describes the value's type, e.g. "uint32" or "array[string]".
func (v Value) TypeName() string {
	if v.Type == TypeArray {
		return "array[" + v.Elem.String() + "]"
	}
	return v.Type.String()
}

// Int returns an integer value of any integer type as int64. ok is false
// for non-integers and for uint64 values beyond int64.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float32 or float64 value as float64.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// String formats the value for people; long arrays are summarised.
func (v Value) String() string {
	if v.Type == TypeArray {
		n := v.Len()
		if n > 8 {
			return fmt.Sprintf("[%s × %d]", v.Elem, n)
		}
		return fmt.Sprint(v.v)
	}
	if s, ok := v.v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v.v)
}

// MakeValue wraps a Go value as a metadata value (for the writer). It
// accepts the scalar types above, their slices, and []Value.
func MakeValue(x any) (Value, error) {
	scalar := func(t ValueType) (Value, error) { return Value{Type: t, v: x}, nil }
	array := func(t ValueType) (Value, error) { return Value{Type: TypeArray, Elem: t, v: x}, nil }
	switch a := x.(type) {
	case uint8:
		return scalar(TypeUint8)
	case int8:
		return scalar(TypeInt8)
	case uint16:
		return scalar(TypeUint16)
	case int16:
		return scalar(TypeInt16)
	case uint32:
		return scalar(TypeUint32)
	case int32:
		return scalar(TypeInt32)
	case float32:
		return scalar(TypeFloat32)
	case bool:
		return scalar(TypeBool)
	case string:
		return scalar(TypeString)
	case uint64:
		return scalar(TypeUint64)
	case int64:
		return scalar(TypeInt64)
	case float64:
		return scalar(TypeFloat64)
	case []uint8:
		return array(TypeUint8)
	case []int8:
		return array(TypeInt8)
	case []uint16:
		return array(TypeUint16)
	case []int16:
		return array(TypeInt16)
	case []uint32:
		return array(TypeUint32)
	case []int32:
		return array(TypeInt32)
	case []float32:
		return array(TypeFloat32)
	case []bool:
		return array(TypeBool)
	case []string:
		return array(TypeString)
	case []uint64:
		return array(TypeUint64)
	case []int64:
		return array(TypeInt64)
	case []float64:
		return array(TypeFloat64)
	case []Value:
		elem := TypeArray
		if len(a) > 0 {
			elem = a[0].Type
		}
		for _, e := range a {
			if e.Type != elem {
				return Value{}, fmt.Errorf("gguf: mixed element types in array")
			}
		}
		return Value{Type: TypeArray, Elem: elem, v: a}, nil
	}
	return Value{}, fmt.Errorf("gguf: cannot store %T as metadata", x)
}
