package grammar

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema that lists its values (enum or const, on itself, on a branch
// of its allOf or on every branch of its anyOf or oneOf) allows exactly
// those of them that validate against the rest of it — whatever the rest says, "not", "if", "uniqueItems" or
// "multipleOf" included. Such a language is a finite set of literals, so
// a validator decides it exactly where a grammar of the other keywords
// could not be built.

// literalCandidates are the values s lists: its own enum/const, those of
// the first branch of its allOf that lists any, or those of all branches
// of its anyOf or oneOf when each lists some. Nil when none.
func literalCandidates(s *jv) []*jv {
	if s.kind != 'o' {
		return nil
	}
	if v := s.get("const"); v != nil {
		return []*jv{v}
	}
	if e := s.get("enum"); e != nil && e.kind == 'a' {
		return e.arr
	}
	if a := s.get("allOf"); a != nil && a.kind == 'a' {
		for _, br := range a.arr {
			if vals := literalCandidates(br); vals != nil {
				return vals
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		a := s.get(kw)
		if a == nil || a.kind != 'a' || len(a.arr) == 0 {
			continue
		}
		var all []*jv
		for _, br := range a.arr {
			vals := literalCandidates(br)
			if vals == nil {
				all = nil
				break
			}
			all = append(all, vals...)
		}
		if all != nil {
			return all
		}
	}
	return nil
}

// selfContained reports whether v refers to nothing outside itself (no
// $ref, $dynamicRef or $recursiveRef anywhere in it) and carries no
// keyword whose meaning here differs from a validator's (OpenAPI's
// nullable).
func selfContained(v *jv) bool {
	switch v.kind {
	case 'o':
		for _, m := range v.obj {
			switch m.key {
			case "$ref", "$dynamicRef", "$recursiveRef", "nullable":
				return false
			}
			if !selfContained(m.val) {
				return false
			}
		}
	case 'a':
		for _, e := range v.arr {
			if !selfContained(e) {
				return false
			}
		}
	}
	return true
}

// validatedLiterals compiles s as the literals it lists that validate
// against all of s. ok is false when s lists none, needs nothing beyond
// what literals checks alone, or is not self-contained: then the grammar
// compiles it.
func (c *schemaCompiler) validatedLiterals(s *jv) (f frag, ok bool, err error) {
	if s.kind != 'o' {
		return nil, false, nil
	}
	vals := literalCandidates(s)
	if vals == nil || !hasConstraints(s, "enum", "const", "type") || !selfContained(s) {
		return nil, false, nil
	}
	var body []member
	for _, m := range s.obj {
		if m.key != "$schema" && m.key != "$id" { // the draft is the document's; no base to resolve against
			body = append(body, m)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(canonical(&jv{kind: 'o', obj: body})))
	if err != nil {
		return nil, true, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	vc := jsonschema.NewCompiler()
	vc.DefaultDraft(jsonschema.Draft2020)
	if c.draft == 7 {
		vc.DefaultDraft(jsonschema.Draft7)
	}
	if !c.opts.FormatAnnotation {
		vc.AssertFormat()
	}
	const loc = "literals.json"
	if err := vc.AddResource(loc, doc); err != nil {
		return nil, true, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sch, err := vc.Compile(loc)
	if err != nil {
		return nil, true, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var fs []frag
	seen := map[string]bool{}
	for _, v := range vals {
		text := canonical(v)
		if seen[text] {
			continue
		}
		seen[text] = true
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return nil, true, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		var verr *jsonschema.ValidationError
		switch err := sch.Validate(inst); {
		case err == nil:
			fs = append(fs, lit(text))
		case !errors.As(err, &verr):
			return nil, true, fmt.Errorf("%w: checking enum value %s: %v", ErrInvalid, text, err)
		}
	}
	return alt(fs...), true, nil
}
