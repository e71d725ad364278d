package grammar

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// mergedFrag compiles allOf (and $ref with siblings) by merging the
// subschemas into one, which is exact for the keywords merged here and
// refused (by keyword) for the rest. Merges are memoised by the set of
// schema objects merged, so recursion through them terminates.
func (c *schemaCompiler) mergedFrag(s *jv) (frag, error) {
	var atoms []*jv
	falseSeen := false
	if err := c.flatten(s, &atoms, &falseSeen, nil); err != nil {
		return nil, err
	}
	if falseSeen {
		return alt(), nil
	}
	keys := make([]string, len(atoms))
	for i, a := range atoms {
		keys[i] = fmt.Sprintf("%p", a)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	key := strings.Join(keys, ",")
	if c.mergeMemo == nil {
		c.mergeMemo = map[string]int32{}
	}
	if r, ok := c.mergeMemo[key]; ok {
		return call(r), nil
	}
	r := c.b.rule(fmt.Sprintf("allOf%d", len(c.b.names)))
	c.mergeMemo[key] = r
	m := &jv{kind: 'o'}
	c.base[m] = c.base[s]
	for _, a := range atoms {
		var err error
		if m, err = c.merge(m, a); err != nil {
			return nil, err
		}
	}
	f, err := c.schemaFrag(m)
	if err != nil {
		return nil, err
	}
	c.b.define(r, f)
	return call(r), nil
}

// flatten lists the schema objects s is the conjunction of, following
// allOf and $ref; a cycle adds nothing (x and x is x).
func (c *schemaCompiler) flatten(s *jv, out *[]*jv, falseSeen *bool, path []*jv) error {
	if slices.Contains(path, s) {
		return nil
	}
	if len(path) > 64 {
		return unsupported("allOf", "nested too deeply")
	}
	path = append(path, s)
	switch s.kind {
	case 'b':
		if !s.b {
			*falseSeen = true
		}
		return nil
	case 'o':
	default:
		return fmt.Errorf("%w: a schema must be an object or a boolean", ErrInvalid)
	}
	rest := s
	if ref := s.get("$ref"); ref != nil && ref.kind == 's' {
		t, err := c.resolveRef(s, ref.str)
		if err != nil {
			return err
		}
		if err := c.flatten(t, out, falseSeen, path); err != nil {
			return err
		}
		if c.draft == 7 {
			return nil
		}
		rest = c.without(rest, "$ref")
	}
	if all := s.get("allOf"); all != nil {
		if all.kind != 'a' {
			return fmt.Errorf("%w: allOf must be an array", ErrInvalid)
		}
		for _, e := range all.arr {
			if e.kind == 'o' {
				if _, ok := c.base[e]; !ok {
					c.base[e] = c.base[s]
				}
			}
			if err := c.flatten(e, out, falseSeen, path); err != nil {
				return err
			}
		}
		rest = c.without(rest, "allOf")
	}
	if hasConstraints(rest) || len(*out) == 0 {
		*out = append(*out, rest)
	}
	return nil
}

// without is s minus keyword kw, the same object every time for the same
// (s, kw), so memoised merges recognise it.
func (c *schemaCompiler) without(s *jv, kw string) *jv {
	k := withoutKey{s, kw}
	if w, ok := c.withoutMemo[k]; ok {
		return w
	}
	if c.withoutMemo == nil {
		c.withoutMemo = map[withoutKey]*jv{}
	}
	w := without(s, kw)
	c.base[w] = c.base[s]
	c.withoutMemo[k] = w
	return w
}

type withoutKey struct {
	s  *jv
	kw string
}

// allOfNode is a fresh schema {"allOf": [a, b]}.
func (c *schemaCompiler) allOfNode(a, b *jv) *jv {
	n := &jv{kind: 'o', obj: []member{{"allOf", &jv{kind: 'a', arr: []*jv{a, b}}}}}
	c.base[n] = c.base[a]
	return n
}

var trueSchema = &jv{kind: 'b', b: true}

// merge is the schema of values valid under both a and b (b has no $ref
// or allOf at its top).
func (c *schemaCompiler) merge(a, b *jv) (*jv, error) {
	m := &jv{kind: 'o'}
	c.base[m] = c.base[a]
	set := func(k string, v *jv) {
		for i := range m.obj {
			if m.obj[i].key == k {
				m.obj[i].val = v
				return
			}
		}
		m.obj = append(m.obj, member{k, v})
	}
	for _, mm := range a.obj {
		set(mm.key, mm.val)
	}
	props := func(s *jv) *jv {
		if p := s.get("properties"); p != nil && p.kind == 'o' {
			return p
		}
		return &jv{kind: 'o'}
	}
	addlOf := func(s *jv) *jv {
		if x := s.get("additionalProperties"); x != nil {
			return x
		}
		return trueSchema
	}
	for _, mm := range b.obj {
		k, bv := mm.key, mm.val
		av := a.get(k)
		if av == nil {
			switch k {
			case "properties", "additionalProperties", "prefixItems", "items":
				// handled below together
			default:
				set(k, bv)
				continue
			}
		}
		switch k {
		case "type":
			set(k, intersectTypes(av, bv))
		case "required":
			r := &jv{kind: 'a'}
			seen := map[string]bool{}
			for _, x := range append(slices.Clone(av.arr), bv.arr...) {
				if x.kind == 's' && !seen[x.str] {
					seen[x.str] = true
					r.arr = append(r.arr, x)
				}
			}
			set(k, r)
		case "properties", "additionalProperties":
			// A property is checked by each side's schema for it, or by that
			// side's additionalProperties when it has none.
			pa, pb := props(a), props(b)
			p := &jv{kind: 'o'}
			var names []string
			for _, x := range append(slices.Clone(pa.obj), pb.obj...) {
				if !slices.Contains(names, x.key) {
					names = append(names, x.key)
				}
			}
			for _, name := range names {
				sa, sb := pa.get(name), pb.get(name)
				if sa == nil {
					sa = addlOf(a)
				}
				if sb == nil {
					sb = addlOf(b)
				}
				p.obj = append(p.obj, member{name, c.both(sa, sb)})
			}
			set("properties", p)
			if a.get("additionalProperties") != nil || b.get("additionalProperties") != nil {
				set("additionalProperties", c.both(addlOf(a), addlOf(b)))
			}
		case "prefixItems", "items":
			if c.draft == 7 {
				return nil, unsupported("allOf", "merging items under draft 7")
			}
			pa, pb := a.get("prefixItems"), b.get("prefixItems")
			ia, ib := a.get("items"), b.get("items")
			if ia == nil {
				ia = trueSchema
			}
			if ib == nil {
				ib = trueSchema
			}
			if pa != nil || pb != nil {
				n := 0
				if pa != nil {
					n = len(pa.arr)
				}
				if pb != nil {
					n = max(n, len(pb.arr))
				}
				p := &jv{kind: 'a'}
				for i := 0; i < n; i++ {
					sa, sb := ia, ib
					if pa != nil && i < len(pa.arr) {
						sa = pa.arr[i]
					}
					if pb != nil && i < len(pb.arr) {
						sb = pb.arr[i]
					}
					p.arr = append(p.arr, c.both(sa, sb))
				}
				set("prefixItems", p)
			}
			set("items", c.both(ia, ib))
		case "minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum":
			if ratOf(bv).Cmp(ratOf(av)) > 0 {
				set(k, bv)
			}
		case "maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum":
			if ratOf(bv).Cmp(ratOf(av)) < 0 {
				set(k, bv)
			}
		case "enum", "const":
			set(k, av) // a's stays; b's is checked below
			if err := c.mergeLiterals(m, a, b); err != nil {
				return nil, err
			}
		case "pattern":
			pats := &jv{kind: 'a'}
			for _, x := range []*jv{av, bv} {
				if x.kind == 'a' {
					pats.arr = append(pats.arr, x.arr...)
				} else {
					pats.arr = append(pats.arr, x)
				}
			}
			set(k, pats)
		case "anyOf", "oneOf":
			if canonical(av) == canonical(bv) {
				continue
			}
			if k == "anyOf" {
				// (a1 or a2) and (b1 or b2) = or over the pairs.
				u := &jv{kind: 'a'}
				for _, x := range av.arr {
					for _, y := range bv.arr {
						u.arr = append(u.arr, c.both(x, y))
					}
				}
				set(k, u)
				continue
			}
			return nil, unsupported("oneOf", "in more than one branch of an allOf")
		default:
			if !constraining(k) {
				continue
			}
			if canonical(av) != canonical(bv) {
				return nil, unsupported(k, "with different values in the branches of an allOf")
			}
		}
	}
	return m, nil
}

// both is a schema for values valid under x and y.
func (c *schemaCompiler) both(x, y *jv) *jv {
	switch {
	case x.kind == 'b' && x.b:
		return y
	case y.kind == 'b' && y.b:
		return x
	case x.kind == 'b' || y.kind == 'b':
		return &jv{kind: 'b', b: false}
	case x == y:
		return x
	}
	return c.allOfNode(x, y)
}

// mergeLiterals keeps the enum/const values both a and b allow.
func (c *schemaCompiler) mergeLiterals(m, a, b *jv) error {
	lits := func(s *jv) map[string]*jv {
		if v := s.get("const"); v != nil {
			return map[string]*jv{canonical(v): v}
		}
		if v := s.get("enum"); v != nil && v.kind == 'a' {
			out := map[string]*jv{}
			for _, e := range v.arr {
				out[canonical(e)] = e
			}
			return out
		}
		return nil
	}
	la, lb := lits(a), lits(b)
	if la == nil || lb == nil {
		return nil
	}
	e := &jv{kind: 'a'}
	var src []*jv
	if v := a.get("enum"); v != nil {
		src = v.arr
	} else {
		src = []*jv{a.get("const")}
	}
	for _, v := range src {
		if _, ok := lb[canonical(v)]; ok {
			e.arr = append(e.arr, v)
		}
	}
	out := m.obj[:0]
	for _, mm := range m.obj {
		if mm.key != "const" && mm.key != "enum" {
			out = append(out, mm)
		}
	}
	m.obj = append(out, member{"enum", e})
	return nil
}

func ratOf(v *jv) *big.Rat {
	if v != nil && v.kind == 'n' {
		if r, ok := numberRat(v.str); ok {
			return r
		}
	}
	return new(big.Rat)
}

func typeList(v *jv) []string {
	if v == nil {
		return slices.Clone(allTypes)
	}
	if v.kind == 's' {
		return []string{v.str}
	}
	var out []string
	for _, e := range v.arr {
		out = append(out, e.str)
	}
	return out
}

func intersectTypes(a, b *jv) *jv {
	ta, tb := typeList(a), typeList(b)
	out := &jv{kind: 'a', arr: []*jv{}}
	has := func(ts []string, t string) bool {
		return slices.Contains(ts, t) || (t == "integer" && slices.Contains(ts, "number"))
	}
	for _, t := range append(ta, "integer") {
		if has(ta, t) && has(tb, t) && !slices.ContainsFunc(out.arr, func(x *jv) bool { return x.str == t }) {
			out.arr = append(out.arr, &jv{kind: 's', str: t})
		}
	}
	return out
}

// checkDisjoint allows oneOf only when no value can match two branches:
// their types, literal values or a required discriminator differ.
func (c *schemaCompiler) checkDisjoint(branches *jv) error {
	if branches.kind != 'a' {
		return fmt.Errorf("%w: oneOf must be an array", ErrInvalid)
	}
	type info struct {
		types []string
		lits  map[string]*jv
		discr map[string]map[string]bool // required property -> its allowed literals
	}
	infos := make([]info, len(branches.arr))
	for i, br := range branches.arr {
		s := br
		for depth := 0; s.kind == 'o' && s.get("$ref") != nil && depth < 32; depth++ {
			if hasConstraints(s, "$ref") {
				break
			}
			t, err := c.resolveRef(s, s.get("$ref").str)
			if err != nil {
				return err
			}
			s = t
		}
		if s.kind != 'o' {
			return unsupported("oneOf", "with boolean branches")
		}
		in := info{types: typeList(s.get("type"))}
		if v := s.get("const"); v != nil {
			in.lits = map[string]*jv{canonical(v): v}
		} else if v := s.get("enum"); v != nil && v.kind == 'a' {
			in.lits = map[string]*jv{}
			for _, e := range v.arr {
				in.lits[canonical(e)] = e
			}
		}
		if p := s.get("properties"); p != nil && p.kind == 'o' {
			req := s.get("required")
			for _, m := range p.obj {
				if req == nil || !slices.ContainsFunc(req.arr, func(x *jv) bool { return x.str == m.key }) || m.val.kind != 'o' {
					continue
				}
				var vals []*jv
				if v := m.val.get("const"); v != nil {
					vals = []*jv{v}
				} else if v := m.val.get("enum"); v != nil && v.kind == 'a' {
					vals = v.arr
				} else {
					continue
				}
				if in.discr == nil {
					in.discr = map[string]map[string]bool{}
				}
				in.discr[m.key] = map[string]bool{}
				for _, v := range vals {
					in.discr[m.key][canonical(v)] = true
				}
			}
		}
		infos[i] = in
	}
	typesMeet := func(a, b []string) bool {
		for _, x := range a {
			for _, y := range b {
				if x == y || (x == "integer" && y == "number") || (x == "number" && y == "integer") {
					return true
				}
			}
		}
		return false
	}
	for i := range infos {
		for j := i + 1; j < len(infos); j++ {
			a, b := infos[i], infos[j]
			if !typesMeet(a.types, b.types) {
				continue
			}
			if a.lits != nil && b.lits != nil {
				overlap := false
				for k := range a.lits {
					if _, ok := b.lits[k]; ok {
						overlap = true
					}
				}
				if !overlap {
					continue
				}
			}
			disjoint := false
			for p, va := range a.discr {
				if vb, ok := b.discr[p]; ok {
					meet := false
					for k := range va {
						meet = meet || vb[k]
					}
					if !meet {
						disjoint = true
					}
				}
			}
			if !disjoint {
				return unsupported("oneOf", fmt.Sprintf("branches %d and %d may both match (use anyOf, or tell them apart by type, const/enum or a required discriminator)", i, j))
			}
		}
	}
	return nil
}

// exclusiveRequired rewrites a oneOf whose branches only list required
// properties ({"required": ["a"]} | {"required": ["b"]}: exactly one of
// them present) into disjoint branches: branch i keeps its required names
// and forbids every name another branch requires and it does not, so no
// other branch matches. That is a subset where another branch requires
// two names beyond i's (one missing would do), and exact otherwise. A
// branch whose names include another's can never match alone and is
// dropped, and values other than objects (which match every branch) are
// left out. Nil when a branch has other constraints.
func exclusiveRequired(branches *jv) *jv {
	if branches.kind != 'a' || len(branches.arr) < 2 {
		return nil
	}
	reqs := make([][]string, len(branches.arr))
	for i, br := range branches.arr {
		r := br.get("required")
		if br.kind != 'o' || r == nil || r.kind != 'a' || hasConstraints(br, "required") {
			return nil
		}
		for _, e := range r.arr {
			if e.kind != 's' {
				return nil
			}
			if !slices.Contains(reqs[i], e.str) {
				reqs[i] = append(reqs[i], e.str)
			}
		}
	}
	subset := func(a, b []string) bool { // a ⊆ b
		for _, x := range a {
			if !slices.Contains(b, x) {
				return false
			}
		}
		return true
	}
	out := &jv{kind: 'a'}
	for i, ri := range reqs {
		var forbid []member
		dropped := false
		for j, rj := range reqs {
			if j == i {
				continue
			}
			if subset(rj, ri) {
				dropped = true
				break
			}
			for _, name := range rj {
				if !slices.Contains(ri, name) && !slices.ContainsFunc(forbid, func(m member) bool { return m.key == name }) {
					forbid = append(forbid, member{name, &jv{kind: 'b', b: false}})
				}
			}
		}
		if dropped {
			continue
		}
		// Objects only: any other value matches every branch.
		br := &jv{kind: 'o', obj: []member{{"type", &jv{kind: 's', str: "object"}}, {"required", branches.arr[i].get("required")}, {"properties", &jv{kind: 'o', obj: forbid}}}}
		out.arr = append(out.arr, br)
	}
	if len(out.arr) == 0 {
		out.arr = []*jv{{kind: 'b', b: false}}
	}
	return out
}
