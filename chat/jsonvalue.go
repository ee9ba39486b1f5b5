package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ardanlabs/jinja"
)

// toValue converts a variable for the template. json.RawMessage values
// are decoded keeping the key order of every object, as Python's json does
// (tojson then prints the keys in the caller's order: Go maps have none,
// so a map[string]any is printed with sorted keys).
func toValue(v any) (jinja.Value, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		return jinja.FromGoValue(v), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	val, err := decodeJSON(dec)
	if err != nil {
		return jinja.Value{}, fmt.Errorf("JSON variable at byte %d: %w", dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, fmt.Errorf("JSON variable: data after the value at byte %d", dec.InputOffset())
	}
	return val, nil
}

// decodeJSON reads one JSON value from dec as a jinja value, preserving
// object key order; integers stay integers (json.Number).
func decodeJSON(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeJSON(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, v)
			}
			_, err := dec.Token() // ]
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				key, ok := k.(string)
				if !ok {
					return jinja.Value{}, fmt.Errorf("object key %v is not a string", k)
				}
				v, err := decodeJSON(dec)
				if err != nil {
					return jinja.Value{}, err
				}
				d.AsDict().Set(key, v)
			}
			_, err := dec.Token() // }
			return d, err
		}
		return jinja.Value{}, fmt.Errorf("unexpected %v", t)
	default:
		return jinja.FromGoValue(t), nil
	}
}
