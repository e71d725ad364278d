package chattmpl

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// This file reproduces the bits of Python that decide what a chat template's
// output looks like: str()/repr() of values, float repr, json.dumps as HF's
// tojson calls it, and str.isspace. The jinja library formats these the Go
// way, which changes bytes (and so tokens) for floats, None and containers.

// maxDepth bounds recursion over values; Python would raise RecursionError or
// "Circular reference detected" long before a legitimate chat context nests
// this deep.
const maxDepth = 512

var errTooDeep = errors.New("value nested too deeply (or circular)")

// pyWhitespace lists every code point for which Python's str.isspace() is
// true. It doubles as the cutset passed to the library's strip methods, whose
// no-argument forms only know ASCII whitespace.
const pyWhitespace = "\t\n\v\f\r\x1c\x1d\x1e\x1f \u0085\u00a0\u1680" +
	"\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" +
	"\u2028\u2029\u202f\u205f\u3000"

func isPySpace(r rune) bool { return strings.ContainsRune(pyWhitespace, r) }

// pyStrip is Python's str.strip() / lstrip() / rstrip() without arguments.
func pyStrip(s string, left, right bool) string {
	if left {
		s = strings.TrimLeftFunc(s, isPySpace)
	}
	if right {
		s = strings.TrimRightFunc(s, isPySpace)
	}
	return s
}

// pyFloatRepr formats f as Python's repr(float) does: shortest round-trip
// digits, positional notation for 1e-4 <= |f| < 1e16, exponent otherwise,
// and always a ".0" on integral positional values.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "-1.25e+07"
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	decpt := exp + 1 // position of the decimal point in CPython's dtoa terms
	if f == 0 {
		decpt = 1
	}
	if decpt <= -4 || decpt > 16 {
		return mant + "e" + expStr[:1] + fmt.Sprintf("%02d", abs(exp))
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// pyStr is Python's str(value) as jinja2 prints it in {{ }}.
func pyStr(v jinja.Value) (string, error) {
	switch {
	case v.IsUndefined():
		return "", nil
	case v.IsString():
		return v.AsString(), nil
	}
	var b strings.Builder
	if err := pyRepr(&b, v, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

// pyRepr writes Python's repr(value).
func pyRepr(b *strings.Builder, v jinja.Value, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	switch {
	case v.IsUndefined():
		// repr(Undefined) in jinja2 is "Undefined"; inside containers it can
		// only come from a template building one, never from a context.
		b.WriteString("Undefined")
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloatRepr(v.AsFloat()))
	case v.IsString():
		pyStringRepr(b, v.AsString())
	case v.IsList():
		b.WriteByte('[')
		for i, it := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := pyRepr(b, it, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyStringRepr(b, k)
			b.WriteString(": ")
			if err := pyRepr(b, d.Data[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case v.IsCallable():
		fmt.Fprintf(b, "<function %s>", v.AsCallable().Name)
	}
	return nil
}

// pyStringRepr writes repr(str): single quotes unless the text holds a single
// quote and no double quote, with Python's escapes for unprintable runes.
func pyStringRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Not representable in a Python str; show the byte like a
			// surrogateescape'd value would be.
			fmt.Fprintf(b, "\\udc%02x", s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\\' || r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(b, "\\x%02x", r)
		case r < 0x7f || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(b, "\\x%02x", r)
		case r <= 0xffff:
			fmt.Fprintf(b, "\\u%04x", r)
		default:
			fmt.Fprintf(b, "\\U%08x", r)
		}
	}
	b.WriteByte(quote)
}

// jsonOpts are the keyword arguments HF's tojson forwards to json.dumps.
type jsonOpts struct {
	ensureASCII bool
	indent      *string // nil: single line
	itemSep     string
	keySep      string
	sortKeys    bool
}

// pyJSONDumps is json.dumps(v, ensure_ascii=..., indent=..., separators=...,
// sort_keys=...) with Python's formatting of every scalar.
func pyJSONDumps(v jinja.Value, o jsonOpts) (string, error) {
	var b strings.Builder
	if err := pyJSONValue(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func pyJSONValue(b *strings.Builder, v jinja.Value, o jsonOpts, depth int) error {
	if depth > maxDepth {
		return errTooDeep
	}
	switch {
	case v.IsUndefined():
		return errors.New("object of type Undefined is not JSON serializable")
	case v.IsCallable():
		return fmt.Errorf("object of type function (%s) is not JSON serializable", v.AsCallable().Name)
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			b.WriteString("NaN")
		case math.IsInf(f, 1):
			b.WriteString("Infinity")
		case math.IsInf(f, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pyFloatRepr(f))
		}
	case v.IsString():
		pyJSONString(b, v.AsString(), o.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			jsonNewline(b, o, depth+1)
			if err := pyJSONValue(b, it, o, depth+1); err != nil {
				return err
			}
		}
		jsonNewline(b, o, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.Keys
		if o.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys) // byte order of UTF-8 == code point order
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			jsonNewline(b, o, depth+1)
			pyJSONString(b, k, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := pyJSONValue(b, d.Data[k], o, depth+1); err != nil {
				return err
			}
		}
		jsonNewline(b, o, depth)
		b.WriteByte('}')
	}
	return nil
}

func jsonNewline(b *strings.Builder, o jsonOpts, level int) {
	if o.indent == nil {
		return
	}
	b.WriteByte('\n')
	for range level {
		b.WriteString(*o.indent)
	}
}

// pyJSONString escapes like json's encoder: only '"', '\\' and controls below
// 0x20 (plus everything non-ASCII when ensureASCII), lowercase hex.
func pyJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Invalid UTF-8 cannot come from JSON; keep the byte as is so
			// that nothing is silently replaced.
			b.WriteByte(s[i])
			i++
			continue
		}
		i += size
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, "\\u%04x", r)
			case ensureASCII && r > 0x7e:
				if r > 0xffff {
					r1, r2 := utf16Surrogates(r)
					fmt.Fprintf(b, "\\u%04x\\u%04x", r1, r2)
				} else {
					fmt.Fprintf(b, "\\u%04x", r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
