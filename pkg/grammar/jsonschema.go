package grammar

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// CompileJSONSchema compiles a JSON Schema (draft 2020-12, or draft 7, 6
// or 4 when $schema says so) into a grammar of the JSON texts that validate. A
// keyword that cannot be enforced is refused with an error wrapping
// ErrUnsupported and naming it.
func CompileJSONSchema(schema []byte, opts Options) (*Grammar, error) {
	root, err := parseJSON(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: schema is not JSON: %v", ErrInvalid, err)
	}
	c := newSchemaCompiler(root, opts)
	c.b.deferCalls = !opts.eagerRules
	if err := c.index(root, baseURI, true); err != nil {
		return nil, err
	}
	r, err := c.ruleFor(root)
	if err != nil {
		return nil, err
	}
	g, err := c.b.build(r, c.opts)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// JSONObject is the grammar of any JSON object (response_format json_object).
func JSONObject(opts Options) *Grammar {
	c := newSchemaCompiler(nil, opts)
	root := c.b.rule("json_object")
	c.b.define(root, c.genericObject())
	g, err := c.b.build(root, opts)
	if err != nil {
		panic(fmt.Sprintf("grammar: the JSON object grammar does not build: %v", err)) // a bug, not input
	}
	return g
}

func (c *schemaCompiler) leaves() *leafDFAs {
	if c.opts.leaves == nil {
		c.opts.leaves = &leafDFAs{} // shared by this compile at least
	}
	return c.opts.leaves
}

const baseURI = "https://lightllm.invalid/schema.json"

type schemaCompiler struct {
	b     builder
	opts  Options
	root  *jv
	draft int // 7 or 2020

	rules   map[*jv]int32
	base    map[*jv]string // base URI each schema object is resolved against
	byURI   map[string]*jv // $id and $anchor targets, absolute
	merging int            // depth of allOf/$ref merges, bounded

	anyRule, strRule, wsRule int32 // shared rules, -1 until used
	mergeMemo                map[string]int32
	withoutMemo              map[withoutKey]*jv
}

func newSchemaCompiler(root *jv, opts Options) *schemaCompiler {
	c := &schemaCompiler{opts: opts, root: root, draft: 2020, rules: map[*jv]int32{},
		base: map[*jv]string{}, byURI: map[string]*jv{}, anyRule: -1, strRule: -1, wsRule: -1}
	if opts.DefaultDraft == 7 {
		c.draft = 7
	}
	if s := root.get("$schema"); s != nil && s.kind == 's' {
		switch strings.TrimSuffix(s.str, "#") {
		case "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema",
			"http://json-schema.org/draft-06/schema", "https://json-schema.org/draft-06/schema":
			c.draft = 7
		case "http://json-schema.org/draft-04/schema", "https://json-schema.org/draft-04/schema":
			upgradeDraft4(root)
			c.draft = 7
		case "https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2019-09/schema":
			c.draft = 2020
		default:
			c.draft = -1 // a custom metaschema may change what keywords mean: refused in index
		}
	}
	return c
}

func unsupported(keyword string, why string) error {
	if why != "" {
		return fmt.Errorf("%w: keyword %q: %s", ErrUnsupported, keyword, why)
	}
	return fmt.Errorf("%w: keyword %q", ErrUnsupported, keyword)
}

// index records the base URI of every schema object and the targets of
// $id and $anchor, for $ref.
func (c *schemaCompiler) index(v *jv, base string, isSchema bool) error {
	if c.draft < 0 {
		return unsupported("$schema", "only the draft 2020-12, 2019-09, 7, 6 and 4 metaschemas are supported")
	}
	switch v.kind {
	case 'a':
		for _, e := range v.arr {
			if err := c.index(e, base, isSchema); err != nil {
				return err
			}
		}
		return nil
	case 'o':
	default:
		return nil
	}
	if isSchema {
		if id := v.get("$id"); id != nil && id.kind == 's' {
			// In draft 7 an $id next to $ref is ignored, and "#name" is an anchor.
			if !(c.draft == 7 && v.get("$ref") != nil) {
				u, err := resolveURI(base, id.str)
				if err != nil {
					return fmt.Errorf("%w: $id %q: %v", ErrInvalid, id.str, err)
				}
				if strings.HasPrefix(id.str, "#") {
					c.byURI[u] = v
				} else {
					base = stripFragment(u)
					c.byURI[base] = v
				}
			}
		}
		if a := v.get("$anchor"); a != nil && a.kind == 's' {
			c.byURI[stripFragment(base)+"#"+a.str] = v
		}
		c.base[v] = base
	}
	if v == c.root {
		c.byURI[stripFragment(base)] = v
	}
	for _, m := range v.obj {
		// Values of these keywords are data, not schemas.
		switch m.key {
		case "enum", "const", "default", "examples":
			continue
		}
		if err := c.index(m.val, base, true); err != nil {
			return err
		}
	}
	return nil
}

func resolveURI(base, ref string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", err
	}
	return b.ResolveReference(r).String(), nil
}

func stripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// resolveRef finds the schema a $ref in s points to.
func (c *schemaCompiler) resolveRef(s *jv, ref string) (*jv, error) {
	u, err := resolveURI(c.base[s], ref)
	if err != nil {
		return nil, fmt.Errorf("%w: $ref %q: %v", ErrInvalid, ref, err)
	}
	if t, ok := c.byURI[u]; ok {
		return t, nil
	}
	doc, frag, _ := strings.Cut(u, "#")
	t, ok := c.byURI[doc]
	if !ok {
		return nil, unsupported("$ref", fmt.Sprintf("%q is not in this document (remote references are not fetched)", ref))
	}
	if frag == "" {
		return t, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, unsupported("$ref", fmt.Sprintf("anchor %q not found", ref))
	}
	frag, err = url.PathUnescape(frag)
	if err != nil {
		return nil, fmt.Errorf("%w: $ref %q: %v", ErrInvalid, ref, err)
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch t.kind {
		case 'o':
			t = t.get(tok)
		case 'a':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t.arr) {
				t = nil
			} else {
				t = t.arr[i]
			}
		default:
			t = nil
		}
		if t == nil {
			return nil, unsupported("$ref", fmt.Sprintf("%q points at nothing", ref))
		}
	}
	return t, nil
}

// ruleFor is the rule of values valid under schema s, made once per schema
// object so $ref cycles become recursive rules.
func (c *schemaCompiler) ruleFor(s *jv) (int32, error) {
	if r, ok := c.rules[s]; ok {
		return r, nil
	}
	r := c.b.rule(fmt.Sprintf("schema%d", len(c.b.names)))
	c.rules[s] = r
	f, err := c.schemaFrag(s)
	if err != nil {
		return 0, err
	}
	c.b.define(r, f)
	return r, nil
}

// annotations are keywords that do not constrain a value.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$defs": true, "definitions": true, "$comment": true,
	"title": true, "description": true, "default": true, "examples": true, "readOnly": true,
	"writeOnly": true, "deprecated": true, "$vocabulary": true, "$dynamicAnchor": true,
	"contentMediaType": true, "contentEncoding": true, "contentSchema": true, "format": false,
}

// structural are the keywords, besides keywordTypes and refused, that
// constrain values.
var structural = map[string]bool{
	"type": true, "enum": true, "const": true, "$ref": true, "allOf": true, "anyOf": true, "oneOf": true, "nullable": true,
}

// constraining reports whether keyword k can constrain a value. A keyword
// no draft defines (an extension such as "readonly", "x-order", "example")
// is an annotation: validators ignore it, and so does the grammar.
func constraining(k string) bool {
	if annotations[k] {
		return k == "format"
	}
	_, typed := keywordTypes[k]
	_, ref := refused[k]
	return typed || ref || structural[k]
}

// keywordTypes says which instance type a keyword constrains.
var keywordTypes = map[string]string{
	"minLength": "string", "maxLength": "string", "pattern": "string", "format": "string",
	"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number", "multipleOf": "number",
	"properties": "object", "required": "object", "additionalProperties": "object", "patternProperties": "object",
	"propertyNames": "object", "minProperties": "object", "maxProperties": "object", "dependentRequired": "object",
	"dependentSchemas": "object", "unevaluatedProperties": "object", "dependencies": "object",
	"items": "array", "prefixItems": "array", "additionalItems": "array", "minItems": "array", "maxItems": "array",
	"uniqueItems": "array", "contains": "array", "minContains": "array", "maxContains": "array", "unevaluatedItems": "array",
}

// refused are keywords with no sound grammar here.
var refused = map[string]string{
	"not": "", "if": "", "then": "", "else": "", "$dynamicRef": "", "$recursiveRef": "", "$recursiveAnchor": "",
	"propertyNames": "", "dependentRequired": "", "dependentSchemas": "",
	"unevaluatedProperties": "", "unevaluatedItems": "", "dependencies": "", "contains": "", "minContains": "",
	"maxContains": "", "multipleOf": "",
}

var allTypes = []string{"null", "boolean", "object", "array", "number", "string"}

// schemaFrag compiles one schema object.
func (c *schemaCompiler) schemaFrag(s *jv) (frag, error) {
	switch s.kind {
	case 'b':
		if s.b {
			return call(c.anyValue()), nil
		}
		return alt(), nil
	case 'o':
	default:
		return nil, fmt.Errorf("%w: a schema must be an object or a boolean, not %s", ErrInvalid, canonical(s))
	}
	if f, ok, err := c.validatedLiterals(s); ok {
		return f, err
	}
	if ref := s.get("$ref"); ref != nil {
		if ref.kind != 's' {
			return nil, fmt.Errorf("%w: $ref must be a string", ErrInvalid)
		}
		t, err := c.resolveRef(s, ref.str)
		if err != nil {
			return nil, err
		}
		if c.draft == 7 || !hasConstraints(s, "$ref") {
			r, err := c.ruleFor(t)
			if err != nil {
				return nil, err
			}
			return call(r), nil
		}
		// 2020-12: $ref applies alongside its siblings, as allOf would.
		return c.mergedFrag(s)
	}
	if s.get("allOf") != nil {
		return c.mergedFrag(s)
	}
	if a := s.get("anyOf"); a != nil {
		return c.unionFrag(s, "anyOf", a)
	}
	if a := s.get("oneOf"); a != nil {
		if excl := exclusiveRequired(a); excl != nil {
			return c.unionFrag(s, "oneOf", excl)
		}
		if err := c.checkDisjoint(a); err != nil {
			return nil, err
		}
		return c.unionFrag(s, "oneOf", a)
	}
	return c.plainFrag(s)
}

// hasConstraints reports whether s has keywords beyond annotations and except.
func hasConstraints(s *jv, except ...string) bool {
	for _, m := range s.obj {
		if !constraining(m.key) {
			continue
		}
		skip := false
		for _, e := range except {
			skip = skip || m.key == e
		}
		if !skip {
			return true
		}
	}
	return false
}

// unionFrag: one of the branches, each merged with the siblings of the
// union keyword.
func (c *schemaCompiler) unionFrag(s *jv, kw string, branches *jv) (frag, error) {
	if branches.kind != 'a' || len(branches.arr) == 0 {
		return nil, fmt.Errorf("%w: %s must be a non-empty array", ErrInvalid, kw)
	}
	rest := c.without(s, kw)
	var fs []frag
	for _, br := range branches.arr {
		sub := br
		if hasConstraints(rest) {
			sub = &jv{kind: 'o', obj: []member{{"allOf", &jv{kind: 'a', arr: []*jv{rest, br}}}}}
			c.base[sub] = c.base[s]
		}
		r, err := c.ruleFor(sub)
		if err != nil {
			return nil, err
		}
		fs = append(fs, call(r))
	}
	return alt(fs...), nil
}

// without is a shallow copy of s minus keyword kw.
func without(s *jv, kw string) *jv {
	out := &jv{kind: 'o'}
	for _, m := range s.obj {
		if m.key != kw {
			out.obj = append(out.obj, m)
		}
	}
	return out
}

// plainFrag compiles a schema without $ref and combinators: a union over
// the types it allows, each with the keywords that apply to it.
func (c *schemaCompiler) plainFrag(s *jv) (frag, error) {
	for _, m := range s.obj {
		if why, ok := refused[m.key]; ok {
			if m.key == "multipleOf" && isOne(m.val) {
				continue // integer-valued; handled with the types
			}
			return nil, unsupported(m.key, why)
		}
	}
	types, err := c.types(s)
	if err != nil {
		return nil, err
	}
	if e := s.get("const"); e != nil {
		return c.literals(s, []*jv{e}, types)
	}
	if e := s.get("enum"); e != nil {
		if e.kind != 'a' {
			return nil, fmt.Errorf("%w: enum must be an array", ErrInvalid)
		}
		return c.literals(s, e.arr, types)
	}
	var fs []frag
	for _, t := range types {
		f, err := c.typeFrag(s, t)
		if err != nil {
			return nil, err
		}
		if f != nil {
			fs = append(fs, f)
		}
	}
	return alt(fs...), nil
}

func isOne(v *jv) bool { return v.kind == 'n' && canonicalNumber(v.str) == "1" }

// types lists the instance types s allows ("integer" stands alone when
// "number" is not allowed).
func (c *schemaCompiler) types(s *jv) ([]string, error) {
	t := s.get("type")
	var out []string
	switch {
	case t == nil:
		out = append(out, allTypes...)
	case t.kind == 's':
		out = []string{t.str}
	case t.kind == 'a':
		for _, e := range t.arr {
			if e.kind != 's' {
				return nil, fmt.Errorf("%w: type must list strings", ErrInvalid)
			}
			out = append(out, e.str)
		}
	default:
		return nil, fmt.Errorf("%w: type must be a string or an array", ErrInvalid)
	}
	if n := s.get("nullable"); n != nil && n.kind == 'b' && n.b {
		out = append(out, "null") // OpenAPI 3.0
	}
	if m := s.get("multipleOf"); m != nil && isOne(m) {
		// multipleOf 1: only integers among numbers.
		for i, x := range out {
			if x == "number" {
				out[i] = "integer"
			}
		}
	}
	seen := map[string]bool{}
	var uniq []string
	for _, x := range out {
		switch x {
		case "null", "boolean", "object", "array", "number", "integer", "string":
		default:
			return nil, fmt.Errorf("%w: unknown type %q", ErrInvalid, x)
		}
		if !seen[x] {
			seen[x] = true
			uniq = append(uniq, x)
		}
	}
	if seen["number"] && seen["integer"] {
		for i, x := range uniq {
			if x == "integer" {
				uniq = append(uniq[:i], uniq[i+1:]...)
				break
			}
		}
	}
	return uniq, nil
}

// literals compiles enum/const: each value, written canonically, that has
// an allowed type. Other constraints next to enum are refused: checking a
// literal against them would need a validator.
func (c *schemaCompiler) literals(s *jv, vals []*jv, types []string) (frag, error) {
	for _, m := range s.obj {
		if !constraining(m.key) || m.key == "type" || m.key == "enum" || m.key == "const" || m.key == "nullable" {
			continue
		}
		kw := "enum"
		if s.get("const") != nil {
			kw = "const"
		}
		return nil, unsupported(kw, fmt.Sprintf("together with %q", m.key))
	}
	var fs []frag
	seen := map[string]bool{}
	for _, v := range vals {
		if !typeAllows(types, v) {
			continue
		}
		lit0 := canonical(v)
		if !seen[lit0] {
			seen[lit0] = true
			fs = append(fs, lit(lit0))
		}
	}
	return alt(fs...), nil
}

func typeAllows(types []string, v *jv) bool {
	for _, t := range types {
		switch {
		case t == "null" && v.kind == 'z', t == "boolean" && v.kind == 'b', t == "object" && v.kind == 'o',
			t == "array" && v.kind == 'a', t == "string" && v.kind == 's', t == "number" && v.kind == 'n':
			return true
		case t == "integer" && v.kind == 'n':
			if r, ok := numberRat(v.str); ok && r.IsInt() {
				return true
			}
		}
	}
	return false
}

// typeFrag compiles the keywords of s that apply to instances of type t.
func (c *schemaCompiler) typeFrag(s *jv, t string) (frag, error) {
	switch t {
	case "null":
		return lit("null"), nil
	case "boolean":
		return alt(lit("true"), lit("false")), nil
	case "string":
		return c.stringFrag(s)
	case "number", "integer":
		return c.numberFrag(s, t == "integer")
	case "object":
		return c.objectFrag(s)
	case "array":
		return c.arrayFrag(s)
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrInvalid, t)
}
