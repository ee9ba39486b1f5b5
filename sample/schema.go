package sample

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Schema is a JSON Schema (a subset of draft 2020-12, the one structured
// outputs use: Ollama's format objects, OpenAI's json_schema) compiled
// for the JSON constraint. What it enforces:
//
//   - type (one name or a list), enum, const, anyOf and oneOf (once
//     the alternatives that another holds whole are dropped: holds;
//     alternatives that start alike are followed together, jsonSet; a
//     oneOf's must be disjoint), allOf of one
//     schema, $ref to "#", "#/$defs/…" or "#/definitions/…" (recursion
//     allowed);
//   - objects: properties, written in the schema's order (llama.cpp's and
//     llguidance's rule), required, additionalProperties (false when
//     absent and properties are given: llama.cpp's default; additional
//     keys come after the declared ones), minProperties, maxProperties;
//   - arrays: items, prefixItems (tuples), minItems, maxItems,
//     uniqueItems (of literal items); strings: minLength, maxLength (in
//     characters; an escape counts as one), pattern (a subset of ECMA-262,
//     pattern.go), format date, time, date-time, duration, uuid, ipv4,
//     hostname and email (as patterns; other formats are annotations); numbers and integers: minimum,
//     maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (written
//     without an exponent then).
//
// Annotations (title, description, default, examples, …) are ignored;
// any other keyword is an error that names it and where it is, never a
// constraint silently dropped.
type Schema struct {
	nodes []snode
	root  int32
}

// Node kinds.
const (
	sAny uint8 = iota
	sObject
	sArray
	sString
	sNumber
	sInteger
	sLiteral // enum, const, boolean, null: one of lits
	sUnion
	sPending // a $ref not resolved yet
)

// snode is one compiled schema.
type snode struct {
	kind     uint8
	props    []sprop // object, in the schema's order
	required uint64  // object: bit i set if props[i] is required
	extra    int32   // object: the schema of additional properties' values; −1: none
	minProps int32   // object: minProperties
	maxProps int32   // object: maxProperties; −1: unbounded
	items    int32   // array: the items' schema (after prefix)
	prefix   []int32 // array: the first items' schemas (prefixItems)
	unique   bool    // array: uniqueItems (items a literal set)
	minItems int32
	maxItems int32    // −1: unbounded
	minLen   int32    // string
	maxLen   int32    // −1: unbounded
	pat      *pattern // string: pattern or format (pattern.go), nil: none
	num      *pattern // number, integer: the values within minimum..maximum (numrange.go), nil: any
	lits     []string
	alts     []int32   // union (never a union itself: unionFirsts flattens them)
	first    [4]uint64 // union: the bytes a value may start with
	fork     bool      // union: two alternatives may start with the same byte
	one      bool      // union: a oneOf
}

// sprop is one declared property: its key as JSON writes it between the
// quotes, and its value's schema.
type sprop struct {
	key  string
	node int32
}

// The built-in nodes every schema starts with (JSON mode's root is
// nodeAnyObject).
const (
	nodeAny int32 = iota
	nodeAnyObject
	nodeAnyArray
	nodeAnyString
	nodeAnyNumber
	nodeBool
	nodeNull
	nodeBuiltins
)

// Limits: a bitmask covers an object's properties and a literal set.
const (
	maxSchemaProps = 64
	maxSchemaLits  = 64
	maxSchemaNodes = 10000
	maxSchemaBytes = 1 << 20
)

func builtinNodes() []snode {
	return []snode{
		nodeAny:       {kind: sAny},
		nodeAnyObject: {kind: sObject, extra: nodeAny, maxProps: -1},
		nodeAnyArray:  {kind: sArray, items: nodeAny, maxItems: -1},
		nodeAnyString: {kind: sString, maxLen: -1},
		nodeAnyNumber: {kind: sNumber},
		nodeBool:      {kind: sLiteral, lits: []string{"true", "false"}},
		nodeNull:      {kind: sLiteral, lits: []string{"null"}},
	}
}

// objectSchema is JSON mode's: any one object.
var objectSchema = &Schema{nodes: builtinNodes(), root: nodeAnyObject}

// CompileSchema compiles a JSON Schema given as JSON text.
func CompileSchema(text []byte) (*Schema, error) {
	if len(text) > maxSchemaBytes {
		return nil, fmt.Errorf("JSON schema of %d bytes is over the limit of %d", len(text), maxSchemaBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	root, err := readOrdered(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("JSON schema is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("JSON schema is not valid JSON: text after the schema")
	}
	c := &schemaCompiler{root: root, s: &Schema{nodes: builtinNodes()}, refs: map[string]int32{}, unique: map[int32]string{}, unions: map[int32]string{}}
	r, err := c.compile(root, "#")
	if err != nil {
		return nil, err
	}
	c.s.root = r
	for i := range c.s.nodes {
		if c.s.nodes[i].kind == sPending {
			return nil, errors.New("JSON schema: a $ref refers only to itself (circular)")
		}
	}
	for i := range c.s.nodes {
		// Unique items are enforced for a literal set (enum, const,
		// boolean): the array's frame keeps which it has written.
		if nd := &c.s.nodes[i]; nd.unique {
			lits := c.s.nodes[nd.items].lits
			switch path := c.unique[int32(i)]; {
			case c.s.nodes[nd.items].kind != sLiteral:
				return nil, schemaErr(path, "uniqueItems is supported for arrays of enum, const or boolean items only")
			case int(nd.minItems) > len(lits):
				return nil, schemaErr(path, "minItems %d is more than the %d distinct items uniqueItems allows", nd.minItems, len(lits))
			}
		}
		if c.s.nodes[i].kind == sUnion {
			if err := c.unionFirsts(int32(i), map[int32]bool{}); err != nil {
				return nil, err
			}
		}
	}
	return c.s, nil
}

// ordered is a decoded JSON value whose objects keep their keys' order.
type ordered struct {
	obj   []kv // an object (non-nil, possibly empty, when isObj)
	isObj bool
	arr   []ordered
	isArr bool
	v     any // a scalar: string, json.Number, bool or nil
}

type kv struct {
	k string
	v ordered
}

func readOrdered(dec *json.Decoder, depth int) (ordered, error) {
	if depth > 512 {
		return ordered{}, errors.New("nested more than 512 deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return ordered{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := ordered{isObj: true, obj: []kv{}}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return o, err
				}
				v, err := readOrdered(dec, depth+1)
				if err != nil {
					return o, err
				}
				o.obj = append(o.obj, kv{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := ordered{isArr: true}
			for dec.More() {
				v, err := readOrdered(dec, depth+1)
				if err != nil {
					return a, err
				}
				a.arr = append(a.arr, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return ordered{}, fmt.Errorf("unexpected %v", t)
	default:
		return ordered{v: t}, nil
	}
}

// get returns an object's member k.
func (o ordered) get(k string) (ordered, bool) {
	for _, m := range o.obj {
		if m.k == k {
			return m.v, true
		}
	}
	return ordered{}, false
}

// text writes o as compact JSON (keys in their order, no HTML escaping):
// the one way a literal may be written.
func (o ordered) text(b *strings.Builder) {
	switch {
	case o.isObj:
		b.WriteByte('{')
		for i, m := range o.obj {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(m.k))
			b.WriteByte(':')
			m.v.text(b)
		}
		b.WriteByte('}')
	case o.isArr:
		b.WriteByte('[')
		for i, e := range o.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			e.text(b)
		}
		b.WriteByte(']')
	default:
		switch v := o.v.(type) {
		case string:
			b.WriteString(jsonString(v))
		case json.Number:
			b.WriteString(v.String())
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteString("null")
		}
	}
}

// jsonString is s as a JSON string, without the HTML escapes
// encoding/json adds by default.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// typeOf names a decoded value's JSON type as "type" does.
func (o ordered) typeOf() string {
	switch v := o.v.(type) {
	case string:
		return "string"
	case json.Number:
		if !strings.ContainsAny(v.String(), ".eE") {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	}
	switch {
	case o.isObj:
		return "object"
	case o.isArr:
		return "array"
	}
	return "null"
}

type schemaCompiler struct {
	root   ordered
	s      *Schema
	refs   map[string]int32 // $ref target → node
	states int              // automaton states of the patterns and bounds so far
	unique map[int32]string // arrays of unique items → where they are, checked once $refs are resolved
	unions map[int32]string // unions → where they are, for unionFirsts' errors
}

// annotations are keywords that do not constrain a value.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "$schema": true, "$id": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true,
	// OpenAPI's discriminator (pydantic writes it beside a oneOf) names
	// the property that tells the alternatives apart: the alternatives'
	// own schemas say as much.
	"discriminator": true,
}

// supportedKeywords lists what CompileSchema enforces, for its errors.
const supportedKeywords = "type, enum, const, anyOf, oneOf, allOf (of one schema), $ref (local), properties, required, additionalProperties, minProperties, maxProperties, items, prefixItems, minItems, maxItems, uniqueItems (of enum items), minLength, maxLength, pattern, format (date, time, date-time, duration, uuid, ipv4, hostname, email; others are annotations), minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (steps of up to 1000 units of their last digit)"

func (c *schemaCompiler) add(n snode) (int32, error) {
	if len(c.s.nodes) >= maxSchemaNodes {
		return 0, fmt.Errorf("JSON schema has more than %d parts", maxSchemaNodes)
	}
	c.s.nodes = append(c.s.nodes, n)
	return int32(len(c.s.nodes) - 1), nil
}

func schemaErr(path, format string, args ...any) error {
	return fmt.Errorf("JSON schema at %s: %s", path, fmt.Sprintf(format, args...))
}

// compile compiles the schema o found at path (a JSON pointer).
func (c *schemaCompiler) compile(o ordered, path string) (int32, error) {
	if !o.isObj {
		if b, ok := o.v.(bool); ok && !o.isArr {
			if b {
				return nodeAny, nil
			}
			return 0, schemaErr(path, "false (no value allowed) cannot be generated")
		}
		return 0, schemaErr(path, "a schema must be an object or a boolean")
	}
	// Split the keywords: the ones that decide the shape, and the rest.
	var kw = map[string]ordered{}
	for _, m := range o.obj {
		if annotations[m.k] {
			continue
		}
		switch m.k {
		case "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "properties", "required",
			"additionalProperties", "minProperties", "maxProperties", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "format",
			"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			kw[m.k] = m.v
		default:
			return 0, schemaErr(path, "keyword %q is not supported (supported: %s)", m.k, supportedKeywords)
		}
	}
	alone := func(k string) error {
		for o := range kw {
			if o != k {
				return schemaErr(path, "%q beside %q is not supported", o, k)
			}
		}
		return nil
	}
	if ref, ok := kw["$ref"]; ok {
		if err := alone("$ref"); err != nil {
			return 0, err
		}
		return c.ref(ref, path)
	}
	if all, ok := kw["allOf"]; ok {
		if err := alone("allOf"); err != nil {
			return 0, err
		}
		if !all.isArr || len(all.arr) != 1 {
			return 0, schemaErr(path, "allOf is supported with one schema only")
		}
		return c.compile(all.arr[0], path+"/allOf/0")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, ok := kw[k]
		if !ok {
			continue
		}
		if err := alone(k); err != nil {
			return 0, err
		}
		if !alts.isArr || len(alts.arr) == 0 {
			return 0, schemaErr(path, "%s must be a non-empty array", k)
		}
		u := snode{kind: sUnion, one: k == "oneOf"}
		for i, a := range alts.arr {
			n, err := c.compile(a, fmt.Sprintf("%s/%s/%d", path, k, i))
			if err != nil {
				return 0, err
			}
			u.alts = append(u.alts, n)
		}
		n, err := c.add(u)
		c.unions[n] = path
		return n, err
	}
	if e, ok := kw["const"]; ok {
		kw["enum"] = ordered{isArr: true, arr: []ordered{e}}
		delete(kw, "const")
	}
	var types []string
	if t, ok := kw["type"]; ok {
		switch {
		case t.isArr:
			for _, e := range t.arr {
				s, ok := e.v.(string)
				if !ok || e.isObj || e.isArr {
					return 0, schemaErr(path, "type must be a name or a list of names")
				}
				types = append(types, s)
			}
		default:
			s, ok := t.v.(string)
			if !ok || t.isObj {
				return 0, schemaErr(path, "type must be a name or a list of names")
			}
			types = []string{s}
		}
		if len(types) == 0 {
			return 0, schemaErr(path, "type is an empty list")
		}
	}
	if e, ok := kw["enum"]; ok {
		return c.enum(e, types, kw, path)
	}
	if types == nil {
		// No type: what the keywords imply, or anything.
		switch {
		case has(kw, "properties", "required", "additionalProperties", "minProperties", "maxProperties"):
			types = []string{"object"}
		case has(kw, "items", "prefixItems", "minItems", "maxItems", "uniqueItems"):
			types = []string{"array"}
		case has(kw, "minLength", "maxLength", "pattern", "format"):
			types = []string{"string"}
		default:
			return nodeAny, nil
		}
	}
	if err := checkTypes(types, kw, path); err != nil {
		return 0, err
	}
	var alts []int32
	for _, t := range types {
		n, err := c.typed(t, kw, path)
		if err != nil {
			return 0, err
		}
		alts = append(alts, n)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	n, err := c.add(snode{kind: sUnion, alts: alts})
	c.unions[n] = path
	return n, err
}

func has(kw map[string]ordered, keys ...string) bool {
	for _, k := range keys {
		if _, ok := kw[k]; ok {
			return true
		}
	}
	return false
}

// enum compiles enum (const arrives as an enum of one): each value
// written as compact JSON, the one way the output may write it.
func (c *schemaCompiler) enum(e ordered, types []string, kw map[string]ordered, path string) (int32, error) {
	for k := range kw {
		if k != "enum" && k != "type" {
			return 0, schemaErr(path, "%q beside enum or const is not supported", k)
		}
	}
	if !e.isArr || len(e.arr) == 0 {
		return 0, schemaErr(path, "enum must be a non-empty array")
	}
	if len(e.arr) > maxSchemaLits {
		return 0, schemaErr(path, "enum has %d values, over the limit of %d", len(e.arr), maxSchemaLits)
	}
	n := snode{kind: sLiteral}
	seen := map[string]bool{}
	for i, v := range e.arr {
		if types != nil && !typeAllows(types, v.typeOf()) {
			return 0, schemaErr(path, "enum value %d is a %s, not of type %s", i, v.typeOf(), strings.Join(types, " or "))
		}
		var b strings.Builder
		v.text(&b)
		if !seen[b.String()] {
			seen[b.String()] = true
			n.lits = append(n.lits, b.String())
		}
	}
	return c.add(n)
}

func typeAllows(types []string, t string) bool {
	for _, s := range types {
		if s == t || s == "number" && t == "integer" {
			return true
		}
	}
	return false
}

// typeKeywords lists the keywords that apply to each type.
var typeKeywords = map[string][]string{
	"object":  {"properties", "required", "additionalProperties", "minProperties", "maxProperties"},
	"array":   {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"},
	"string":  {"minLength", "maxLength", "pattern", "format"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
	"boolean": nil,
	"null":    nil,
}

// checkTypes fails on an unknown type name and on a keyword that applies
// to none of types.
func checkTypes(types []string, kw map[string]ordered, path string) error {
	for _, t := range types {
		if _, ok := typeKeywords[t]; !ok {
			return schemaErr(path, "unknown type %q (types: object, array, string, number, integer, boolean, null)", t)
		}
	}
	for k := range kw {
		if k == "type" {
			continue
		}
		applies := false
		for _, t := range types {
			for _, m := range typeKeywords[t] {
				applies = applies || m == k
			}
		}
		if !applies {
			return schemaErr(path, "%q does not apply to type %s", k, strings.Join(types, " or "))
		}
	}
	return nil
}

// typed compiles the schema's keywords for type t.
func (c *schemaCompiler) typed(t string, kw map[string]ordered, path string) (int32, error) {
	switch t {
	case "object":
		return c.object(kw, path)
	case "array":
		n := snode{kind: sArray, items: nodeAny, maxItems: -1}
		// A tuple: prefixItems (draft 2020-12), or items as an array (the
		// drafts before it, whose additionalItems is then any).
		pre, hasPre := kw["prefixItems"]
		prePath := path + "/prefixItems"
		it, hasItems := kw["items"]
		if hasItems && it.isArr && !hasPre {
			pre, hasPre, hasItems, prePath = it, true, false, path+"/items"
		}
		if hasPre {
			if !pre.isArr {
				return 0, schemaErr(path, "prefixItems must be an array of schemas")
			}
			for i, p := range pre.arr {
				k, err := c.compile(p, fmt.Sprintf("%s/%d", prePath, i))
				if err != nil {
					return 0, err
				}
				n.prefix = append(n.prefix, k)
			}
		}
		noMore := false // items: false after a tuple
		if hasItems {
			if b, ok := it.v.(bool); ok && !b && !it.isObj && !it.isArr && hasPre {
				noMore = true
			} else if it.isArr {
				return 0, schemaErr(path, "items as an array beside prefixItems is not supported")
			} else {
				var err error
				if n.items, err = c.compile(it, path+"/items"); err != nil {
					return 0, err
				}
			}
		}
		var err error
		if n.minItems, n.maxItems, err = minMax(kw, "minItems", "maxItems", path); err != nil {
			return 0, err
		}
		if u, ok := kw["uniqueItems"]; ok {
			b, isBool := u.v.(bool)
			switch {
			case !isBool || u.isObj || u.isArr:
				return 0, schemaErr(path, "uniqueItems must be true or false")
			case b && hasPre:
				return 0, schemaErr(path, "uniqueItems beside prefixItems is not supported")
			}
			n.unique = b // its items are checked once $refs are resolved (CompileSchema)
		}
		if noMore && (n.maxItems < 0 || n.maxItems > int32(len(n.prefix))) {
			n.maxItems = int32(len(n.prefix))
			if n.minItems > n.maxItems {
				return 0, schemaErr(path, "minItems %d is more than the %d items prefixItems allows with items false", n.minItems, n.maxItems)
			}
		}
		k, err := c.add(n)
		if n.unique {
			c.unique[k] = path
		}
		return k, err
	case "string":
		n := snode{kind: sString}
		var err error
		if n.minLen, n.maxLen, err = minMax(kw, "minLength", "maxLength", path); err != nil {
			return 0, err
		}
		if n.pat, err = stringPattern(kw, path); err != nil {
			return 0, err
		}
		if n.pat != nil && (n.minLen > 0 || n.maxLen >= 0) {
			// The lengths join the pattern's automaton, so that no prefix
			// it lets through fits one and not the other.
			if n.minLen > maxPatternStates || n.maxLen > maxPatternStates {
				return 0, schemaErr(path, "minLength and maxLength beside a pattern or format must be at most %d", maxPatternStates)
			}
			if n.pat, err = n.pat.and(lengthAutomaton(n.minLen, n.maxLen), false); err != nil {
				return 0, schemaErr(path, "minLength %d, maxLength %d beside the pattern: %v", n.minLen, n.maxLen, err)
			}
		}
		if err := c.budget(n.pat, path); err != nil {
			return 0, err
		}
		return c.add(n)
	case "number", "integer":
		n := snode{kind: sNumber}
		if t == "integer" {
			n.kind = sInteger
		}
		var err error
		if n.num, err = numRange(kw, t == "integer", path); err != nil {
			return 0, err
		}
		if err := c.budget(n.num, path); err != nil {
			return 0, err
		}
		if n.kind == sNumber && n.num == nil {
			return nodeAnyNumber, nil
		}
		return c.add(n)
	case "boolean":
		return nodeBool, nil
	}
	return nodeNull, nil
}

// stringPattern compiles a string schema's pattern, or its format when the
// constraint enforces it (formats: the keys of formats, pattern.go); any other
// format is an annotation, as JSON Schema (2020-12, section 7.2.1) makes
// every format by default.
func stringPattern(kw map[string]ordered, path string) (*pattern, error) {
	src := ""
	if f, ok := kw["format"]; ok {
		name, isStr := f.v.(string)
		if !isStr || f.isObj || f.isArr {
			return nil, schemaErr(path, "format must be a string")
		}
		src = formats[name]
	}
	if p, ok := kw["pattern"]; ok {
		s, isStr := p.v.(string)
		if !isStr || p.isObj || p.isArr {
			return nil, schemaErr(path, "pattern must be a string")
		}
		if src != "" {
			return nil, schemaErr(path, "pattern beside format %q is not supported", kw["format"].v)
		}
		src = s
	}
	if src == "" {
		return nil, nil
	}
	_, own := kw["pattern"] // else a format's
	if !own {
		if p, ok := formatPatterns.Load(src); ok {
			return p.(*pattern), nil // compiled once, shared: a pattern does not change
		}
	}
	p, err := compilePattern(src)
	if err != nil {
		return nil, schemaErr(path, "%v", err)
	}
	if !own {
		formatPatterns.Store(src, p)
	}
	return p, nil
}

// formatPatterns holds the formats' compiled patterns (0.2–0.6 ms each to
// compile), by source.
var formatPatterns sync.Map

// maxSchemaStates bounds the automaton states of a schema's patterns and
// bounds together (512 bytes each): a request's schema may not take more
// than 8 MiB.
const maxSchemaStates = 1 << 14

// budget counts p's states against maxSchemaStates.
func (c *schemaCompiler) budget(p *pattern, path string) error {
	if p == nil {
		return nil
	}
	if c.states += len(p.next); c.states > maxSchemaStates {
		return schemaErr(path, "the schema's patterns, formats and bounds need more than %d automaton states together", maxSchemaStates)
	}
	return nil
}

// numRange compiles a number's minimum, maximum, exclusiveMinimum,
// exclusiveMaximum and multipleOf (nil: none given). Of two lower (or upper) bounds the
// tighter one counts.
func numRange(kw map[string]ordered, integer bool, path string) (*pattern, error) {
	b := numBounds{integer: integer}
	var loR, hiR *big.Rat
	for _, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v, ok := kw[k]
		if !ok {
			continue
		}
		n, isNum := v.v.(json.Number)
		if !isNum {
			return nil, schemaErr(path, "%s must be a number", k)
		}
		neg, id, fd, err := parseBound(string(n))
		if err != nil {
			return nil, schemaErr(path, "%s: %v", k, err)
		}
		r, _ := new(big.Rat).SetString(string(n))
		excl := strings.HasPrefix(k, "exclusive")
		if strings.HasSuffix(k, "inimum") {
			// The tighter lower bound: the greater, or exclusive at a tie.
			if c := 1; loR == nil || func() bool { c = r.Cmp(loR); return c > 0 || c == 0 && excl }() {
				loR = r
				b.hasLo, b.loNeg, b.loZero, b.lo, b.loExcl = true, neg, r.Sign() == 0, [2]string{id, fd}, excl
			}
		} else if c := 1; hiR == nil || func() bool { c = r.Cmp(hiR); return c < 0 || c == 0 && excl }() {
			hiR = r
			b.hasHi, b.hiNeg, b.hiZero, b.hi, b.hiExcl = true, neg, r.Sign() == 0, [2]string{id, fd}, excl
		}
	}
	if m, ok := kw["multipleOf"]; ok {
		n, isNum := m.v.(json.Number)
		if !isNum {
			return nil, schemaErr(path, "multipleOf must be a number")
		}
		if err := b.parseStep(string(n)); err != nil {
			return nil, schemaErr(path, "multipleOf: %v", err)
		}
	}
	if !b.hasLo && !b.hasHi && b.stepA == 0 {
		return nil, nil
	}
	p, err := compileNumRange(&b)
	if err != nil {
		what := "number"
		if integer {
			what = "integer"
		}
		which := "bounds"
		if b.stepA > 0 {
			which = "bounds and multipleOf"
		}
		return nil, schemaErr(path, "%s %s: %v", what, which, strings.Replace(err.Error(), "number", what, 1))
	}
	return p, nil
}

// minMax reads a pair of bounds (0 and −1, unbounded, when absent).
func minMax(kw map[string]ordered, minKey, maxKey, path string) (lo, hi int32, err error) {
	if lo, err = count(kw, minKey, 0, path); err != nil {
		return 0, 0, err
	}
	if hi, err = count(kw, maxKey, -1, path); err != nil {
		return 0, 0, err
	}
	if hi >= 0 && hi < lo {
		return 0, 0, schemaErr(path, "%s %d is below %s %d", maxKey, hi, minKey, lo)
	}
	return lo, hi, nil
}

// count reads a non-negative integer keyword (def when absent).
func count(kw map[string]ordered, k string, def int32, path string) (int32, error) {
	v, ok := kw[k]
	if !ok {
		return def, nil
	}
	n, isNum := v.v.(json.Number)
	i, err := n.Int64()
	if !isNum || err != nil || i < 0 || i > 1<<30 {
		return 0, schemaErr(path, "%s must be a non-negative integer", k)
	}
	return int32(i), nil
}

func (c *schemaCompiler) object(kw map[string]ordered, path string) (int32, error) {
	n := snode{kind: sObject, extra: nodeAny, maxProps: -1}
	props, hasProps := kw["properties"]
	if hasProps {
		if !props.isObj {
			return 0, schemaErr(path, "properties must be an object")
		}
		if len(props.obj) > maxSchemaProps {
			return 0, schemaErr(path, "%d properties, over the limit of %d", len(props.obj), maxSchemaProps)
		}
		n.extra = -1 // llama.cpp's default when properties are given
		for _, m := range props.obj {
			for _, p := range n.props {
				if p.key == keyText(m.k) {
					return 0, schemaErr(path, "property %q is declared twice", m.k)
				}
			}
			v, err := c.compile(m.v, path+"/properties/"+pointerEscape(m.k))
			if err != nil {
				return 0, err
			}
			n.props = append(n.props, sprop{key: keyText(m.k), node: v})
		}
	}
	if req, ok := kw["required"]; ok {
		if !req.isArr {
			return 0, schemaErr(path, "required must be an array of property names")
		}
		for _, r := range req.arr {
			name, ok := r.v.(string)
			if !ok || r.isObj || r.isArr {
				return 0, schemaErr(path, "required must be an array of property names")
			}
			i := -1
			for j, p := range n.props {
				if p.key == keyText(name) {
					i = j
				}
			}
			if i < 0 {
				return 0, schemaErr(path, "required property %q is not among the properties", name)
			}
			n.required |= 1 << i
		}
	}
	if ap, ok := kw["additionalProperties"]; ok {
		if b, isBool := ap.v.(bool); isBool && !ap.isObj && !ap.isArr {
			n.extra = -1
			if b {
				n.extra = nodeAny
			}
		} else {
			v, err := c.compile(ap, path+"/additionalProperties")
			if err != nil {
				return 0, err
			}
			n.extra = v
		}
	}
	// minProperties and maxProperties: the keys are counted as they come,
	// and a key comes only if the object can still end within them (see
	// jsonState.keyFits), so these checks are all the schema needs.
	var err error
	if n.minProps, n.maxProps, err = minMax(kw, "minProperties", "maxProperties", path); err != nil {
		return 0, err
	}
	if req := int32(bits.OnesCount64(n.required)); n.maxProps >= 0 && req > n.maxProps {
		return 0, schemaErr(path, "maxProperties %d is below the %d required properties", n.maxProps, req)
	}
	if n.extra < 0 && int(n.minProps) > len(n.props) {
		return 0, schemaErr(path, "minProperties %d is more than the %d properties allowed", n.minProps, len(n.props))
	}
	return c.add(n)
}

// keyText is a key as JSON writes it between its quotes.
func keyText(k string) string { s := jsonString(k); return s[1 : len(s)-1] }

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// ref resolves a local $ref.
func (c *schemaCompiler) ref(r ordered, path string) (int32, error) {
	target, ok := r.v.(string)
	if !ok || r.isObj || r.isArr {
		return 0, schemaErr(path, "$ref must be a string")
	}
	if n, ok := c.refs[target]; ok {
		return n, nil
	}
	if target != "#" && !strings.HasPrefix(target, "#/") {
		return 0, schemaErr(path, "$ref %q is not local (only #, #/$defs/… and #/definitions/… are supported)", target)
	}
	o := c.root
	if target != "#" {
		for _, part := range strings.Split(target[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			next, ok := o.get(part)
			if !o.isObj || !ok {
				return 0, schemaErr(path, "$ref %q points at nothing", target)
			}
			o = next
		}
	}
	idx, err := c.add(snode{kind: sPending})
	if err != nil {
		return 0, err
	}
	c.refs[target] = idx
	n, err := c.compile(o, target)
	if err != nil {
		return 0, err
	}
	c.s.nodes[idx] = c.s.nodes[n]
	if p, ok := c.unions[n]; ok {
		c.unions[idx] = p
	}
	return idx, nil
}

// firsts returns the bytes a value of node n may start with.
func (c *schemaCompiler) firsts(n int32, visiting map[int32]bool) ([4]uint64, error) {
	var f [4]uint64
	set := func(s string) {
		for i := 0; i < len(s); i++ {
			f[s[i]>>6] |= 1 << (s[i] & 63)
		}
	}
	nd := &c.s.nodes[n]
	switch nd.kind {
	case sAny:
		set(`{["-0123456789tfn`)
	case sObject:
		set("{")
	case sArray:
		set("[")
	case sString:
		set(`"`)
	case sNumber, sInteger:
		set("-0123456789")
	case sLiteral:
		for _, l := range nd.lits {
			set(l[:1])
		}
	case sUnion:
		if err := c.unionFirsts(n, visiting); err != nil {
			return f, err
		}
		f = c.s.nodes[n].first
	}
	return f, nil
}

// holds reports whether every value of schema b is one of schema a, as
// far as it can tell without looking inside them: a takes any value, any
// number, any string or any object or array of b's kind.
func (c *schemaCompiler) holds(a, b int32) bool {
	na, nb := &c.s.nodes[a], &c.s.nodes[b]
	switch {
	case na.kind == sAny:
		return true
	case na.kind == sNumber && na.num == nil:
		if nb.kind == sLiteral {
			return litsStartWith(nb.lits, "-0123456789")
		}
		return nb.kind == sNumber || nb.kind == sInteger
	case na.kind == sString && na.pat == nil && na.minLen == 0 && na.maxLen < 0:
		if nb.kind == sLiteral {
			return litsStartWith(nb.lits, `"`)
		}
		return nb.kind == sString
	case na.kind == sObject && len(na.props) == 0 && na.extra == nodeAny && na.minProps == 0 && na.maxProps < 0:
		return nb.kind == sObject
	case na.kind == sArray && len(na.prefix) == 0 && na.items == nodeAny && na.minItems == 0 && na.maxItems < 0:
		return nb.kind == sArray
	}
	return false
}

// litsStartWith reports whether every literal starts with one of chars.
func litsStartWith(lits []string, chars string) bool {
	for _, l := range lits {
		if !strings.ContainsRune(chars, rune(l[0])) {
			return false
		}
	}
	return true
}

// unionFirsts flattens a union (an alternative that is a union gives its
// alternatives), drops the alternatives another one holds, and fills its
// first bytes. When two alternatives may start with the same byte, the
// union is a fork union: the recognizer follows each alternative that
// takes the text until the others have failed (jsonSet). A oneOf's
// alternatives must then be told apart by their values (disjoint), or a
// value matching two would pass.
func (c *schemaCompiler) unionFirsts(n int32, visiting map[int32]bool) error {
	if visiting[n] {
		return errors.New("JSON schema: an anyOf contains itself before any object or array")
	}
	visiting[n] = true
	defer delete(visiting, n)
	var flat []int32
	var flatten func(u int32) error
	flatten = func(u int32) error {
		for _, a := range c.s.nodes[u].alts {
			if c.s.nodes[a].kind != sUnion {
				flat = append(flat, a)
				continue
			}
			if visiting[a] {
				return errors.New("JSON schema: an anyOf contains itself before any object or array")
			}
			visiting[a] = true
			err := flatten(a)
			delete(visiting, a)
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := flatten(n); err != nil {
		return err
	}
	// An alternative another one holds adds nothing (pydantic's
	// Union[int, float] is an integer or a number: a number).
	var kept []int32
	for i, a := range flat {
		held := false
		for j, b := range flat {
			held = held || j != i && c.holds(b, a) && (!c.holds(a, b) || j < i)
		}
		if !held {
			kept = append(kept, a)
		}
	}
	nd := &c.s.nodes[n]
	nd.alts = kept
	nd.first, nd.fork = [4]uint64{}, false
	firsts := make([][4]uint64, len(kept))
	for k, a := range kept {
		f, err := c.firsts(a, visiting)
		if err != nil {
			return err
		}
		firsts[k] = f
		for i := range f {
			nd.fork = nd.fork || nd.first[i]&f[i] != 0
			nd.first[i] |= f[i]
		}
	}
	if !nd.one || !nd.fork {
		return nil
	}
	for i := range kept {
		for j := i + 1; j < len(kept); j++ {
			both := false
			for w := range firsts[i] {
				both = both || firsts[i][w]&firsts[j][w] != 0
			}
			if both && !c.disjoint(kept[i], kept[j]) {
				where := c.unions[n]
				if where == "" {
					where = "#"
				}
				return schemaErr(where, "two alternatives of a oneOf (%s and %s) may both match one value, which oneOf forbids; "+
					"supported are alternatives that differ in their first byte, literals, or objects that both require a property of different const or enum values (a discriminator); use anyOf if a value may match both",
					c.describe(kept[i]), c.describe(kept[j]))
			}
		}
	}
	return nil
}

// disjoint reports whether no value is both a's and b's, as far as it
// can tell from their literals and their objects' required properties.
func (c *schemaCompiler) disjoint(a, b int32) bool {
	na, nb := &c.s.nodes[a], &c.s.nodes[b]
	switch {
	case na.kind == sLiteral && nb.kind == sLiteral:
		for _, x := range na.lits {
			if slices.Contains(nb.lits, x) {
				return false
			}
		}
		return true
	case na.kind == sObject && nb.kind == sObject:
		return c.objectsApart(na, nb) || c.objectsApart(nb, na)
	}
	return false
}

// objectsApart reports whether an object of a is never one of b: a
// requires a property that b does not allow, or that b requires too with
// none of the same literal values.
func (c *schemaCompiler) objectsApart(a, b *snode) bool {
	for i, p := range a.props {
		if a.required&(1<<i) == 0 {
			continue
		}
		k := slices.IndexFunc(b.props, func(q sprop) bool { return q.key == p.key })
		switch {
		case k < 0 && b.extra < 0:
			return true
		case k < 0 || b.required&(1<<k) == 0:
			continue
		}
		la, lb := &c.s.nodes[p.node], &c.s.nodes[b.props[k].node]
		if la.kind == sLiteral && lb.kind == sLiteral && c.disjoint(p.node, b.props[k].node) {
			return true
		}
	}
	return false
}

// describe names a schema node's kind for errors.
func (c *schemaCompiler) describe(n int32) string {
	switch c.s.nodes[n].kind {
	case sAny:
		return "any value"
	case sObject:
		return "an object"
	case sArray:
		return "an array"
	case sString:
		return "a string"
	case sNumber:
		return "a number"
	case sInteger:
		return "an integer"
	case sLiteral:
		return "a const or enum"
	}
	return "a schema"
}
