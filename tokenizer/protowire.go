package tokenizer

import (
	"errors"
	"fmt"
	"math"
)

// A minimal reader of the protocol buffers wire format
// (https://protobuf.dev/programming-guides/encoding/), enough for
// SentencePiece's ModelProto: varints, 32- and 64-bit fixed fields and
// length-delimited fields; groups (wire types 3 and 4, deprecated) are
// refused. Every length is checked against what is left, so a truncated or
// hostile message is an error naming the offset, never a panic.

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// errProto is the cause of every malformed-message error.
var errProto = errors.New("malformed protobuf")

// protoReader walks the fields of one message. base is the message's offset
// in the whole file, for error messages.
type protoReader struct {
	b    []byte
	off  int
	base int
}

func (r *protoReader) fail(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errProto, r.base+r.off, fmt.Sprintf(format, args...))
}

func (r *protoReader) done() bool { return r.off >= len(r.b) }

// varint reads a base-128 varint of at most 10 bytes.
func (r *protoReader) varint() (uint64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if r.off >= len(r.b) {
			return 0, r.fail("varint runs past the end of the message")
		}
		c := r.b[r.off]
		r.off++
		if i == 9 && c > 1 {
			return 0, r.fail("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, r.fail("varint longer than 10 bytes")
}

// key reads a field key: the field number (at least 1) and the wire type.
func (r *protoReader) key() (field int, wire int, err error) {
	k, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	field, wire = int(k>>3), int(k&7)
	if k>>3 == 0 || k>>3 > 1<<29-1 {
		return 0, 0, r.fail("field number %d outside 1..%d", k>>3, 1<<29-1)
	}
	return field, wire, nil
}

// bytes reads a length-delimited field's payload (a view of the message)
// and its offset in the file.
func (r *protoReader) bytes() ([]byte, int, error) {
	n, err := r.varint()
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(r.b)-r.off) {
		return nil, 0, r.fail("field of %d bytes but %d left", n, len(r.b)-r.off)
	}
	at := r.base + r.off
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p, at, nil
}

func (r *protoReader) fixed32() (uint32, error) {
	if len(r.b)-r.off < 4 {
		return 0, r.fail("32-bit field but %d bytes left", len(r.b)-r.off)
	}
	b := r.b[r.off:]
	r.off += 4
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, nil
}

// skip passes over a field of the given wire type.
func (r *protoReader) skip(wire int) error {
	switch wire {
	case wireVarint:
		_, err := r.varint()
		return err
	case wireFixed64:
		if len(r.b)-r.off < 8 {
			return r.fail("64-bit field but %d bytes left", len(r.b)-r.off)
		}
		r.off += 8
		return nil
	case wireBytes:
		_, _, err := r.bytes()
		return err
	case wireFixed32:
		_, err := r.fixed32()
		return err
	}
	return r.fail("wire type %d (groups and types 6, 7 are not supported)", wire)
}

// The typed readers below check the wire type of a known field.

func (r *protoReader) want(field, wire, want int) error {
	if wire != want {
		return r.fail("field %d has wire type %d, want %d", field, wire, want)
	}
	return nil
}

func (r *protoReader) readBool(field, wire int) (bool, error) {
	if err := r.want(field, wire, wireVarint); err != nil {
		return false, err
	}
	v, err := r.varint()
	return v != 0, err
}

// readInt32 reads an int32 field: negative values are sign-extended
// 10-byte varints, and the value is truncated to 32 bits as protobuf does.
func (r *protoReader) readInt32(field, wire int) (int32, error) {
	if err := r.want(field, wire, wireVarint); err != nil {
		return 0, err
	}
	v, err := r.varint()
	return int32(v), err
}

func (r *protoReader) readFloat(field, wire int) (float32, error) {
	if err := r.want(field, wire, wireFixed32); err != nil {
		return 0, err
	}
	v, err := r.fixed32()
	return math.Float32frombits(v), err
}

func (r *protoReader) readBytes(field, wire int) ([]byte, int, error) {
	if err := r.want(field, wire, wireBytes); err != nil {
		return nil, 0, err
	}
	return r.bytes()
}

// sub returns a reader over a length-delimited field's payload.
func (r *protoReader) sub(field, wire int) (*protoReader, error) {
	p, at, err := r.readBytes(field, wire)
	if err != nil {
		return nil, err
	}
	return &protoReader{b: p, base: at}, nil
}

// fields reads r's fields to its end, calling fn with each one's number
// and wire type; a field fn does not take (false) is skipped.
func (r *protoReader) fields(fn func(field, wire int) (bool, error)) error {
	for !r.done() {
		field, wire, err := r.key()
		if err != nil {
			return err
		}
		took, err := fn(field, wire)
		if err != nil {
			return err
		}
		if !took {
			if err := r.skip(wire); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalar reads field into its target when ints (int32 fields) or flags
// (bool fields) name it, reporting whether it did.
func (r *protoReader) scalar(field, wire int, ints map[int]*int32, flags map[int]*bool) (bool, error) {
	var err error
	if p, ok := ints[field]; ok {
		*p, err = r.readInt32(field, wire)
		return true, err
	}
	if p, ok := flags[field]; ok {
		*p, err = r.readBool(field, wire)
		return true, err
	}
	return false, nil
}
