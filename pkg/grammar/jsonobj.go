package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

type propItem struct {
	key      string // canonical JSON text of the name
	value    int32  // rule of the value
	required bool
}

// objectFrag: the properties in schema order (each optional unless
// required), then extra members when additionalProperties allows them.
func (c *schemaCompiler) objectFrag(s *jv) (frag, error) {
	req := map[string]bool{}
	var reqOrder []string
	if r := s.get("required"); r != nil {
		if r.kind != 'a' {
			return nil, fmt.Errorf("%w: required must be an array", ErrInvalid)
		}
		for _, e := range r.arr {
			if e.kind != 's' {
				return nil, fmt.Errorf("%w: required must list strings", ErrInvalid)
			}
			if !req[e.str] {
				req[e.str] = true
				reqOrder = append(reqOrder, e.str)
			}
		}
	}
	addl := s.get("additionalProperties")
	if addl != nil && addl.kind != 'o' && addl.kind != 'b' {
		return nil, fmt.Errorf("%w: additionalProperties must be a schema", ErrInvalid)
	}
	extraAllowed := addl == nil || addl.kind == 'o' || addl.b
	var extraRule int32 = -1
	if extraAllowed {
		var err error
		if addl == nil || addl.kind == 'b' {
			extraRule = c.anyValue()
		} else if extraRule, err = c.ruleFor(addl); err != nil {
			return nil, err
		}
	}
	pats, err := c.patternProps(s)
	if err != nil {
		return nil, err
	}
	var items []propItem
	var names []string
	if p := s.get("properties"); p != nil {
		if p.kind != 'o' {
			return nil, fmt.Errorf("%w: properties must be an object", ErrInvalid)
		}
		for _, m := range p.obj {
			if slices.Contains(names, m.key) {
				continue
			}
			names = append(names, m.key)
			if m.val.kind == 'b' && !m.val.b {
				if req[m.key] {
					return alt(), nil // a required property that cannot exist
				}
				continue
			}
			r, err := c.ruleFor(c.withPatterns(m.val, pats, m.key))
			if err != nil {
				return nil, err
			}
			items = append(items, propItem{quoteJSON(m.key), r, req[m.key]})
		}
	}
	// Required names without a property schema take additionalProperties.
	for _, k := range reqOrder {
		if slices.Contains(names, k) {
			continue
		}
		names = append(names, k)
		if v := c.withPatterns(nil, pats, k); v != nil {
			r, err := c.ruleFor(v)
			if err != nil {
				return nil, err
			}
			items = append(items, propItem{quoteJSON(k), r, true})
			continue
		}
		if !extraAllowed {
			return alt(), nil
		}
		items = append(items, propItem{quoteJSON(k), extraRule, true})
	}
	nonEmpty := false
	for _, kw := range []string{"minProperties", "maxProperties"} {
		n, ok, err := c.nonNegInt(s, kw)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		nreq, nall := 0, len(items)
		for _, it := range items {
			if it.required {
				nreq++
			}
		}
		switch {
		case kw == "minProperties" && n <= nreq:
		case kw == "minProperties" && n == 1:
			nonEmpty = true // no closing the object before its first member
		case kw == "maxProperties" && n >= nall && !extraAllowed && len(pats) == 0:
		default:
			return nil, unsupported(kw, "only when the required (or all possible) properties already satisfy it")
		}
	}
	// Extra members: a key of each pattern class with the allOf of its
	// patterns' schemas, and a key no pattern matches with
	// additionalProperties.
	var extras []frag
	if len(pats) > 0 {
		var err error
		if extras, err = c.patternMembers(pats, names, extraAllowed, extraRule); err != nil {
			return nil, err
		}
	} else if extraAllowed {
		k, err := c.keyExcluding(names)
		if err != nil {
			return nil, err
		}
		extras = []frag{seq(k, c.ws(), lit(":"), c.ws(), call(extraRule))}
	}
	ws := c.ws()
	return func(n *nfa, from, to int32) {
		// state[i][first]: before property i; first: no member written yet.
		type st [2]int32
		states := make([]st, len(items)+1)
		for i := range states {
			states[i] = st{n.state(), n.state()}
		}
		open := n.state()
		lit("{")(n, from, open)
		ws(n, open, states[0][1])
		member := func(key string, value int32) frag {
			return seq(lit(key), ws, lit(":"), ws, call(value))
		}
		sep := seq(ws, lit(","), ws)
		for i, it := range items {
			m := member(it.key, it.value)
			m(n, states[i][1], states[i+1][0])
			seq(sep, m)(n, states[i][0], states[i+1][0])
			if !it.required {
				n.eps[states[i][0]] = append(n.eps[states[i][0]], states[i+1][0])
				n.eps[states[i][1]] = append(n.eps[states[i][1]], states[i+1][1])
			}
		}
		last := states[len(items)]
		closeFrom := n.state()
		if len(extras) > 0 {
			more := n.state()
			em := alt(extras...)
			em(n, last[1], more)
			seq(sep, em)(n, last[0], more)
			// Extra members after the first: as many as the generation
			// bound on items allows.
			end := n.state()
			rep(seq(sep, em), 0, c.moreBound())(n, more, end)
			n.eps[end] = append(n.eps[end], closeFrom)
		}
		n.eps[last[0]] = append(n.eps[last[0]], closeFrom)
		if !nonEmpty {
			n.eps[last[1]] = append(n.eps[last[1]], closeFrom)
		}
		seq(ws, lit("}"))(n, closeFrom, to)
	}, nil
}

// keyExcluding matches a JSON string other than the given names.
func (c *schemaCompiler) keyExcluding(names []string) (frag, error) {
	if len(names) == 0 {
		return call(c.stringRule()), nil
	}
	var lits []frag
	longest := 0
	for _, k := range names {
		lits = append(lits, lit(quoteJSON(k)))
		longest = max(longest, utf8.RuneCountInString(k))
	}
	L := c.opts.stringBound()
	if L < 0 {
		d, err := c.differenceFromString(alt(lits...), -1)
		if err != nil {
			return nil, unsupported("additionalProperties", err.Error())
		}
		r := c.b.rule("extra_key")
		c.b.defineDFA(r, d)
		return call(r), nil
	}
	// Bounded keys: the short ones (no longer than the longest name) minus
	// the names, a small product, or a longer one, which is never a name.
	// The product is kept per Cache by its names: object definitions recur
	// across schemas (Kubernetes resources share dozens), and it was a
	// tenth of a compile.
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	parts := [][]byte{binary.LittleEndian.AppendUint64(nil, uint64(min(longest, L)))}
	for _, k := range sorted {
		parts = append(parts, []byte(k))
	}
	short, err := c.leaves().derived(derivedHash("key-excluding", parts...), func() (*dfa, error) {
		return c.differenceFromString(alt(lits...), min(longest, L))
	})
	if err != nil {
		return nil, unsupported("additionalProperties", err.Error())
	}
	r := c.b.rule("extra_key")
	c.b.defineDFA(r, short)
	if longest >= L {
		return call(r), nil
	}
	long, err := c.boundedString(longest+1, L)
	if err != nil {
		return nil, unsupported("additionalProperties", err.Error())
	}
	rl := c.b.rule("extra_key_long")
	c.b.defineDFA(rl, long)
	return alt(call(r), call(rl)), nil
}

const maxItemsBound = 1024

// arrayFrag: prefixItems (items as an array in draft 7) position by
// position, then items (additionalItems in draft 7), counted against
// minItems/maxItems.
func (c *schemaCompiler) arrayFrag(s *jv) (frag, error) {
	var prefix []*jv
	rest := &jv{kind: 'b', b: true}
	items, addItems := s.get("items"), s.get("additionalItems")
	if c.draft == 7 {
		if items != nil && items.kind == 'a' {
			prefix = items.arr
			if addItems != nil {
				rest = addItems
			}
		} else if items != nil {
			rest = items
		}
	} else {
		if p := s.get("prefixItems"); p != nil {
			if p.kind != 'a' {
				return nil, fmt.Errorf("%w: prefixItems must be an array", ErrInvalid)
			}
			prefix = p.arr
		}
		if items != nil {
			if items.kind == 'a' {
				return nil, unsupported("items", "an array of schemas (draft 2019 form) under draft 2020-12; use prefixItems")
			}
			rest = items
		}
	}
	minN, _, err := c.nonNegInt(s, "minItems")
	if err != nil {
		return nil, err
	}
	maxN, hasMax, err := c.nonNegInt(s, "maxItems")
	if err != nil {
		return nil, err
	}
	if u := s.get("uniqueItems"); u != nil && u.kind == 'b' && u.b && !(hasMax && maxN <= 1) {
		return nil, unsupported("uniqueItems", "")
	}
	restAllowed := !(rest.kind == 'b' && !rest.b)
	if !restAllowed {
		if !hasMax || maxN > len(prefix) {
			maxN, hasMax = len(prefix), true
		}
	}
	if n := c.opts.itemsBound(); !hasMax && n >= 0 {
		maxN, hasMax = max(n, minN, len(prefix)), true // generation bound
	}
	if hasMax && maxN < minN {
		return alt(), nil
	}
	if minN > maxItemsBound || (hasMax && maxN > maxItemsBound) {
		return nil, unsupported("maxItems", fmt.Sprintf("bounds over %d", maxItemsBound))
	}
	ruleAt := make([]int32, 0, len(prefix))
	for _, p := range prefix {
		if p.kind == 'b' && !p.b {
			// No element may be at this position: the array ends before it.
			if !hasMax || maxN > len(ruleAt) {
				maxN, hasMax = len(ruleAt), true
			}
			break
		}
		r, err := c.ruleFor(p)
		if err != nil {
			return nil, err
		}
		ruleAt = append(ruleAt, r)
	}
	if hasMax && maxN < minN {
		return alt(), nil
	}
	var restRule int32 = -1
	if restAllowed {
		if restRule, err = c.ruleFor(rest); err != nil {
			return nil, err
		}
	}
	elem := func(i int) int32 {
		if i < len(ruleAt) {
			return ruleAt[i]
		}
		return restRule
	}
	// Positions to unroll: every distinct element rule and every count
	// below minItems; past that the rest loops.
	unroll := max(len(ruleAt), minN)
	if hasMax {
		unroll = maxN
	} else if restRule < 0 {
		unroll = len(ruleAt)
	}
	if !hasMax && len(prefix) > len(ruleAt) { // an impossible position ended the prefix
		unroll = len(ruleAt)
	}
	ws := c.ws()
	sep := seq(ws, lit(","), ws)
	return func(n *nfa, from, to int32) {
		open := n.state()
		lit("[")(n, from, open)
		closeFrom := n.state()
		after := make([]int32, unroll+1) // after[i]: i elements written
		for i := range after {
			after[i] = n.state()
		}
		ws(n, open, after[0])
		for i := 0; i < unroll; i++ {
			r := elem(i)
			if r < 0 {
				break
			}
			if i == 0 {
				call(r)(n, after[0], after[1])
			} else {
				seq(sep, call(r))(n, after[i], after[i+1])
			}
		}
		for i := minN; i <= unroll; i++ {
			n.eps[after[i]] = append(n.eps[after[i]], closeFrom)
		}
		if !hasMax && restRule >= 0 && unroll >= len(ruleAt) {
			last := after[unroll]
			if unroll == 0 {
				more := n.state()
				call(restRule)(n, last, more)
				seq(sep, call(restRule))(n, more, more)
				n.eps[more] = append(n.eps[more], closeFrom)
			} else {
				seq(sep, call(restRule))(n, last, last)
			}
		}
		seq(ws, lit("]"))(n, closeFrom, to)
	}, nil
}
