package grammar

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// patternProps is one entry of patternProperties: a member whose name
// matches re (anywhere, as pattern does) takes schema as well.
type patternProp struct {
	re      string
	content *dfa // the JSON string contents that match re
	schema  *jv
}

// maxPatternProps bounds the patterns of one object: the extra keys are
// split into one class per subset of patterns that match (2^n classes).
const maxPatternProps = 3

func (c *schemaCompiler) patternProps(s *jv) ([]patternProp, error) {
	pp := s.get("patternProperties")
	if pp == nil {
		return nil, nil
	}
	if pp.kind != 'o' {
		return nil, fmt.Errorf("%w: patternProperties must be an object", ErrInvalid)
	}
	if len(pp.obj) > maxPatternProps {
		return nil, unsupported("patternProperties", fmt.Sprintf("more than %d patterns", maxPatternProps))
	}
	var out []patternProp
	for _, m := range pp.obj {
		if m.val.kind != 'o' && m.val.kind != 'b' {
			return nil, fmt.Errorf("%w: patternProperties must map to schemas", ErrInvalid)
		}
		d, err := c.searchDFA(m.key, "patternProperties")
		if err != nil {
			return nil, err
		}
		out = append(out, patternProp{m.key, d, m.val})
	}
	return out, nil
}

// matchesContent reports whether content automaton d accepts the JSON
// string content text (the canonical escaped form, without quotes).
func matchesContent(d *dfa, text string) bool {
	q := int32(0)
	for i := 0; i < len(text); i++ {
		if q = d.next(q, text[i]); q < 0 {
			return false
		}
	}
	return d.accept[q]
}

// withPatterns is the schema of declared member name: v (nil: none) and
// the schema of every pattern that matches name, as an allOf. Nil when
// neither applies.
func (c *schemaCompiler) withPatterns(v *jv, pats []patternProp, name string) *jv {
	var all []*jv
	if v != nil {
		all = append(all, v)
	}
	content := quoteJSON(name)
	content = content[1 : len(content)-1]
	for _, p := range pats {
		if matchesContent(p.content, content) {
			all = append(all, p.schema)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return &jv{kind: 'o', obj: []member{{"allOf", &jv{kind: 'a', arr: all}}}}
}

// patternMembers are the extra members of an object with pattern
// properties: for each subset of the patterns, the keys (within the
// generation bound, other than the declared names) that match exactly
// those patterns, with the allOf of their schemas; the keys no pattern
// matches take additionalProperties (extraRule) when extraAllowed.
func (c *schemaCompiler) patternMembers(pats []patternProp, names []string, extraAllowed bool, extraRule int32) ([]frag, error) {
	ws := c.ws()
	var out []frag
	for set := uint(0); set < 1<<len(pats); set++ {
		if set == 0 && !extraAllowed {
			continue
		}
		key, err := c.patternKeys(pats, names, set)
		if err != nil {
			return nil, unsupported("patternProperties", err.Error())
		}
		if !anyAccept(key) {
			continue // no key matches exactly this subset
		}
		value := extraRule
		if set != 0 {
			var schemas []*jv
			for i, p := range pats {
				if set>>i&1 == 1 {
					schemas = append(schemas, p.schema)
				}
			}
			v := schemas[0]
			if bits.OnesCount(set) > 1 {
				v = &jv{kind: 'o', obj: []member{{"allOf", &jv{kind: 'a', arr: schemas}}}}
			}
			if value, err = c.ruleFor(v); err != nil {
				return nil, err
			}
		}
		r := c.b.rule("pattern_key")
		c.b.defineDFA(r, key)
		out = append(out, seq(call(r), ws, lit(":"), ws, call(value)))
	}
	return out, nil
}

// patternKeys is the quoted automaton of the keys, other than names, that
// match exactly the patterns in set, cut at the generation bound. The
// product runs over string contents, unbounded, and the bound comes after
// as a cut (truncated): a product with the counted string had a state
// per character written and pattern state, and was a fifth of MaskBench's
// compile time, most of its schemas over 15 ms to a first mask. Kept per
// Cache: the same definitions recur across schemas.
func (c *schemaCompiler) patternKeys(pats []patternProp, names []string, set uint) (*dfa, error) {
	L := c.opts.stringBound()
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	id := [][]byte{binary.LittleEndian.AppendUint64(nil, uint64(int64(L))), binary.LittleEndian.AppendUint64(nil, uint64(set))}
	for _, p := range pats {
		id = append(id, p.content.hash[:])
	}
	id = append(id, nil) // the patterns end, the names follow
	for _, k := range sorted {
		id = append(id, []byte(k))
	}
	return c.leaves().derived(derivedHash("pattern-keys", id...), func() (*dfa, error) {
		str, err := c.leaves().fixed("json-content", func() (*dfa, error) {
			return leafDFA(rep(jsonChar(), 0, -1), nil)
		})
		if err != nil {
			return nil, err
		}
		parts := []*dfa{str}
		for _, p := range pats {
			parts = append(parts, p.content)
		}
		if len(names) > 0 {
			var lits []frag
			for _, k := range names {
				q := quoteJSON(k)
				lits = append(lits, lit(q[1:len(q)-1]))
			}
			d, err := leafDFA(alt(lits...), nil)
			if err != nil {
				return nil, err
			}
			parts = append(parts, d)
		}
		n := len(pats)
		content, err := product(parts, func(acc []bool) bool {
			if !acc[0] || len(names) > 0 && acc[n+1] {
				return false
			}
			for i := range n {
				if acc[i+1] != (set>>i&1 == 1) {
					return false
				}
			}
			return true
		})
		if err != nil {
			return nil, err
		}
		if L >= 0 && content.cyclic() {
			if t, err := truncated(content, L); err == nil {
				content = t
			} // else: too large to cut; the unbounded keys stay (still valid)
		}
		return quoted(content), nil
	})
}

func anyAccept(d *dfa) bool {
	for _, a := range d.accept {
		if a {
			return true
		}
	}
	return false
}
