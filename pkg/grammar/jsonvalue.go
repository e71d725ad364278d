package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// jv is a JSON value that keeps object members in document order (schemas
// generate properties in the order they are written).
type jv struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	obj  []member
	arr  []*jv
	str  string // string value, or the number's literal text
	b    bool
}

type member struct {
	key string
	val *jv
}

func (v *jv) get(key string) *jv {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for _, m := range v.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

func parseJSON(data []byte) (*jv, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSON(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func readJSON(dec *json.Decoder) (*jv, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jv{kind: 'o', obj: []member{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				val, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				v.obj = append(v.obj, member{k, val})
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := &jv{kind: 'a', arr: []*jv{}}
			for dec.More() {
				e, err := readJSON(dec)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			_, err := dec.Token()
			return v, err
		}
	case string:
		return &jv{kind: 's', str: t}, nil
	case json.Number:
		return &jv{kind: 'n', str: t.String()}, nil
	case bool:
		return &jv{kind: 'b', b: t}, nil
	case nil:
		return &jv{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}

// compactJSON is text with insignificant whitespace removed (member order
// kept), or text itself when it does not parse.
func compactJSON(text string) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return text
	}
	return buf.String()
}

// canonical writes v the one way the grammar generates literal values:
// no whitespace, object members sorted by key, numbers in canonicalNumber
// form, strings with the minimal escapes.
func canonical(v *jv) string {
	var sb strings.Builder
	writeCanonical(&sb, v)
	return sb.String()
}

func writeCanonical(sb *strings.Builder, v *jv) {
	switch v.kind {
	case 'z':
		sb.WriteString("null")
	case 'b':
		sb.WriteString(strconv.FormatBool(v.b))
	case 'n':
		sb.WriteString(canonicalNumber(v.str))
	case 's':
		sb.WriteString(quoteJSON(v.str))
	case 'a':
		sb.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeCanonical(sb, e)
		}
		sb.WriteByte(']')
	case 'o':
		ms := slices.Clone(v.obj)
		slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		sb.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(quoteJSON(m.key))
			sb.WriteByte(':')
			writeCanonical(sb, m.val)
		}
		sb.WriteByte('}')
	}
}

// quoteJSON is s as a JSON string with only the escapes JSON requires.
func quoteJSON(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if r < 0x20 || r == '"' || r == '\\' {
			sb.WriteString(jsonEscape(r))
		} else {
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// canonicalNumber writes an integral value as an integer, anything else in
// Go's shortest float form; "1.0", "1e0" and "1" all become "1".
func canonicalNumber(lit string) string {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return lit
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// numberRat is the exact value of a JSON number literal.
func numberRat(lit string) (*big.Rat, bool) {
	return new(big.Rat).SetString(lit)
}
