package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CompileGBNF compiles a GBNF grammar as llama.cpp (and XGrammar's EBNF)
// write them: `name ::= alternatives`, string literals, [character
// classes] (negated with ^), rule references, grouping, * + ? {m} {m,}
// {m,n}, "." for any character, # comments. The start rule is "root".
// Rules that are not recursive are inlined; recursive ones stay rules.
func CompileGBNF(src string, opts Options) (*Grammar, error) {
	p := &gbnfParser{src: src}
	defs, order, err := p.parse()
	if err != nil {
		return nil, err
	}
	if _, ok := defs["root"]; !ok {
		return nil, fmt.Errorf("%w: GBNF grammar has no root rule", ErrInvalid)
	}
	for _, name := range order {
		if err := checkRefs(defs[name], defs); err != nil {
			return nil, err
		}
	}
	rec := recursiveRules(defs, order)
	var b builder
	ids := map[string]int32{}
	for _, name := range order {
		// Recursive rules must stay rules; so do the lexeme-like ones (with
		// a repetition), which then share the per-vocabulary leaf cache.
		if rec[name] || name == "root" || hasRepeat(defs[name]) {
			ids[name] = b.rule(name)
		}
	}
	conv := &gbnfConv{defs: defs, ids: ids}
	for name, id := range ids {
		f, err := conv.frag(defs[name], nil)
		if err != nil {
			return nil, err
		}
		b.define(id, f)
	}
	return b.build(ids["root"], opts)
}

// gexpr is a parsed GBNF expression.
type gexpr struct {
	op       byte // 'l' literal, 'c' class, 'r' ref, 's' sequence, 'a' alternatives, 'x' repeat, '.' any
	text     string
	ranges   []rune // class: sorted [lo, hi] pairs
	subs     []*gexpr
	min, max int
}

type gbnfParser struct {
	src string
	pos int
}

func (p *gbnfParser) errf(format string, args ...any) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	return fmt.Errorf("%w: GBNF line %d: %s", ErrInvalid, line, fmt.Sprintf(format, args...))
}

func (p *gbnfParser) skipSpace() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// atDefinition reports whether "name ::=" starts here.
func (p *gbnfParser) atDefinition() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if p.name() == "" {
		return false
	}
	p.skipSpace()
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

func (p *gbnfParser) parse() (map[string]*gexpr, []string, error) {
	defs := map[string]*gexpr{}
	var order []string
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			break
		}
		name := p.name()
		if name == "" {
			return nil, nil, p.errf("expected a rule name")
		}
		p.skipSpace()
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, nil, p.errf("expected ::= after %s", name)
		}
		p.pos += 3
		e, err := p.alternatives(0)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := defs[name]; dup {
			return nil, nil, p.errf("rule %s defined twice", name)
		}
		defs[name] = e
		order = append(order, name)
	}
	return defs, order, nil
}

func (p *gbnfParser) alternatives(depth int) (*gexpr, error) {
	if depth > 100 {
		return nil, p.errf("nested too deeply")
	}
	var alts []*gexpr
	for {
		s, err := p.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, s)
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &gexpr{op: 'a', subs: alts}, nil
}

func (p *gbnfParser) sequence(depth int) (*gexpr, error) {
	seq := &gexpr{op: 's'}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' || (depth == 0 && p.atDefinition()) {
			break
		}
		var item *gexpr
		var err error
		switch {
		case c == '"':
			item, err = p.literal()
		case c == '[':
			item, err = p.class()
		case c == '.':
			p.pos++
			item = &gexpr{op: '.'}
		case c == '(':
			p.pos++
			item, err = p.alternatives(depth + 1)
			if err == nil {
				p.skipSpace()
				if p.pos >= len(p.src) || p.src[p.pos] != ')' {
					return nil, p.errf("missing )")
				}
				p.pos++
			}
		case isNameByte(c):
			item = &gexpr{op: 'r', text: p.name()}
		default:
			return nil, p.errf("unexpected %q", c)
		}
		if err != nil {
			return nil, err
		}
		item, err = p.suffix(item)
		if err != nil {
			return nil, err
		}
		seq.subs = append(seq.subs, item)
	}
	if len(seq.subs) == 1 {
		return seq.subs[0], nil
	}
	return seq, nil
}

func (p *gbnfParser) suffix(item *gexpr) (*gexpr, error) {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '*':
			item = &gexpr{op: 'x', subs: []*gexpr{item}, min: 0, max: -1}
		case '+':
			item = &gexpr{op: 'x', subs: []*gexpr{item}, min: 1, max: -1}
		case '?':
			item = &gexpr{op: 'x', subs: []*gexpr{item}, min: 0, max: 1}
		case '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return nil, p.errf("missing }")
			}
			body := strings.TrimSpace(p.src[p.pos+1 : p.pos+end])
			lo, hi, comma := strings.Cut(body, ",")
			m, err := strconv.Atoi(strings.TrimSpace(lo))
			if err != nil || m < 0 {
				return nil, p.errf("bad repeat {%s}", body)
			}
			n := m
			if comma {
				n = -1
				if h := strings.TrimSpace(hi); h != "" {
					if n, err = strconv.Atoi(h); err != nil || n < m {
						return nil, p.errf("bad repeat {%s}", body)
					}
				}
			}
			if m > maxRegexRepeat || n > maxRegexRepeat {
				return nil, fmt.Errorf("%w: GBNF repeat {%s} over %d", ErrUnsupported, body, maxRegexRepeat)
			}
			item = &gexpr{op: 'x', subs: []*gexpr{item}, min: m, max: n}
			p.pos += end
		default:
			return item, nil
		}
		p.pos++
	}
	return item, nil
}

// escape reads one possibly escaped character inside a literal or class.
func (p *gbnfParser) escape() (rune, error) {
	if p.pos >= len(p.src) {
		return 0, p.errf("unterminated literal")
	}
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("unterminated escape")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if p.pos+n > len(p.src) {
			return 0, p.errf("short \\%c escape", c)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return 0, p.errf("bad \\%c escape", c)
		}
		p.pos += n
		return rune(v), nil
	}
	return rune(c), nil
}

func (p *gbnfParser) literal() (*gexpr, error) {
	p.pos++ // "
	var sb strings.Builder
	for {
		if p.pos >= len(p.src) {
			return nil, p.errf("unterminated literal")
		}
		if p.src[p.pos] == '"' {
			p.pos++
			return &gexpr{op: 'l', text: sb.String()}, nil
		}
		r, err := p.escape()
		if err != nil {
			return nil, err
		}
		sb.WriteRune(r)
	}
}

func (p *gbnfParser) class() (*gexpr, error) {
	p.pos++ // [
	neg := p.pos < len(p.src) && p.src[p.pos] == '^'
	if neg {
		p.pos++
	}
	var rs []rune
	for {
		if p.pos >= len(p.src) {
			return nil, p.errf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.escape()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.escape(); err != nil {
				return nil, err
			}
		}
		if hi < lo {
			return nil, p.errf("bad range in character class")
		}
		rs = append(rs, lo, hi)
	}
	rs = normRanges(rs)
	if neg {
		rs = negRanges(rs)
	}
	return &gexpr{op: 'c', ranges: rs}, nil
}

// normRanges sorts and merges [lo, hi] pairs.
func normRanges(rs []rune) []rune {
	type pr struct{ lo, hi rune }
	var ps []pr
	for i := 0; i+1 < len(rs); i += 2 {
		ps = append(ps, pr{rs[i], rs[i+1]})
	}
	slices.SortFunc(ps, func(a, b pr) int { return int(a.lo - b.lo) })
	var out []rune
	for _, x := range ps {
		if n := len(out); n > 0 && x.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], x.hi)
			continue
		}
		out = append(out, x.lo, x.hi)
	}
	return out
}

func negRanges(rs []rune) []rune {
	var out []rune
	next := rune(0)
	for i := 0; i+1 < len(rs); i += 2 {
		if rs[i] > next {
			out = append(out, next, rs[i]-1)
		}
		next = rs[i+1] + 1
	}
	if next <= unicode.MaxRune {
		out = append(out, next, unicode.MaxRune)
	}
	return out
}

func checkRefs(e *gexpr, defs map[string]*gexpr) error {
	if e.op == 'r' {
		if _, ok := defs[e.text]; !ok {
			return fmt.Errorf("%w: GBNF rule %s is used but not defined", ErrInvalid, e.text)
		}
	}
	for _, s := range e.subs {
		if err := checkRefs(s, defs); err != nil {
			return err
		}
	}
	return nil
}

// recursiveRules finds the rules on a reference cycle.
func recursiveRules(defs map[string]*gexpr, order []string) map[string]bool {
	refs := map[string][]string{}
	var collect func(name string, e *gexpr)
	collect = func(name string, e *gexpr) {
		if e.op == 'r' {
			refs[name] = append(refs[name], e.text)
		}
		for _, s := range e.subs {
			collect(name, s)
		}
	}
	for _, n := range order {
		collect(n, defs[n])
	}
	rec := map[string]bool{}
	for _, start := range order {
		// Is start reachable from itself?
		seen := map[string]bool{}
		work := slices.Clone(refs[start])
		for len(work) > 0 {
			x := work[len(work)-1]
			work = work[:len(work)-1]
			if x == start {
				rec[start] = true
				break
			}
			if !seen[x] {
				seen[x] = true
				work = append(work, refs[x]...)
			}
		}
	}
	return rec
}

type gbnfConv struct {
	defs map[string]*gexpr
	ids  map[string]int32
}

// frag compiles e; references to rules that are not rules are inlined.
func (c *gbnfConv) frag(e *gexpr, inlining []string) (frag, error) {
	rc := regexConv{}
	switch e.op {
	case 'l':
		return lit(e.text), nil
	case 'c':
		return rc.runes(e.ranges), nil
	case '.':
		return rc.runes([]rune{0, unicode.MaxRune}), nil
	case 'r':
		if id, ok := c.ids[e.text]; ok {
			return call(id), nil
		}
		if len(inlining) > 64 || slices.Contains(inlining, e.text) {
			return nil, fmt.Errorf("%w: GBNF rules nested too deeply at %s", ErrUnsupported, e.text)
		}
		return c.frag(c.defs[e.text], append(inlining, e.text))
	case 'x':
		f, err := c.frag(e.subs[0], inlining)
		if err != nil {
			return nil, err
		}
		return rep(f, e.min, e.max), nil
	}
	var fs []frag
	for _, s := range e.subs {
		f, err := c.frag(s, inlining)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	if e.op == 's' {
		return seq(fs...), nil
	}
	return alt(fs...), nil
}

func hasRepeat(e *gexpr) bool {
	if e.op == 'x' && (e.max < 0 || e.max > 1) {
		return true
	}
	for _, s := range e.subs {
		if hasRepeat(s) {
			return true
		}
	}
	return false
}
