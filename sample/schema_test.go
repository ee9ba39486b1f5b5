package sample

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The schemas of the tests.
var (
	personSchema = `{"type": "object", "title": "Person",
		"properties": {
			"name": {"type": "string", "minLength": 1, "maxLength": 8},
			"age": {"type": "integer", "description": "years"},
			"tags": {"type": "array", "items": {"enum": ["a", "b", 7]}, "maxItems": 2},
			"nick": {"type": ["string", "null"]}
		},
		"required": ["name", "age"]}`
	treeSchema = `{"$defs": {"node": {"type": "object",
			"properties": {"v": {"type": "number"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
			"required": ["v"]}},
		"$ref": "#/$defs/node"}`
	looseSchema = `{"type": "object", "properties": {"id": {"const": 3}}, "required": ["id"],
		"additionalProperties": {"type": "boolean"}}`
	unionSchema = `{"anyOf": [{"type": "array", "minItems": 1, "items": {"type": "integer"}}, {"type": "string", "maxLength": 2}, {"type": "null"}]}`
	// petSchema is pydantic's discriminated union (Annotated[Union[Cat,
	// Dog], Field(discriminator="pet_type")]): a oneOf of objects that
	// both begin with '{', told apart by a required const.
	petSchema = `{"$defs": {
		"Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"}, "meows": {"type": "integer"}}, "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
		"Dog": {"properties": {"pet_type": {"const": "dog", "type": "string"}, "barks": {"type": "number"}, "name": {"type": "string"}}, "required": ["pet_type", "barks"], "type": "object"}},
		"properties": {"pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "discriminator": {"propertyName": "pet_type", "mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}}}, "n": {"type": "integer"}},
		"required": ["pet", "n"], "type": "object"}`
	// peopleSchema: a plain Union[Person, Contact] whose objects share
	// their first key, and number alternatives that share their digits.
	peopleSchema = `{"type": "array", "items": {"anyOf": [
		{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]},
		{"type": "object", "properties": {"name": {"enum": ["red", "abc"]}, "ok": {"type": "boolean"}}, "required": ["name"]},
		{"type": "integer", "maximum": 1}, {"type": "integer", "minimum": 20}, {"const": 12}]}}`
)

func TestSchemaValid(t *testing.T) {
	for _, tc := range []struct {
		schema, in string
		want       bool
	}{
		{personSchema, `{"name": "Ann", "age": 41}`, true},
		{personSchema, `{"name": "Ann", "age": 41, "tags": ["a", 7], "nick": null}`, true},
		{personSchema, `{"name": "Ann", "age": 41, "nick": "x"}`, true}, // an optional one skipped
		{personSchema, "{\n  \"name\": \"Zoë\",\n  \"age\": -3\n}", true},
		{personSchema, `{"age": 41, "name": "Ann"}`, false},               // properties in the schema's order
		{personSchema, `{"name": "Ann"}`, false},                          // age is required
		{personSchema, `{"name": "", "age": 1}`, false},                   // minLength 1
		{personSchema, `{"name": "Ann Smith", "age": 1}`, false},          // maxLength 8
		{personSchema, `{"name": "\u00e9\n\"", "age": 1}`, true},          // escapes count as one
		{personSchema, `{"name": "Ann", "age": 4.5}`, false},              // an integer
		{personSchema, `{"name": "Ann", "age": 4e1}`, false},              // likewise
		{personSchema, `{"name": "Ann", "age": 1, "tags": ["c"]}`, false}, // not in the enum
		{personSchema, `{"name": "Ann", "age": 1, "tags": [7, 7, 7]}`, false},
		{personSchema, `{"name": "Ann", "age": 1, "tags": [70]}`, false},
		{personSchema, `{"name": "Ann", "age": 1, "extra": 1}`, false}, // no additional properties
		{personSchema, `{"name": "Ann", "age": 1, "nick": 2}`, false},
		{personSchema, `{"name": "Ann", "age": 1, "name": "Bo"}`, false},
		{personSchema, `[]`, false},
		{treeSchema, `{"v": 1, "kids": [{"v": 2}, {"v": 3.5e-1, "kids": []}]}`, true},
		{treeSchema, `{"v": 1, "kids": [{"kids": []}]}`, false},
		{looseSchema, `{"id": 3, "x": true, "y": false}`, true},
		{looseSchema, `{"id": 3}`, true},
		{looseSchema, `{"x": true, "id": 3}`, false}, // required first
		{looseSchema, `{"id": 3, "x": 1}`, false},
		{looseSchema, `{"id":3,"id": true}`, false}, // an additional key may not repeat a declared one (FuzzSchemaValid found it)
		{looseSchema, `{"id": 30}`, false},
		{unionSchema, `[1, -2]`, true},
		{unionSchema, `[]`, false},
		{unionSchema, `"ab"`, true},
		{unionSchema, `"abc"`, false},
		{unionSchema, `null`, true},
		{unionSchema, `[1.5]`, false},
		{`{"type": "integer"}`, `12`, true},
		{`{"type": "integer"}`, `12 `, false}, // nothing after the value (form, see below)
		{`{"enum": [1, 12, "x"]}`, `1`, true},
		{`{"enum": [1, 12, "x"]}`, `12`, true},
		{`{"enum": [1, 12, "x"]}`, `123`, false},
		{`{"enum": [{"a": [1, true]}]}`, `{"a":[1,true]}`, true},
		{`{"enum": [{"a": [1, true]}]}`, `{"a": [1, true]}`, false}, // a literal is written compactly
		{`{}`, `[1, {"a": "b"}, null]`, true},
		{`{"maxLength": 1}`, `"\ud83d\ude00"`, true}, // a surrogate pair is one character
		{`{"maxLength": 1}`, "\"\xf0\x9f\x98\x80\"", true},
		{`{"maxLength": 1}`, `"\u00e9\u00e9"`, false},
		{`{"minLength": 2}`, `"\ud83d\ude00"`, false},
		{`{"minLength": 2}`, `"\ud83d\ud83d"`, true},  // two lone high surrogates
		{`{"maxLength": 1}`, `"a\n"`, false},          // an escape past maxLength
		{`{"maxLength": 1}`, `"\ud83d\ude00"`, true},  // at maxLength, the pair's low half still fits
		{`{"maxLength": 1}`, `"\ud83d\u0041"`, false}, // but nothing else
		{`true`, `"anything"`, true},
		{`{"type": "object"}`, `{"k": [1]}`, true},
		{`{"type": "array", "maxItems": 0}`, `[]`, true},
		{`{"type": "array", "maxItems": 0}`, `[1]`, false},
		{`{"type": "object", "properties": {"a<b": {"const": "<&>"}}}`, `{"a<b": "<&>"}`, true},
		{`{"type": "object", "properties": {"q\"": {"type": "boolean"}}}`, `{"q\"": false}`, true},
		{`{"type": "string", "pattern": "^[a-z]+-\\d{2}$"}`, `"ab-12"`, true},
		{`{"type": "string", "pattern": "^[a-z]+-\\d{2}$"}`, `"ab-1"`, false},
		{`{"type": "string", "pattern": "^[a-z]+-\\d{2}$"}`, `"AB-12"`, false},
		{`{"pattern": "cat"}`, `"concatenate"`, true}, // unanchored
		{`{"pattern": "cat"}`, `"dog"`, false},
		{`{"pattern": "^a.b$"}`, `"a\u0041b"`, false}, // a patterned value is written without escapes (form)
		{`{"pattern": "^a.b$"}`, `"aéb"`, true},
		{`{"type": "string", "format": "date-time"}`, `"2024-05-01T10:20:30Z"`, true},
		{`{"type": "string", "format": "date-time"}`, `"2024-05-01 10:20:30"`, false},
		{`{"type": "string", "format": "date"}`, `"2024-13-01"`, false},
		{`{"type": "string", "format": "uuid"}`, `"123e4567-e89b-12d3-a456-426614174000"`, true},
		{`{"type": "string", "format": "uuid"}`, `"123e4567"`, false},
		{`{"type": "string", "format": "ipv6"}`, `"not checked"`, true}, // an annotation
		{`{"type": "string", "format": "email"}`, `"ann@example.com"`, true},
		{`{"type": "string", "format": "email"}`, `"ann at example"`, false},
		{`{"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3}`, `"ab"`, true},
		{`{"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3}`, `"a"`, false},
		{`{"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 3}`, `"abcd"`, false},
		{`{"type": "string", "pattern": "^.+$", "maxLength": 2}`, `"éü"`, true},
		{`{"type": "string", "pattern": "^.+$", "maxLength": 2}`, `"éüa"`, false},
		{`{"type": "string", "format": "date", "maxLength": 10}`, `"2024-01-01"`, true},
		{`{"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}`, `[1, "a"]`, true},
		{`{"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}`, `["a", 1]`, false},
		{`{"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2}`, `[1]`, false},
		{`{"prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}}`, `[1, true, false]`, true},
		{`{"prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}}`, `[1, 2]`, false},
		{`{"prefixItems": [{"type": "integer"}], "items": false}`, `[1, 2]`, false},
		{`{"prefixItems": [{"type": "integer"}], "items": false}`, `[]`, true},
		{`{"items": [{"type": "null"}]}`, `[null, "any"]`, true}, // the drafts before 2020-12: items as an array
		{`{"type": ["number", "integer"]}`, `1.5`, true},         // an alternative another holds adds nothing
		{`{"anyOf": [{"type": "integer"}, {"type": "number"}]}`, `-3`, true},
		{`{"anyOf": [{"type": "object", "properties": {"a": {}}}, {"type": "object"}]}`, `{"x": 1}`, true},
		{`{"anyOf": [{"enum": ["a", "b"]}, {"type": "string"}, {"type": "null"}]}`, `"zzz"`, true},
		{`{"anyOf": [{"enum": ["a", "b"]}, {"type": "string"}, {"type": "null"}]}`, `null`, true},
		{`{"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "array"}]}`, `["x"]`, true},
		// Alternatives that start alike: every one is followed until the
		// text rules it out.
		{petSchema, `{"pet": {"pet_type": "cat", "meows": 3}, "n": 1}`, true},
		{petSchema, `{"pet": {"pet_type": "dog", "barks": 2.5, "name": "Rex"}, "n": 1}`, true},
		{petSchema, `{"pet": {"pet_type": "cat", "barks": 2.5}, "n": 1}`, false},
		{petSchema, `{"pet": {"pet_type": "dog", "meows": 3}, "n": 1}`, false},
		{petSchema, `{"pet": {"pet_type": "cow", "meows": 3}, "n": 1}`, false},
		{peopleSchema, `[{"name": "Ann", "age": 4}, {"name": "red"}, {"name": "abc", "ok": true}, -3, 1, 12, 25]`, true},
		{peopleSchema, `[{"name": "Ann"}]`, false},                       // age is required unless the name is red or abc
		{peopleSchema, `[{"name": "red", "age": 4, "ok": true}]`, false}, // keys of two alternatives
		{peopleSchema, `[{"name": "red", "age": 4}]`, true},
		{peopleSchema, `[5]`, false},
		{peopleSchema, `[1.5]`, false},
		{`{"anyOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": -5}]}`, `-7`, true},
		{`{"anyOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": -5}]}`, `-2`, false},
		{`{"anyOf": [{"type": "string", "maxLength": 2}, {"type": "string", "pattern": "^a"}]}`, `"xy"`, true},
		{`{"anyOf": [{"type": "string", "maxLength": 2}, {"type": "string", "pattern": "^a"}]}`, `"abcdef"`, true},
		{`{"anyOf": [{"type": "string", "maxLength": 2}, {"type": "string", "pattern": "^a"}]}`, `"xyz"`, false},
		{`{"anyOf": [{"anyOf": [{"type": "integer", "maximum": 0}, {"type": "null"}]}, {"type": "integer", "minimum": 10}]}`, `12`, true},
		{`{"anyOf": [{"anyOf": [{"type": "integer", "maximum": 0}, {"type": "null"}]}, {"type": "integer", "minimum": 10}]}`, `5`, false},
		{`{"oneOf": [{"enum": ["a", "b"]}, {"enum": ["c"]}]}`, `"c"`, true},
		{`{"type": "array", "items": {"enum": ["a", "b", 1, 12]}, "uniqueItems": true}`, `["a", 12, 1, "b"]`, true},
		{`{"type": "array", "items": {"enum": ["a", "b", 1, 12]}, "uniqueItems": true}`, `["a", 12, "a"]`, false},
		{`{"type": "array", "items": {"enum": ["a", "b", 1, 12]}, "uniqueItems": true}`, `[1, 12, 1]`, false},
		{`{"type": "array", "items": {"type": "boolean"}, "uniqueItems": true}`, `[true, false]`, true},
		{`{"type": "array", "items": {"type": "boolean"}, "uniqueItems": true}`, `[true, true]`, false},
		{`{"type": "array", "uniqueItems": false}`, `[1, 1]`, true},
		{`{"$defs": {"C": {"enum": ["red", "green"]}}, "type": "array", "items": {"$ref": "#/$defs/C"}, "uniqueItems": true}`, `["green", "red"]`, true},
		{`{"type": "integer", "minimum": 1, "maximum": 5}`, `3`, true},
		{`{"type": "integer", "minimum": 1, "maximum": 5}`, `0`, false},
		{`{"type": "integer", "minimum": 1, "maximum": 5}`, `6`, false},
		{`{"type": "integer", "minimum": 1, "maximum": 5}`, `15`, false},
		{`{"type": "integer", "minimum": -20, "maximum": -10}`, `-15`, true},
		{`{"type": "integer", "minimum": -20, "maximum": -10}`, `-9`, false},
		{`{"type": "integer", "minimum": -20, "maximum": -10}`, `-21`, false},
		{`{"type": "integer", "exclusiveMinimum": 0}`, `0`, false},
		{`{"type": "integer", "multipleOf": 5}`, `-35`, true},
		{`{"properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2}`, `{"a": 1, "c": 2}`, true},
		{`{"type": "object", "minProperties": 2}`, `{"": 0, "": 0}`, false}, // a repeated key (the fuzzer's find)
		{`{"type": "object"}`, `{"x": 1, "y": 2, "x": 3}`, false},
		{`{"type": "object"}`, `{"x\u0041": 1}`, false},       // an additional key is written without escapes
		{`{"properties": {"a\"b": {}}}`, `{"a\"b": 1}`, true}, // a declared one as its name needs
		{`{"properties": {"a": {}, "b": {}, "c": {}}, "minProperties": 2}`, `{"b": 1}`, false},
		{`{"properties": {"a": {}, "b": {}, "c": {}}, "maxProperties": 1}`, `{"b": 1}`, true},
		{`{"properties": {"a": {}, "b": {}, "c": {}}, "maxProperties": 1}`, `{"a": 1, "b": 2}`, false},
		{`{"properties": {"a": {}, "b": {}}, "required": ["b"], "maxProperties": 1}`, `{"a": 1, "b": 2}`, false},
		{`{"type": "object", "minProperties": 1}`, `{}`, false},
		{`{"type": "object", "maxProperties": 2}`, `{"x": 1, "y": 2}`, true},
		{`{"type": "object", "maxProperties": 2}`, `{"x": 1, "y": 2, "z": 3}`, false},
		{`{"type": "integer", "multipleOf": 5}`, `36`, false},
		{`{"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1}`, `0.750`, true},
		{`{"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1}`, `0.7`, false},
		{`{"type": "number", "multipleOf": 0.25, "minimum": 0, "maximum": 1}`, `1.25`, false},
		{`{"type": "number", "multipleOf": 0.01}`, `19.99`, true},
		{`{"type": "number", "multipleOf": 0.01}`, `19.999`, false},
		{`{"type": "number", "multipleOf": 0.01}`, `2e1`, false}, // no exponent with a step
		{`{"type": "integer", "multipleOf": 0.5}`, `7`, true},
		{`{"type": "integer", "exclusiveMinimum": 0}`, `123456789012`, true},
		{`{"type": "integer", "maximum": 0}`, `-0`, true}, // -0 is 0
		{`{"type": "integer", "maximum": 1e2}`, `100`, true},
		{`{"type": "integer", "maximum": 1e2}`, `101`, false},
		{`{"type": "number", "exclusiveMinimum": 0}`, `0.5`, true},
		{`{"type": "number", "exclusiveMinimum": 0}`, `0.000001`, true},
		{`{"type": "number", "exclusiveMinimum": 0}`, `0`, false},
		{`{"type": "number", "exclusiveMinimum": 0}`, `0.0`, false},
		{`{"type": "number", "exclusiveMinimum": 0}`, `-1`, false},
		{`{"type": "number", "exclusiveMinimum": 0}`, `1e3`, false}, // bounded numbers are written without an exponent (form)
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `-1.5`, true},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `-1.51`, false},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `2.25`, true},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `2.250`, true},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `2.2501`, false},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `-0.3`, true},
		{`{"type": "number", "minimum": -1.5, "maximum": 2.25}`, `12`, false},
		{`{"type": "number", "minimum": 10, "exclusiveMaximum": 10.5}`, `10.49`, true},
		{`{"type": "number", "minimum": 10, "exclusiveMaximum": 10.5}`, `10.5`, false},
		{`{"type": "number", "minimum": 10, "exclusiveMaximum": 10.5}`, `9.99`, false},
		{`{"type": "number", "minimum": 3, "exclusiveMinimum": 3}`, `3`, false}, // the tighter bound
		{`{"type": "number", "maximum": -2}`, `-2.5`, true},
		{`{"type": "number", "maximum": -2}`, `-1.5`, false},
		{`{"type": "integer", "minimum": 0.5, "maximum": 2.5}`, `1`, true},
		{`{"type": "integer", "minimum": 0.5, "maximum": 2.5}`, `0`, false},
		{`{"type": ["integer", "null"], "maximum": 99}`, `100`, false},
		{`{"type": "object", "properties": {"stars": {"type": "integer", "minimum": 1, "maximum": 5}}}`, `{"stars": 4}`, true},
		{`{"type": "object", "properties": {"stars": {"type": "integer", "minimum": 1, "maximum": 5}}}`, `{"stars": 40}`, false},
		{`{"type": "object", "properties": {"d": {"type": "string", "format": "date"}, "n": {"type": "integer"}}}`, `{"d": "2024-02-29", "n": 1}`, true},
	} {
		s, err := CompileSchema([]byte(tc.schema))
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		if got := s.Valid(tc.in); got != tc.want {
			t.Errorf("%s\n  Valid(%q) = %v, want %v", tc.schema, tc.in, got, tc.want)
		}
		// The recognizer's form rules (bounded whitespace, compact
		// literals) refuse some values the schema allows.
		form := tc.in == `12 ` || tc.in == `{"a": [1, true]}` || tc.in == `"a\u0041b"` || tc.in == `1e3` || tc.in == `2e1` || tc.in == `{"x\u0041": 1}`
		if ref := refValid(t, tc.schema, tc.in); ref != (tc.want || form) {
			t.Errorf("%s\n  %q: the reference validator says %v, the table %v", tc.schema, tc.in, ref, tc.want)
		}
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "number", "minimum": 1, "maximum": 0.5}`, `at #: number bounds: no number lies within the bounds`},
		{`{"type": "integer", "minimum": 3, "exclusiveMaximum": 3}`, `integer bounds: no integer lies within the bounds`},
		{`{"type": "integer", "minimum": 0.2, "maximum": 0.8}`, `no integer lies within the bounds`},
		{`{"type": "integer", "maximum": 1e300}`, `more than 40 digits`},
		{`{"type": "number", "maximum": "3"}`, `maximum must be a number`},
		{`{"type": "number", "multipleOf": 0}`, `multipleOf: 0 is not greater than 0`},
		{`{"properties": {"a": {}, "b": {}}, "required": ["a", "b"], "maxProperties": 1}`, `maxProperties 1 is below the 2 required properties`},
		{`{"properties": {"a": {}}, "minProperties": 2}`, `minProperties 2 is more than the 1 properties allowed`},
		{`{"type": "object", "minProperties": 3, "maxProperties": 2}`, `maxProperties 2 is below minProperties 3`},
		{`{"type": "object", "minProperties": -1}`, `minProperties must be a non-negative integer`},
		{`{"type": "number", "multipleOf": -2}`, `multipleOf: -2 is not greater than 0`},
		{`{"type": "number", "multipleOf": "2"}`, `multipleOf must be a number`},
		{`{"type": "number", "multipleOf": 0.0001234}`, `1234 units of its last digit, more than the 1000 supported`},
		{`{"type": "integer", "minimum": 1, "maximum": 4, "multipleOf": 5}`, `integer bounds and multipleOf: no integer within the bounds is a multiple of the step`},
		{`{"type": "string", "multipleOf": 2}`, `"multipleOf" does not apply to type string`},
		{`{"type": "array", "uniqueItems": true}`, `uniqueItems is supported for arrays of enum, const or boolean items only`},
		{`{"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true, "minItems": 3}`, `minItems 3 is more than the 2 distinct items`},
		{`{"type": "object", "not": {}}`, `keyword "not" is not supported`},
		{`{"properties": {"d": {"type": "string", "pattern": "a(?=b)"}}}`, `at #/properties/d: pattern "a(?=b)" at byte 2: lookarounds`},
		{`{"type": "string", "format": "date", "maxLength": 9}`, `minLength 0, maxLength 9 beside the pattern: pattern "^[0-9]{4}`},
		{`{"type": "string", "pattern": "a", "maxLength": 100000}`, `must be at most 4096`},
		{`{"type": "array", "prefixItems": [` + strings.Repeat(`{"type": "string", "maxLength": 1000, "pattern": "^a*$"}, `, 17) + `{}]}`, `more than 16384 automaton states together`},
		{`{"type": "string", "format": "uuid", "pattern": "^a"}`, `pattern beside format "uuid"`},
		{`{"type": "string", "pattern": 3}`, `pattern must be a string`},
		{`{"type": "strin"}`, `unknown type "strin"`},
		{`{"type": "string", "minItems": 1}`, `"minItems" does not apply to type string`},
		{`{"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "pattern": "a"}]}`, `at #: two alternatives of a oneOf (a string and a string) may both match one value`},
		{`{"oneOf": [{"enum": ["a", "b"]}, {"enum": ["b"]}]}`, `may both match one value`},
		{`{"properties": {"p": {"oneOf": [{"properties": {"t": {"const": 1}}, "required": ["t"]}, {"properties": {"t": {"const": 2}}}]}}}`, `at #/properties/p: two alternatives of a oneOf (an object and an object)`},
		{`{"$ref": "#/$defs/x"}`, `points at nothing`},
		{`{"$ref": "https://example.com/s.json"}`, `is not local`},
		{`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`, `circular`},
		{`{"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"}`, `contains itself`},
		{`{"type": "object", "properties": {"a": {}}, "required": ["b"]}`, `required property "b" is not among`},
		{`{"type": "string", "minLength": 3, "maxLength": 2}`, `maxLength 2 is below minLength 3`},
		{`{"type": "string", "maxLength": -1}`, `maxLength must be a non-negative integer`},
		{`{"enum": []}`, `non-empty`},
		{`{"type": "string", "enum": [1]}`, `enum value 0 is a integer, not of type string`},
		{`{"allOf": [{}, {}]}`, `allOf is supported with one schema only`},
		{`{"prefixItems": {}}`, `prefixItems must be an array`},
		{`{"prefixItems": [{}], "items": false, "minItems": 2}`, `minItems 2 is more than the 1 items`},
		{`{"prefixItems": [{}], "items": [{}]}`, `items as an array beside prefixItems`},
		{`false`, `cannot be generated`},
		{`{"type": "object"`, `not valid JSON`},
		{`{} {}`, `text after the schema`},
		{`[1]`, `must be an object or a boolean`},
	} {
		_, err := CompileSchema([]byte(tc.schema))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CompileSchema(%s) = %v, want an error with %q", tc.schema, err, tc.want)
		}
	}
}

// TestSchemaMask: over a toy vocabulary, Mask allows exactly the tokens
// that continue a value of the schema.
func TestSchemaMask(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}}, "required": ["ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	vocab := []string{"", `{"`, `ok`, `n`, `":`, ` true`, ` 1`, `.5`, `,"`, `}`, `"`, ` `, `o`}
	const eos = 0
	j := s.Constraint(toyVocab(vocab, eos))
	allowed := func() string { return allowedTexts(j, vocab) }
	for _, step := range []struct {
		id   int
		want string // allowed before the step
	}{
		{1, `{"| `},    // the object
		{2, `ok|o`},    // "ok" is required, so only it
		{4, `":|"`},    // the key is whole
		{5, ` true| `}, // a boolean
		{8, `,"|}| `},  // "n" may follow, or the end
		{3, `n`},       // only "n" is left
		{4, `":|"`},
		{6, ` 1| `}, // an integer: no fraction
		{9, `}| `},  // the end or a space ("n" was the last key; " 1" is no digit)
	} {
		if got := allowed(); got != step.want {
			t.Fatalf("before %q: allowed %s, want %s", vocab[step.id], got, step.want)
		}
		j.Accept(step.id)
	}
	if got := allowed(); got != "" || !j.Complete() {
		t.Fatalf("after the object: allowed %q (want only end of generation), complete %v", got, j.Complete())
	}
}

// TestSchemaTopLevelNumber: a top-level number is whole at every digit,
// so end of generation is allowed there, and digits too.
func TestSchemaTopLevelNumber(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type": "integer"}`))
	if err != nil {
		t.Fatal(err)
	}
	vocab := []string{"", "4", "2", " ", "-"}
	j := s.Constraint(toyVocab(vocab, 0))
	l := make([]float32, len(vocab))
	j.Mask(l)
	if !math.IsInf(float64(l[0]), -1) || math.IsInf(float64(l[4]), -1) {
		t.Fatalf("at the start: %v (want no end, '-' allowed)", l)
	}
	j.Accept(1)
	l = make([]float32, len(vocab))
	j.Mask(l)
	if math.IsInf(float64(l[0]), -1) || math.IsInf(float64(l[2]), -1) || !math.IsInf(float64(l[3]), -1) {
		t.Fatalf("after 4: %v (want end and digits, no space)", l)
	}
}

// FuzzSchemaValid: what the recognizer accepts for each test schema is a
// value the reference validator accepts, and its every prefix is accepted
// as a prefix; and no accepted prefix is a dead end: unless the value is
// complete, some byte continues it (a constrained generation never runs
// out of tokens it may pick because of the recognizer).
func FuzzSchemaValid(f *testing.F) {
	schemas := []string{personSchema, treeSchema, looseSchema, unionSchema, `{"type": "array", "items": {"type": "string", "maxLength": 1}}`,
		`{"type": "array", "items": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "integer"}]}}`,
		`{"type": "object", "properties": {"p": {"type": "string", "pattern": "^(ab|é)+\\d?$"}, "q": {"pattern": "x"}}}`,
		`{"type": "array", "items": {"type": "integer", "minimum": -15, "exclusiveMaximum": 120}}`,
		`{"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string", "maxLength": 2}], "items": false, "minItems": 1}`,
		`{"type": "array", "items": {"anyOf": [{"type": "integer", "maximum": 9}, {"type": "number"}, {"enum": ["x"]}, {"type": "string"}]}}`,
		`{"type": "array", "items": {"type": "array", "items": {"enum": [1, 12, "a", true]}, "uniqueItems": true, "minItems": 2}}`,
		`{"type": "array", "items": {"type": "number", "minimum": -12.5, "exclusiveMaximum": 3.25}}`,
		`{"type": "array", "items": {"type": "string", "pattern": "^(ab|é|x)*$", "minLength": 2, "maxLength": 3}}`,
		`{"type": "array", "items": {"type": "number", "multipleOf": 0.25, "minimum": -3, "maximum": 12}}`,
		`{"type": "array", "items": {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "integer"}, "d": {}}, "required": ["c"], "minProperties": 2, "maxProperties": 3}}`,
		`{"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"}, "minProperties": 2, "maxProperties": 2}}`,
		petSchema, peopleSchema}
	compiled := make([]*Schema, len(schemas))
	for i, s := range schemas {
		var err error
		if compiled[i], err = CompileSchema([]byte(s)); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{`{"name": "Ann", "age": 41, "tags": ["a", 7]}`, `{"v": 1, "kids": [{"v": 2}]}`, `{"id": 3, "x": true}`, `[1, -2]`, `"ab"`, `["\ud83d\ude00", "x"]`,
		`["2024-05-01T10:20:30.5+01:00", 7]`, `{"p": "abéab1", "q": "axb"}`, `[-15, 0, 119, 12]`, `[3, "ab"]`, `[-12.5, 3.249, 0.0, -0.5]`, `["abé", "xx"]`, `[12, -2.5e3, "x", "y"]`, `[[1, 12], [true, "a", 1]]`,
		`[0.25, -2.75, 11.50]`, `[{"a": 1, "c": 2}, {"b": null, "c": 3, "d": 4}]`, `[{"a": 1, "x": 2}, {"x": 1, "y": 2}]`,
		`{"pet": {"pet_type": "dog", "barks": 2.5, "name": "Rex"}, "n": 1}`, `[{"name": "Ann", "age": 4}, {"name": "red"}, -3, 1, 12, 25]`} {
		for i := range schemas {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, s string) {
		i := int(which) % len(schemas)
		if r := newJSONSet(compiled[i]); r.feed(s) && !r.complete() {
			live := false
			for c := 0; c < 256 && !live; c++ {
				u := r.clone()
				live = u.step(byte(c))
			}
			if !live {
				t.Fatalf("schema %d: %q is accepted but nothing may follow it", i, s)
			}
		}
		if !compiled[i].Valid(s) {
			return
		}
		if !json.Valid([]byte(s)) || !refValid(t, schemas[i], s) {
			t.Fatalf("schema %d accepted %q, which the reference validator refuses", i, s)
		}
		for k := range len(s) {
			r := newJSONSet(compiled[i])
			if !r.feed(s[:k]) {
				t.Fatalf("prefix %q of %q refused", s[:k], s)
			}
		}
	})
}

// FuzzCompileSchema: no schema text panics the compiler, and a compiled
// schema takes any text without panicking.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{personSchema, treeSchema, looseSchema, unionSchema, `{"enum": [1, "a", null]}`, `{"$ref": "#"}`} {
		f.Add(s, `{"name": "x", "v": [1, {"a": null}], "id": 3}`)
	}
	f.Fuzz(func(t *testing.T, schema, text string) {
		s, err := CompileSchema([]byte(schema))
		if err != nil {
			return
		}
		r := newJSONSet(s)
		for i := 0; i < len(text) && r.step(text[i]); i++ {
			r.complete()
		}
	})
}

// refValid is the tests' own reading of the schema subset over a decoded
// value: written from the JSON Schema text, not from the recognizer.
func refValid(t testing.TB, schema, text string) bool {
	sd := json.NewDecoder(strings.NewReader(schema))
	sd.UseNumber()
	root, err := readOrdered(sd, 0)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := readOrdered(dec, 0)
	if err != nil || dec.More() || !utf8.ValidString(text) {
		return false
	}
	return refCheck(root, root, v)
}

func refCheck(root, sch, v ordered) bool {
	if b, ok := sch.v.(bool); ok && !sch.isObj {
		return b
	}
	if r, ok := sch.get("$ref"); ok {
		target := root
		if ref := r.v.(string); ref != "#" {
			for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
				target, _ = target.get(p)
			}
		}
		return refCheck(root, target, v)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := sch.get(k); ok {
			n := 0
			for _, a := range alts.arr {
				if refCheck(root, a, v) {
					n++
				}
			}
			return n > 0 && (k == "anyOf" || n == 1)
		}
	}
	if all, ok := sch.get("allOf"); ok {
		for _, a := range all.arr {
			if !refCheck(root, a, v) {
				return false
			}
		}
	}
	var lits []ordered
	if c, ok := sch.get("const"); ok {
		lits = []ordered{c}
	}
	if e, ok := sch.get("enum"); ok {
		lits = e.arr
	}
	if lits != nil {
		found := false
		for _, l := range lits {
			found = found || jsonEqual(l, v)
		}
		if !found {
			return false
		}
	}
	if ty, ok := sch.get("type"); ok {
		types := []ordered{ty}
		if ty.isArr {
			types = ty.arr
		}
		match := false
		for _, x := range types {
			match = match || x.v == v.typeOf() || x.v == "number" && v.typeOf() == "integer"
		}
		if !match {
			return false
		}
	}
	props, hasProps := sch.get("properties")
	switch {
	case v.isObj:
		last, extra := -1, false
		seen := map[string]bool{}
		for _, m := range v.obj {
			if seen[m.k] {
				return false
			}
			seen[m.k] = true
			idx := -1
			for i, p := range props.obj {
				if p.k == m.k {
					idx = i
				}
			}
			if idx >= 0 {
				if idx <= last || extra {
					return false // declared ones in the schema's order, before any additional one
				}
				last = idx
				if !refCheck(root, props.obj[idx].v, m.v) {
					return false
				}
				continue
			}
			ap, has := sch.get("additionalProperties")
			if !has {
				ap = ordered{v: !hasProps} // llama.cpp's default: none when properties are given
			}
			if !refCheck(root, ap, m.v) {
				return false
			}
			extra = true
		}
		req, _ := sch.get("required")
		for _, r := range req.arr {
			if !seen[r.v.(string)] {
				return false
			}
		}
		if n, ok := refInt(sch, "minProperties"); ok && len(v.obj) < n {
			return false
		}
		if n, ok := refInt(sch, "maxProperties"); ok && len(v.obj) > n {
			return false
		}
	case v.isArr:
		pre, hasPre := sch.get("prefixItems")
		it, hasItems := sch.get("items")
		if hasItems && it.isArr && !hasPre {
			pre, hasPre, hasItems = it, true, false
		}
		for i, e := range v.arr {
			switch {
			case hasPre && i < len(pre.arr):
				if !refCheck(root, pre.arr[i], e) {
					return false
				}
			case hasItems:
				if !refCheck(root, it, e) {
					return false
				}
			}
		}
		if u, ok := sch.get("uniqueItems"); ok && u.v == true {
			for i := range v.arr {
				for j := range i {
					if jsonEqual(v.arr[i], v.arr[j]) {
						return false
					}
				}
			}
		}
		if n, ok := refInt(sch, "minItems"); ok && len(v.arr) < n {
			return false
		}
		if n, ok := refInt(sch, "maxItems"); ok && len(v.arr) > n {
			return false
		}
	default:
		if n, ok := v.v.(json.Number); ok {
			if step, ok := sch.get("multipleOf"); ok {
				x, _ := new(big.Rat).SetString(string(n))
				d, _ := new(big.Rat).SetString(string(step.v.(json.Number)))
				if !x.Quo(x, d).IsInt() {
					return false
				}
			}
			f, _ := strconv.ParseFloat(string(n), 64)
			for k, out := range map[string]func(b float64) bool{"minimum": func(b float64) bool { return f < b },
				"maximum": func(b float64) bool { return f > b }, "exclusiveMinimum": func(b float64) bool { return f <= b },
				"exclusiveMaximum": func(b float64) bool { return f >= b }} {
				if b, ok := sch.get(k); ok {
					if bf, _ := strconv.ParseFloat(string(b.v.(json.Number)), 64); out(bf) {
						return false
					}
				}
			}
		}
		if s, ok := v.v.(string); ok {
			n := utf8.RuneCountInString(s)
			if m, ok := refInt(sch, "minLength"); ok && n < m {
				return false
			}
			if m, ok := refInt(sch, "maxLength"); ok && n > m {
				return false
			}
			// Go's regexp reads this subset of ECMA-262 alike; the
			// enforced formats are the patterns pattern.go gives them.
			if p, ok := sch.get("pattern"); ok && !regexp.MustCompile(p.v.(string)).MatchString(s) {
				return false
			}
			if f, ok := sch.get("format"); ok && formats[f.v.(string)] != "" && !regexp.MustCompile(formats[f.v.(string)]).MatchString(s) {
				return false
			}
		}
	}
	return true
}

func refInt(sch ordered, k string) (int, bool) {
	v, ok := sch.get(k)
	if !ok {
		return 0, false
	}
	n, _ := v.v.(json.Number).Int64()
	return int(n), true
}

// jsonEqual compares two decoded values as JSON values.
func jsonEqual(a, b ordered) bool {
	var x, y any
	var sa, sb strings.Builder
	a.text(&sa)
	b.text(&sb)
	if json.Unmarshal([]byte(sa.String()), &x) != nil || json.Unmarshal([]byte(sb.String()), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestMaskMatchesTrials: Mask's shortcuts (the next-byte table, plain
// tokens inside strings judged by length) rule out exactly the tokens a
// trial of each token's text rules out, along random walks through
// several schemas over a vocabulary of structural pieces, escapes, split
// UTF-8 and plain words.
func TestMaskMatchesTrials(t *testing.T) {
	vocab := []string{"", `{"`, `"`, `":`, `:`, ` `, "\n  ", `,`, `}`, `]`, `[`, `{`, `\`, `\"`, `\n`, `\u00`, `e9`, `é`,
		"\xc3", "\xa9", "\xe2\x82", "\xac", `abc`, `a`, ` word`, `name`, `age`, `ok`, `1`, `23`, `-`, `.5`, `e+`, `true`, `fal`, `se`,
		`null`, `x"`, `"}`, `},`, `"]`, `red`, `"red"`, "\x01", `ab"c`, `😀`}
	v := toyVocab(vocab, 0)
	schemas := []string{`{"type":"object"}`, personSchema, treeSchema, looseSchema, unionSchema,
		`{"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 4}, "c": {"enum": ["red", 7]}}}`,
		`{"type": "object", "properties": {"a": {"type": "string", "pattern": "^(abc|é)+-?\\d*$"}, "ok": {"type": "string", "pattern": "a"}}}`,
		`{"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 23}}`,
		`{"type": "array", "items": {"type": "number", "minimum": 0.5, "maximum": 23}}`,
		`{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-c]+$", "minLength": 2, "maxLength": 4}}}`,
		`{"type": "array", "items": {"enum": ["red", 1, 23, true]}, "uniqueItems": true}`, peopleSchema}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, text := range schemas {
		s, err := CompileSchema([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		for walk := range 150 {
			j := s.Constraint(v)
			for step := range 60 {
				fast := make([]float32, len(vocab))
				j.Mask(fast)
				var allowed []int
				for id, p := range vocab {
					want := false
					if id == 0 {
						want = j.rd.complete()
					} else if p != "" && !j.rd.done() {
						tr := j.rd.clone()
						want = tr.feed(p)
					}
					if got := !math.IsInf(float64(fast[id]), -1); got != want {
						t.Fatalf("schema %s, walk %d step %d, readings %+v: token %q allowed %v, a trial says %v", text, walk, step, j.rd.sts, p, got, want)
					}
					if want {
						allowed = append(allowed, id)
					}
				}
				if len(allowed) == 0 {
					break
				}
				id := allowed[rng.IntN(len(allowed))]
				if id == 0 {
					break
				}
				j.Accept(id)
			}
		}
	}
}

// TestForkUnionWalks: random generations under schemas whose unions one
// byte does not decide end, when they end, in values the reference
// validator accepts, and reach every alternative.
func TestForkUnionWalks(t *testing.T) {
	vocab := []string{"", `{"`, `"`, `":`, `:`, ` `, `,`, `}`, `]`, `[`, `{`, `",`, `"}`, `pet`, `_type`, `cat`, `dog`, `meows`, `barks`,
		`n`, `ame`, `name`, `age`, `ok`, `red`, `abc`, `"red"`, `"abc"`, `Rex`, `1`, `2`, `.5`, `-`, `true`, `3`, `0`} // every key can be finished
	v := toyVocab(vocab, 0)
	for _, tc := range []struct {
		schema string
		reach  []string // texts some generated value contains
	}{
		{petSchema, []string{`"cat"`, `"dog"`, `"meows"`, `"barks"`}},
		{peopleSchema, []string{`"age"`, `"ok"`, `"red"`}},
	} {
		s, err := CompileSchema([]byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		seen := map[string]bool{}
		ended := 0
		for range 400 {
			j := s.Constraint(v)
			var text strings.Builder
			for range 80 {
				logits := make([]float32, len(vocab))
				if !j.Mask(logits) {
					t.Fatalf("no token may follow %q", text.String())
				}
				var allowed []int
				for id, x := range logits {
					if !math.IsInf(float64(x), -1) {
						allowed = append(allowed, id)
					}
				}
				id := allowed[rng.IntN(len(allowed))]
				if id == 0 {
					if !refValid(t, tc.schema, text.String()) {
						t.Fatalf("generated %q, which the reference validator refuses", text.String())
					}
					for _, r := range tc.reach {
						seen[r] = seen[r] || strings.Contains(text.String(), r)
					}
					ended++
					break
				}
				j.Accept(id)
				text.WriteString(vocab[id])
			}
		}
		for _, r := range tc.reach {
			if !seen[r] {
				t.Errorf("%d values ended; none contains %s", ended, r)
			}
		}
	}
}
