package grammar

import (
	"fmt"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// CompileRegex compiles a regular expression (Go RE2 syntax, which covers
// what constrained-decoding clients send) that the whole output must match;
// ^ and $ at its ends are allowed and change nothing.
func CompileRegex(re string) (*Grammar, error) { return compileRegex(re, Options{}) }

func compileRegex(re string, opts Options) (*Grammar, error) {
	f, err := regexFrag(re, false, true)
	if err != nil {
		return nil, err
	}
	var b builder
	root := b.rule("regex")
	b.define(root, f)
	return b.build(root, opts)
}

// regexFrag parses re. json: the text is the content of a JSON string, so
// characters that JSON must escape are written escaped. full: re must match
// the whole text (else it may match anywhere, as JSON Schema's pattern).
func regexFrag(re string, json, full bool) (frag, error) {
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: regular expression %q: %v", ErrInvalid, re, err)
	}
	r = r.Simplify()
	c := regexConv{json: json}
	if full {
		r = stripAnchors(r, true, true)
		return c.conv(r)
	}
	return c.search(r)
}

type regexConv struct{ json bool }

// search: the text must contain a match of r; anchors at r's ends pin it.
func (c regexConv) search(r *syntax.Regexp) (frag, error) {
	if r.Op == syntax.OpAlternate {
		var fs []frag
		for _, s := range r.Sub {
			f, err := c.search(s)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return alt(fs...), nil
	}
	begin, end := hasAnchor(r, true), hasAnchor(r, false)
	body, err := c.conv(stripAnchors(r, begin, end))
	if err != nil {
		return nil, err
	}
	anyText := rep(c.anyChar(true), 0, -1)
	parts := []frag{body}
	if !begin {
		parts = append([]frag{anyText}, parts...)
	}
	if !end {
		parts = append(parts, anyText)
	}
	return seq(parts...), nil
}

func hasAnchor(r *syntax.Regexp, begin bool) bool {
	want := syntax.OpEndText
	if begin {
		want = syntax.OpBeginText
	}
	if r.Op == want {
		return true
	}
	if r.Op == syntax.OpConcat && len(r.Sub) > 0 {
		if begin {
			return r.Sub[0].Op == want
		}
		return r.Sub[len(r.Sub)-1].Op == want
	}
	return false
}

func stripAnchors(r *syntax.Regexp, begin, end bool) *syntax.Regexp {
	if (begin && r.Op == syntax.OpBeginText) || (end && r.Op == syntax.OpEndText) {
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	if r.Op != syntax.OpConcat {
		return r
	}
	subs := r.Sub
	if begin && len(subs) > 0 && subs[0].Op == syntax.OpBeginText {
		subs = subs[1:]
	}
	if end && len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndText {
		subs = subs[:len(subs)-1]
	}
	cp := *r
	cp.Sub = subs
	return &cp
}

const maxRegexRepeat = 1000

func (c regexConv) conv(r *syntax.Regexp) (frag, error) {
	switch r.Op {
	case syntax.OpNoMatch:
		return alt(), nil
	case syntax.OpEmptyMatch:
		return epsilon(), nil
	case syntax.OpLiteral:
		var fs []frag
		for _, ch := range r.Rune {
			if r.Flags&syntax.FoldCase != 0 {
				var rs []rune
				for f := ch; ; {
					rs = append(rs, f, f)
					if f = unicode.SimpleFold(f); f == ch {
						break
					}
				}
				fs = append(fs, c.runes(rs))
			} else {
				fs = append(fs, c.runes([]rune{ch, ch}))
			}
		}
		return seq(fs...), nil
	case syntax.OpCharClass:
		return c.runes(r.Rune), nil
	case syntax.OpAnyCharNotNL:
		return c.anyChar(false), nil
	case syntax.OpAnyChar:
		return c.anyChar(true), nil
	case syntax.OpCapture:
		return c.conv(r.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		var fs []frag
		for _, s := range r.Sub {
			f, err := c.conv(s)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		if r.Op == syntax.OpConcat {
			return seq(fs...), nil
		}
		return alt(fs...), nil
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		f, err := c.conv(r.Sub[0])
		if err != nil {
			return nil, err
		}
		switch r.Op {
		case syntax.OpStar:
			return rep(f, 0, -1), nil
		case syntax.OpPlus:
			return rep(f, 1, -1), nil
		case syntax.OpQuest:
			return rep(f, 0, 1), nil
		}
		if r.Min > maxRegexRepeat || r.Max > maxRegexRepeat {
			return nil, fmt.Errorf("%w: regular expression repeat {%d,%d} over %d", ErrUnsupported, r.Min, r.Max, maxRegexRepeat)
		}
		return rep(f, r.Min, r.Max), nil
	}
	return nil, fmt.Errorf("%w: regular expression construct %s (anchors and word boundaries only at the ends)", ErrUnsupported, r)
}

// anyChar is "." (nl: including line breaks). In JSON mode "." follows
// ECMA-262, which JSON Schema patterns use: no \r, U+2028 or U+2029 either.
func (c regexConv) anyChar(nl bool) frag {
	switch {
	case nl:
		return c.runes([]rune{0, unicode.MaxRune})
	case c.json:
		return c.runes([]rune{0, '\n' - 1, '\n' + 1, '\r' - 1, '\r' + 1, 0x2027, 0x202a, unicode.MaxRune})
	}
	return c.runes([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
}

// runes matches one character from sorted [lo, hi] pairs.
func (c regexConv) runes(ranges []rune) frag {
	var fs []frag
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if c.json {
			// Characters JSON escapes: written as their canonical escape.
			for ch := lo; ch <= hi && ch < 0x20; ch++ {
				fs = append(fs, lit(jsonEscape(ch)))
			}
			lo = max(lo, 0x20)
			for _, sp := range []rune{'"', '\\'} {
				if lo <= sp && sp <= hi {
					fs = append(fs, lit(jsonEscape(sp)))
					if lo < sp {
						fs = append(fs, utf8Frag(lo, sp-1))
					}
					lo = sp + 1
				}
			}
		}
		if lo <= hi {
			fs = append(fs, utf8Frag(lo, hi))
		}
	}
	if len(fs) == 1 {
		return fs[0]
	}
	return alt(fs...)
}

// jsonEscape is how a canonical JSON encoder writes ch inside a string.
func jsonEscape(ch rune) string {
	switch ch {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if ch < 0x20 {
		return fmt.Sprintf(`\u%04x`, ch)
	}
	return string(ch)
}

// utf8Frag matches the UTF-8 encoding of one code point in [lo, hi]
// (surrogates excluded: they have no UTF-8 form).
func utf8Frag(lo, hi rune) frag {
	var fs []frag
	utf8Ranges(lo, hi, func(seq [][2]byte) {
		parts := make([]frag, len(seq))
		for i, r := range seq {
			parts[i] = class(rangeSet(r[0], r[1]))
		}
		fs = append(fs, seqOf(parts))
	})
	if len(fs) == 1 {
		return fs[0]
	}
	return alt(fs...)
}

func seqOf(fs []frag) frag {
	if len(fs) == 1 {
		return fs[0]
	}
	return seq(fs...)
}

// utf8Ranges splits [lo, hi] into runs whose encodings are a product of
// byte ranges, and emits each run as its per-byte ranges.
func utf8Ranges(lo, hi rune, emit func([][2]byte)) {
	if lo > hi {
		return
	}
	// Cut out the surrogates, then cut at encoding-length boundaries.
	if lo < 0xd800 && hi > 0xdfff {
		utf8Ranges(lo, 0xd7ff, emit)
		utf8Ranges(0xe000, hi, emit)
		return
	}
	if lo >= 0xd800 && lo <= 0xdfff {
		lo = 0xe000
	}
	if hi >= 0xd800 && hi <= 0xdfff {
		hi = 0xd7ff
	}
	if lo > hi {
		return
	}
	for _, b := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= b && hi > b {
			utf8Ranges(lo, b, emit)
			utf8Ranges(b+1, hi, emit)
			return
		}
	}
	n := utf8.RuneLen(lo)
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				utf8Ranges(lo, lo|m, emit)
				utf8Ranges((lo|m)+1, hi, emit)
				return
			}
			if hi&m != m {
				utf8Ranges(lo, (hi&^m)-1, emit)
				utf8Ranges(hi&^m, hi, emit)
				return
			}
		}
	}
	var a, b [4]byte
	utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	seq := make([][2]byte, n)
	for i := 0; i < n; i++ {
		seq[i] = [2]byte{a[i], b[i]}
	}
	emit(seq)
}

// Choice accepts exactly one of the given strings.
func Choice(choices []string) (*Grammar, error) { return choice(choices, Options{}) }

func choice(choices []string, opts Options) (*Grammar, error) {
	if len(choices) == 0 {
		return nil, fmt.Errorf("%w: empty choice list", ErrInvalid)
	}
	var fs []frag
	for _, c := range choices {
		fs = append(fs, lit(c))
	}
	var b builder
	root := b.rule("choice")
	b.define(root, alt(fs...))
	return b.build(root, opts)
}
