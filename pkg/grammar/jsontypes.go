package grammar

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"unicode"
)

// ws is the bounded whitespace between JSON tokens: a rule of its own, so
// the rules around it stay small and its masks are shared.
func (c *schemaCompiler) ws() frag {
	w := c.opts.whitespace()
	if w == 0 {
		return epsilon()
	}
	if c.wsRule < 0 {
		c.wsRule = c.b.rule("ws")
		c.b.define(c.wsRule, rep(class(bytesOf(" \t\n\r")), 1, w))
	}
	return opt(call(c.wsRule))
}

// jsonChar is one character of a JSON string as a canonical encoder writes it.
func jsonChar() frag { return regexConv{json: true}.runes([]rune{0, unicode.MaxRune}) }

// anyValue is the shared rule of any JSON value.
func (c *schemaCompiler) anyValue() int32 {
	if c.anyRule >= 0 {
		return c.anyRule
	}
	c.anyRule = c.b.rule("any_value")
	obj := c.b.rule("any_object")
	arr := c.b.rule("any_array")
	c.b.define(obj, c.genericObject())
	ws := c.ws()
	c.b.define(arr, seq(lit("["), ws, opt(seq(call(c.anyRule), rep(seq(ws, lit(","), ws, call(c.anyRule)), 0, c.moreBound()))), ws, lit("]")))
	c.b.define(c.anyRule, alt(call(obj), call(arr), call(c.stringRule()), numberSyntax(false),
		lit("true"), lit("false"), lit("null")))
	return c.anyRule
}

func (c *schemaCompiler) stringRule() int32 {
	if c.strRule < 0 {
		c.strRule = c.b.rule("any_string")
		if L := c.opts.stringBound(); L >= 0 {
			if d, err := c.boundedString(0, L); err == nil {
				c.b.defineDFA(c.strRule, d)
				return c.strRule
			}
			// Too many states for the bound: the unbounded string below.
		}
		c.b.define(c.strRule, seq(lit(`"`), rep(jsonChar(), 0, -1), lit(`"`)))
	}
	return c.strRule
}

// boundedString is the automaton of a quoted JSON string of min to max
// characters, built directly (no determinization) and once per Cache.
func (c *schemaCompiler) boundedString(min, max int) (*dfa, error) {
	return c.leaves().fixed(fmt.Sprintf("json-string-%d-%d", min, max), func() (*dfa, error) {
		char, err := c.jsonCharDFA()
		if err != nil {
			return nil, err
		}
		return quotedRepeat(char, min, max)
	})
}

func (c *schemaCompiler) jsonCharDFA() (*dfa, error) {
	return c.leaves().fixed("json-char", func() (*dfa, error) { return leafDFA(jsonChar(), nil) })
}

// boundedChars is the content automaton of min to max JSON characters,
// shared through the Cache.
func (c *schemaCompiler) boundedChars(min, max int) (*dfa, error) {
	return c.leaves().fixed(fmt.Sprintf("json-chars-%d-%d", min, max), func() (*dfa, error) {
		char, err := c.jsonCharDFA()
		if err != nil {
			return nil, err
		}
		return repeatChar(char, min, max)
	})
}

func (c *schemaCompiler) genericObject() frag {
	v := c.anyValue()
	ws := c.ws()
	member := seq(call(c.stringRule()), ws, lit(":"), ws, call(v))
	return seq(lit("{"), ws, opt(seq(member, rep(seq(ws, lit(","), ws, member), 0, c.moreBound()))), ws, lit("}"))
}

// moreBound is how many items may follow the first of a free-form array
// or object (the generation bound on items, which also bounds the members
// of free-form objects), -1 for any number.
func (c *schemaCompiler) moreBound() int {
	if n := c.opts.itemsBound(); n >= 0 {
		return max(n-1, 0)
	}
	return -1
}

// Digits are bounded so a sampled model cannot write numbers forever.
const (
	maxIntDigits  = 19
	maxFracDigits = 15
	maxExpDigits  = 3
)

var digit = class(rangeSet('0', '9'))

func numberSyntax(integer bool) frag {
	intPart := alt(lit("0"), seq(class(rangeSet('1', '9')), rep(digit, 0, maxIntDigits-1)))
	if integer {
		return seq(opt(lit("-")), intPart)
	}
	frac := seq(lit("."), rep(digit, 1, maxFracDigits))
	exp := seq(class(bytesOf("eE")), opt(class(bytesOf("+-"))), rep(digit, 1, maxExpDigits))
	return seq(opt(lit("-")), intPart, opt(frac), opt(exp))
}

func (c *schemaCompiler) nonNegInt(s *jv, kw string) (int, bool, error) {
	v := s.get(kw)
	if v == nil {
		return 0, false, nil
	}
	if v.kind == 'n' {
		if r, ok := numberRat(v.str); ok && r.IsInt() && r.Sign() >= 0 && r.Num().IsInt64() && r.Num().Int64() < math.MaxInt32 {
			return int(r.Num().Int64()), true, nil
		}
	}
	return 0, false, fmt.Errorf("%w: %s must be a non-negative integer", ErrInvalid, kw)
}

// Long length bounds are unrolled into automaton states; beyond this they are refused.
const maxLengthBound = 1024

func (c *schemaCompiler) stringFrag(s *jv) (frag, error) {
	minL, _, err := c.nonNegInt(s, "minLength")
	if err != nil {
		return nil, err
	}
	maxL, hasMax, err := c.nonNegInt(s, "maxLength")
	if err != nil {
		return nil, err
	}
	truncate := -1 // generation bound in characters on a pattern's strings
	if hasMax && maxL > maxLengthBound && c.opts.stringBound() >= 0 && minL <= maxLengthBound {
		// A bound beyond what is counted exactly: the generation bound
		// applies instead, a subset (every string it allows is shorter).
		hasMax, maxL = false, -1
	}
	if !hasMax {
		maxL = -1
		// The generation bound, unless a format bounds the string already
		// (a pattern's automaton is cut at the bound: see truncated).
		if L := c.opts.stringBound(); L >= 0 && !c.boundedFormat(s) {
			if s.get("pattern") == nil && c.formatRE(s) == "" {
				maxL, hasMax = max(L, minL), true
			} else {
				truncate = max(L, 6*minL) // an escape counts as up to 6
			}
		}
	}
	if minL > maxLengthBound {
		return nil, unsupported("minLength", fmt.Sprintf("over %d", maxLengthBound))
	}
	if maxL > maxLengthBound {
		return nil, unsupported("maxLength", fmt.Sprintf("over %d", maxLengthBound))
	}
	if hasMax && maxL < minL {
		return alt(), nil
	}
	var parts []*dfa
	counted := maxL >= 0 // parts[0] is boundedChars(minL, maxL), built below only if needed
	if minL > 0 && !counted {
		d, err := leafDFA(seq(rep(jsonChar(), minL, minL), rep(jsonChar(), 0, -1)), c.leaves())
		if err != nil {
			return nil, unsupported("maxLength", err.Error())
		}
		parts = append(parts, d)
	}
	if p := s.get("pattern"); p != nil {
		pats := []*jv{p}
		if p.kind == 'a' { // several patterns from an allOf merge
			pats = p.arr
		}
		for _, p := range pats {
			if p.kind != 's' {
				return nil, fmt.Errorf("%w: pattern must be a string", ErrInvalid)
			}
			d, err := c.searchDFA(p.str, "pattern")
			if err != nil {
				return nil, err
			}
			parts = append(parts, d)
		}
	}
	// Unknown formats are annotations (draft 2020-12 default): any string.
	if re := c.formatRE(s); re != "" {
		f, err := regexFrag(re, true, true)
		if err != nil {
			return nil, err
		}
		d, err := leafDFA(f, c.leaves())
		if err != nil {
			return nil, unsupported("format", err.Error())
		}
		parts = append(parts, d)
	}
	if counted && len(parts) == 0 {
		if minL == 0 && maxL == c.opts.stringBound() {
			return call(c.stringRule()), nil // the bounded any_string itself
		}
		d, err := c.boundedString(minL, maxL) // quoted(boundedChars) without the content's table
		if L := c.opts.stringBound(); err != nil && minL <= L && L < maxL {
			d, err = c.boundedString(minL, L) // too many to count: the generation bound, a subset
		}
		if err != nil {
			return nil, unsupported("maxLength", err.Error())
		}
		r := c.b.rule("string")
		c.b.defineDFA(r, d)
		return call(r), nil
	}
	cutExact := false // truncate is maxLength itself, not a generation bound
	if counted && minL == 0 && slices.ContainsFunc(parts, func(d *dfa) bool { n := d.longest(); return n >= 0 && n <= maxL }) {
		counted = false // a format's strings are that short already (bytes bound characters)
	}
	if counted {
		d, err := c.boundedChars(minL, maxL)
		if L := c.opts.stringBound(); err != nil && minL > 0 && minL <= L && L < maxL {
			d, err = c.boundedChars(minL, L) // too many to count: the generation bound, a subset
		}
		switch {
		case err == nil:
			parts = append([]*dfa{d}, parts...)
		case minL > 0 || len(parts) == 0:
			return nil, unsupported("maxLength", err.Error())
		default:
			// Too many characters to count beside a pattern or format:
			// cut the pattern's strings at maxLength instead, which
			// counts an escape as its bytes (a subset).
			counted, truncate, cutExact = false, maxL, true
		}
	}
	if len(parts) == 0 {
		return call(c.stringRule()), nil
	}
	content := parts[0]
	if counted && len(parts) == 2 && minL == 0 && hasMax && truncate < 0 && parts[1].cyclic() && parts[1].singleByteChars() {
		// maxLength over a pattern of one-byte characters: the pattern cut
		// at maxLength bytes is exact, and its states derive from the
		// pattern's (cutLeaf) instead of a product whose every counting
		// state walks the trie on its first visit.
		if t, err := c.truncatedOnce(parts[1], maxL); err == nil {
			parts = parts[1:2]
			content = t
		}
	}
	if len(parts) > 1 {
		var err error
		if content, err = c.productOnce(parts); err != nil {
			return nil, unsupported("pattern", err.Error())
		}
	}
	if cutExact {
		t, err := c.truncatedOnce(content, truncate)
		if L := c.opts.stringBound(); err != nil && L >= 0 && L < truncate {
			t, err = c.truncatedOnce(content, L) // shorter still: a subset
		}
		if err != nil {
			return nil, unsupported("maxLength", err.Error())
		}
		content = t
	} else if truncate >= 0 && content.cyclic() && content.shortestChars() <= truncate {
		// The generation bound. Content whose every text is longer stays
		// unbounded (cut, it would match nothing: a dead end after the
		// opening quote).
		if (truncate+1)*content.states() <= maxDFAStates {
			// The cut cannot fail (its layers fit under the cap) and is a
			// string's largest table: built when a matcher first needs it,
			// not before a schema's first mask.
			r := c.b.rule("string")
			err := c.b.deferDFA(r, func() (*dfa, error) {
				t, err := c.truncatedOnce(content, truncate)
				if err != nil {
					return nil, err
				}
				return c.quotedOnce(t), nil
			})
			if err != nil {
				return nil, unsupported("maxLength", err.Error())
			}
			return call(r), nil
		}
		if t, err := c.truncatedOnce(content, truncate); err == nil {
			content = t
		} // else: too large to cut; the unbounded strings stay (still valid)
	}
	r := c.b.rule("string")
	c.b.defineDFA(r, c.quotedOnce(content))
	return call(r), nil
}

// truncatedOnce, productOnce and quotedOnce are truncated, product (all
// parts accepting) and quoted, built once per Cache when their inputs are
// leaf automata (which have hashes): formats, patterns and bounds recur
// across schemas, and a first compile spent most of its time rebuilding them.
func (c *schemaCompiler) truncatedOnce(d *dfa, maxChars int) (*dfa, error) {
	if !d.leaf {
		return truncated(d, maxChars)
	}
	key := derivedHash("truncated", d.hash[:], binary.LittleEndian.AppendUint64(nil, uint64(maxChars)))
	return c.leaves().derived(key, func() (*dfa, error) { return truncated(d, maxChars) })
}

func (c *schemaCompiler) productOnce(parts []*dfa) (*dfa, error) {
	ids := make([][]byte, len(parts))
	for i, d := range parts {
		if !d.leaf {
			return product(parts, allAccept)
		}
		ids[i] = d.hash[:]
	}
	return c.leaves().derived(derivedHash("product-all", ids...), func() (*dfa, error) { return product(parts, allAccept) })
}

func (c *schemaCompiler) quotedOnce(content *dfa) *dfa {
	if !content.leaf {
		return quoted(content)
	}
	d, _ := c.leaves().derived(derivedHash("quoted-of", content.hash[:]), func() (*dfa, error) { return quoted(content), nil })
	return d
}

// searchDFA is the content automaton of the JSON strings in which regular
// expression re matches (anywhere, as JSON Schema's pattern does); errors
// name keyword kw.
func (c *schemaCompiler) searchDFA(re, kw string) (*dfa, error) {
	f, err := regexFrag(re, true, false)
	if err != nil {
		return nil, fmt.Errorf("keyword %q: %w", kw, err)
	}
	d, err := leafDFA(f, c.leaves())
	if err != nil {
		return nil, unsupported(kw, err.Error())
	}
	return d, nil
}

// formatRE is the regular expression of the format s enforces, "" when
// it has none this compiler enforces.
func (c *schemaCompiler) formatRE(s *jv) string {
	fm := s.get("format")
	if fm == nil || fm.kind != 's' || c.opts.FormatAnnotation {
		return ""
	}
	if re, ok := formats[fm.str]; ok {
		return re
	}
	return openFormats[fm.str]
}

// boundedFormat: s enforces a format whose strings are bounded already,
// so the generation bound does not apply.
func (c *schemaCompiler) boundedFormat(s *jv) bool {
	re := c.formatRE(s)
	return re != "" && formats[s.get("format").str] == re
}

// formats are the string formats enforced, as regular expressions over
// the decoded text; each accepts a subset of what the format allows (e.g.
// no leap day, no leap second), never more, and bounds its length.
var formats = map[string]string{
	"date":         dateRE,
	"time":         timeRE,
	"date-time":    dateRE + "T" + timeRE,
	"duration":     durationRE,
	"uuid":         `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"ipv4":         ipv4RE,
	"ipv6":         ipv6RE,
	"email":        emailRE,
	"idn-email":    emailRE, // its ASCII subset
	"hostname":     hostRE,
	"idn-hostname": hostRE,
}

// openFormats are enforced formats without a length bound of their own:
// like patterns, generation cuts them at the string bound.
var openFormats = map[string]string{
	"uri":                   uriRE,
	"iri":                   uriRE, // the ASCII subset of IRIs
	"uri-reference":         `(` + uriRE + `|` + relativeRefRE + `)`,
	"iri-reference":         `(` + uriRE + `|` + relativeRefRE + `)`,
	"json-pointer":          jsonPointerRE,
	"relative-json-pointer": `(0|[1-9][0-9]{0,8})(#|` + jsonPointerRE + `)`,
	"uri-template":          uriTemplateRE,
	"regex":                 regexRE,
}

const (
	dateRE  = `[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))`
	timeRE  = `([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])`
	labelRE = `[a-zA-Z0-9]{1,16}(-[a-zA-Z0-9]{1,16}){0,2}`                    // <= 50 characters, no "--" (no punycode to check)
	hostRE  = labelRE + `(\.` + labelRE + `){0,3}`                            // <= 203 characters
	emailRE = `[a-zA-Z0-9_%+-]{1,15}(\.[a-zA-Z0-9_%+-]{1,15}){0,3}@` + hostRE // local part <= 64
	octetRE = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	ipv4RE  = octetRE + `(\.` + octetRE + `){3}`

	// RFC 4291 section 2.2 forms 1 and 2 (hexadecimal groups, one "::");
	// the IPv4-suffixed form 3 and zone ids are left out.
	h16RE  = `[0-9a-fA-F]{1,4}`
	ipv6RE = `((` + h16RE + `:){7}` + h16RE +
		`|(` + h16RE + `:){1,7}:` +
		`|(` + h16RE + `:){1,6}:` + h16RE +
		`|(` + h16RE + `:){1,5}(:` + h16RE + `){1,2}` +
		`|(` + h16RE + `:){1,4}(:` + h16RE + `){1,3}` +
		`|(` + h16RE + `:){1,3}(:` + h16RE + `){1,4}` +
		`|(` + h16RE + `:){1,2}(:` + h16RE + `){1,5}` +
		`|` + h16RE + `:(:` + h16RE + `){1,6}` +
		`|:((:` + h16RE + `){1,7}|:))`

	// RFC 3339 appendix A, each number at most 9 digits.
	durNumRE   = `[0-9]{1,9}`
	durTimeRE  = `T(` + durNumRE + `H(` + durNumRE + `M(` + durNumRE + `S)?)?|` + durNumRE + `M(` + durNumRE + `S)?|` + durNumRE + `S)`
	durDateRE  = `(` + durNumRE + `D|` + durNumRE + `M(` + durNumRE + `D)?|` + durNumRE + `Y(` + durNumRE + `M(` + durNumRE + `D)?)?)(` + durTimeRE + `)?`
	durationRE = `P(` + durDateRE + `|` + durTimeRE + `|` + durNumRE + `W)`

	// RFC 3986 section 3, without IP-literal hosts ("[v6]"): a subset.
	uriCharsRE    = `-A-Za-z0-9._~!$&'()*+,;=` // unreserved and sub-delims; "-" first so that a class may append more
	pctRE         = `%[0-9A-Fa-f]{2}`
	pcharRE       = `([` + uriCharsRE + `:@]|` + pctRE + `)`
	segmentRE     = pcharRE + `*`
	authorityRE   = `(([` + uriCharsRE + `:]|` + pctRE + `)*@)?([` + uriCharsRE + `]|` + pctRE + `)*(:[0-9]*)?`
	pathAbsRE     = `/(` + pcharRE + `+(/` + segmentRE + `)*)?`
	tailRE        = `(\?([` + uriCharsRE + `:@/?]|` + pctRE + `)*)?(#([` + uriCharsRE + `:@/?]|` + pctRE + `)*)?`
	uriRE         = `[a-zA-Z][a-zA-Z0-9+.-]*:(//` + authorityRE + `(/` + segmentRE + `)*|` + pathAbsRE + `|` + pcharRE + `+(/` + segmentRE + `)*)?` + tailRE
	noColonRE     = `([` + uriCharsRE + `@]|` + pctRE + `)`
	relativeRefRE = `(//` + authorityRE + `(/` + segmentRE + `)*|` + pathAbsRE + `|` + noColonRE + `+(/` + segmentRE + `)*)?` + tailRE

	jsonPointerRE = `(/([^/~]|~[01])*)*`

	// RFC 6570 section 2: literals and expressions of levels 1 to 3.
	uriTemplateRE = `([-!#$&()*+,./0-9:;=?@A-Z\[\]_a-z~]|` + pctRE + `|\{[+#./;?&]?` + varSpecRE + `(,` + varSpecRE + `)*\})*`
	varCharRE     = `([A-Za-z0-9_]|` + pctRE + `)`
	varSpecRE     = varCharRE + `+(\.` + varCharRE + `+)*(:[1-9][0-9]{0,3}|\*)?`

	// A regular subset of the regular expressions that both ECMA-262 (with
	// the u flag) and Python's re compile: groups nest at most two deep;
	// character classes hold single characters, escapes, the ranges a-z,
	// A-Z, 0-9, a-f and A-F (so no reversed range) and "-" only first or
	// last; a quantifier follows an atom only (no "nothing to repeat", no
	// "{3,1}"). The full language nests parentheses without bound: it is
	// not regular.
	regexRE     = `\^?` + regexAlt2RE + `\$?`
	reAtomRE    = `([^\\^$.|?*+()\[\]{}]|\\[dDwWsSnrtfv\\^$.|?*+()\[\]{}/]|\.|` + reClassRE + `)`
	reClassRE   = `\[\^?(-|-?` + reClassItem + `+-?)\]`
	reClassItem = `([^-\\\[\]^]|\\[dDwWsSnrtfv\\^$.|?*+()\[\]{}/-]|a-z|A-Z|0-9|a-f|A-F)`
	reQuantRE   = `(([*+?]|\{[0-9]{1,3},?\}|\{0,[0-9]{1,3}\})\??)?`
	regexAlt0RE = `(` + reAtomRE + reQuantRE + `)*(\|(` + reAtomRE + reQuantRE + `)*)*`
	reGroup1RE  = `\((\?:)?` + regexAlt0RE + `\)`
	regexAlt1RE = `((` + reAtomRE + `|` + reGroup1RE + `)` + reQuantRE + `)*(\|((` + reAtomRE + `|` + reGroup1RE + `)` + reQuantRE + `)*)*`
	reGroup2RE  = `\((\?:)?` + regexAlt1RE + `\)`
	regexAlt2RE = `((` + reAtomRE + `|` + reGroup2RE + `)` + reQuantRE + `)*(\|((` + reAtomRE + `|` + reGroup2RE + `)` + reQuantRE + `)*)*`
)

// numberFrag compiles numbers with bounds. Integers take any bounds; other
// numbers take integral bounds (the common "minimum": 0).
func (c *schemaCompiler) numberFrag(s *jv, integer bool) (frag, error) {
	var lo, hi *big.Rat
	var loEx, hiEx bool
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		v := s.get(kw)
		if v == nil {
			continue
		}
		if v.kind == 'b' {
			return nil, unsupported(kw, "boolean form (draft 4)")
		}
		if v.kind != 'n' {
			return nil, fmt.Errorf("%w: %s must be a number", ErrInvalid, kw)
		}
		r, _ := numberRat(v.str)
		switch kw {
		case "minimum", "exclusiveMinimum":
			ex := kw == "exclusiveMinimum"
			if lo == nil || r.Cmp(lo) > 0 || (r.Cmp(lo) == 0 && ex) {
				lo, loEx = r, ex
			}
		default:
			ex := kw == "exclusiveMaximum"
			if hi == nil || r.Cmp(hi) < 0 || (r.Cmp(hi) == 0 && ex) {
				hi, hiEx = r, ex
			}
		}
	}
	if lo == nil && hi == nil {
		return numberSyntax(integer), nil
	}
	if integer {
		return intRangeFrag(lo, loEx, hi, hiEx)
	}
	for _, b := range []*big.Rat{lo, hi} {
		if b != nil && !b.IsInt() {
			kw := "minimum"
			if b == hi {
				kw = "maximum"
			}
			return nil, unsupported(kw, "a non-integer bound on a number")
		}
	}
	return decimalRangeFrag(lo, loEx, hi, hiEx)
}

var maxIntValue = new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(maxIntDigits), nil), big.NewInt(1))

// intBounds turns rational bounds into inclusive integer bounds, clipped to
// what the digit bound can write.
func intBounds(lo *big.Rat, loEx bool, hi *big.Rat, hiEx bool) (a, b *big.Int) {
	a = new(big.Int).Neg(maxIntValue)
	b = new(big.Int).Set(maxIntValue)
	if lo != nil {
		f := floorRat(lo)
		if lo.IsInt() && !loEx {
			a = f
		} else {
			a = f.Add(f, big.NewInt(1))
		}
		if a.Cmp(new(big.Int).Neg(maxIntValue)) < 0 {
			a = new(big.Int).Neg(maxIntValue)
		}
	}
	if hi != nil {
		f := floorRat(hi)
		if hi.IsInt() && hiEx {
			f.Sub(f, big.NewInt(1))
		}
		b = f
		if b.Cmp(maxIntValue) > 0 {
			b = new(big.Int).Set(maxIntValue)
		}
	}
	return a, b
}

func floorRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	_ = m // DivMod is Euclidean: with a positive denominator q is the floor
	return q
}

// intRangeFrag: integers in the bounds, written without leading zeros.
func intRangeFrag(lo *big.Rat, loEx bool, hi *big.Rat, hiEx bool) (frag, error) {
	a, b := intBounds(lo, loEx, hi, hiEx)
	return signedRange(a, b), nil
}

// signedRange matches the decimal integers in [a, b].
func signedRange(a, b *big.Int) frag {
	if a.Cmp(b) > 0 {
		return alt()
	}
	var fs []frag
	zero := big.NewInt(0)
	if b.Sign() >= 0 {
		fs = append(fs, uintRange(bigMax(a, zero).String(), b.String()))
	}
	if a.Sign() < 0 {
		nb := new(big.Int).Neg(bigMin(b, big.NewInt(-1)))
		na := new(big.Int).Neg(a)
		fs = append(fs, seq(lit("-"), uintRange(nb.String(), na.String())))
	}
	return alt(fs...)
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) > 0 {
		return a
	}
	return b
}

func bigMin(a, b *big.Int) *big.Int {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}

// uintRange matches decimal naturals in [a, b] (no leading zeros).
func uintRange(a, b string) frag {
	var fs []frag
	for l := len(a); l <= len(b); l++ {
		lo, hi := a, b
		if l > len(a) {
			lo = "1" + zeros(l-1)
		}
		if l < len(b) {
			hi = nines(l)
		}
		fs = append(fs, sameLenRange(lo, hi))
	}
	return alt(fs...)
}

func zeros(n int) string { return repeatByte('0', n) }
func nines(n int) string { return repeatByte('9', n) }
func repeatByte(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// sameLenRange matches digit strings of len(lo) between lo and hi, in
// size linear in the length (the classic split at the first digit).
func sameLenRange(lo, hi string) frag {
	if lo == "" {
		return epsilon()
	}
	if lo[0] == hi[0] {
		return seq(lit(lo[:1]), sameLenRange(lo[1:], hi[1:]))
	}
	n := len(lo) - 1
	var fs []frag
	start, end := lo[0], hi[0]
	if lo[1:] != zeros(n) {
		fs = append(fs, seq(lit(lo[:1]), sameLenRange(lo[1:], nines(n))))
		start++
	}
	if hi[1:] != nines(n) {
		fs = append(fs, seq(lit(hi[:1]), sameLenRange(zeros(n), hi[1:])))
		end--
	}
	if start <= end {
		fs = append(fs, seq(class(rangeSet(start, end)), rep(digit, n, n)))
	}
	return alt(fs...)
}

// decimalRangeFrag: numbers between integral bounds, in plain decimal
// notation (no exponent). With m = i.f the magnitude, i its integer part:
// m >= L iff i >= L; m > L iff i > L or (i == L and f != 0); m <= H iff
// i < H or (i == H and f == 0); m < H iff i < H. The negative half is the
// mirror image (and never writes -0).
func decimalRangeFrag(lo *big.Rat, loEx bool, hi *big.Rat, hiEx bool) (frag, error) {
	var fs []frag
	zero := new(big.Rat)
	half := func(neg bool) {
		var mlo, mhi *big.Rat
		var mloEx, mhiEx bool
		if !neg {
			mlo, mloEx, mhi, mhiEx = lo, loEx, hi, hiEx
			if mlo == nil || mlo.Cmp(zero) < 0 {
				mlo, mloEx = zero, false
			}
		} else {
			if hi != nil {
				mlo, mloEx = new(big.Rat).Neg(hi), hiEx
			}
			if lo != nil {
				mhi, mhiEx = new(big.Rat).Neg(lo), loEx
			}
			if mlo == nil || mlo.Cmp(zero) <= 0 {
				mlo, mloEx = zero, true
			}
		}
		L := floorRat(mlo)
		lowI := new(big.Int).Set(L)
		if mloEx {
			lowI.Add(lowI, big.NewInt(1))
		}
		var pieces []frag
		anyFrac := opt(seq(lit("."), rep(digit, 1, maxFracDigits)))
		if mhi == nil {
			if mloEx {
				pieces = append(pieces, seq(lit(L.String()), fracNonzero()))
			}
			if lowI.Cmp(maxIntValue) <= 0 {
				pieces = append(pieces, seq(uintRange(lowI.String(), maxIntValue.String()), anyFrac))
			}
		} else {
			H := floorRat(mhi)
			if mloEx && L.Cmp(H) < 0 {
				pieces = append(pieces, seq(lit(L.String()), fracNonzero()))
			}
			top := new(big.Int).Sub(H, big.NewInt(1))
			if top.Cmp(maxIntValue) > 0 {
				top.Set(maxIntValue)
			}
			if lowI.Cmp(top) <= 0 {
				pieces = append(pieces, seq(uintRange(lowI.String(), top.String()), anyFrac))
			}
			if !mhiEx && H.Cmp(lowI) >= 0 && H.Cmp(maxIntValue) <= 0 {
				pieces = append(pieces, seq(lit(H.String()), opt(seq(lit("."), rep(lit("0"), 1, maxFracDigits)))))
			}
		}
		if len(pieces) == 0 {
			return
		}
		p := alt(pieces...)
		if neg {
			p = seq(lit("-"), p)
		}
		fs = append(fs, p)
	}
	half(false)
	if lo == nil || lo.Sign() < 0 {
		half(true)
	}
	return alt(fs...), nil
}

// fracNonzero is a fraction with at least one non-zero digit.
func fracNonzero() frag {
	return seq(lit("."), rep(lit("0"), 0, maxFracDigits-1), class(rangeSet('1', '9')), rep(digit, 0, maxFracDigits-1))
}
