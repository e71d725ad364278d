package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// object is a JSON object whose fields are decoded one at a time, so that a
// wrong type or value names its field (encoding/json into a struct would
// stop at the first problem with a Go-flavoured message). The first error
// sticks in err; later getters then return nil.
type object struct {
	fields map[string]json.RawMessage
	prefix string // "parameters." for nested objects
	err    *apiError
}

// parseBody checks and parses a request body that must be a JSON object.
func parseBody(body []byte) (*object, *apiError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest(codeInvalidJSON, "", "the request body is empty: send a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, badRequest(codeInvalidEncoding, "", "the request body is not valid UTF-8")
	}
	return parseObject(body, "")
}

// parseObject parses raw as a JSON object; name is its parameter name for
// errors ("" for the body).
func parseObject(raw []byte, name string) (*object, *apiError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		var syn *json.SyntaxError
		switch {
		case errors.As(err, &syn):
			return nil, badRequest(codeInvalidJSON, name, "invalid JSON at byte %d: %s", syn.Offset, syn.Error())
		case name == "":
			return nil, badRequest(codeInvalidJSON, "", "the request body must be a JSON object, got %s", jsonKind(raw))
		}
		return nil, badRequest(codeInvalidType, name, "'%s' must be an object, got %s", name, jsonKind(raw))
	}
	if fields == nil { // the literal null
		if name == "" {
			return nil, badRequest(codeInvalidJSON, "", "the request body must be a JSON object, got null")
		}
		fields = map[string]json.RawMessage{}
	}
	o := &object{fields: fields}
	if name != "" {
		o.prefix = name + "."
	}
	return o, nil
}

// jsonKind names the JSON type of a raw value for error messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// keys lists the field names in sorted order (deterministic errors).
func (o *object) keys() []string {
	ks := make([]string, 0, len(o.fields))
	for k := range o.fields {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (o *object) fail(e *apiError) {
	if o.err == nil {
		o.err = e
	}
}

func (o *object) name(k string) string { return o.prefix + k }

// raw returns a field that is present and not null.
func (o *object) raw(k string) (json.RawMessage, bool) {
	if o.err != nil {
		return nil, false
	}
	v, ok := o.fields[k]
	if !ok || isNull(v) {
		return nil, false
	}
	return v, true
}

// has reports whether k is present and not null.
func (o *object) has(k string) bool {
	v, ok := o.fields[k]
	return ok && !isNull(v)
}

func (o *object) typeError(k, want string, raw []byte) {
	o.fail(badRequest(codeInvalidType, o.name(k), "'%s' must be %s, got %s", o.name(k), want, jsonKind(raw)))
}

// str decodes a string field.
func (o *object) str(k string) *string {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	s, e := decodeString(raw, o.name(k))
	if e != nil {
		o.fail(e)
		return nil
	}
	return &s
}

func decodeString(raw []byte, name string) (string, *apiError) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", badRequest(codeInvalidType, name, "'%s' must be a string, got %s", name, jsonKind(raw))
	}
	return s, nil
}

// boolean decodes a true/false field (no 0/1, no "true").
func (o *object) boolean(k string) *bool {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	var b bool
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		b = true
	case "false":
	default:
		o.typeError(k, "a boolean", raw)
		return nil
	}
	return &b
}

// float decodes a number field (finite: JSON has no NaN or Infinity, and
// out-of-range literals such as 1e999 are refused).
func (o *object) float(k string) *float64 {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	v, e := decodeFloat(raw, o.name(k))
	if e != nil {
		o.fail(e)
		return nil
	}
	return &v
}

func decodeFloat(raw []byte, name string) (float64, *apiError) {
	raw = bytes.TrimSpace(raw)
	if jsonKind(raw) != "a number" {
		return 0, badRequest(codeInvalidType, name, "'%s' must be a number, got %s", name, jsonKind(raw))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, badRequest(codeInvalidValue, name, "'%s' is not a representable number: %.40s", name, raw)
	}
	return v, nil
}

// integer decodes an integer field; 3.0 counts as 3 (as pydantic's lax
// mode does), 3.5 and values beyond int64 do not.
func (o *object) integer(k string) *int64 {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	v, e := decodeInt(raw, o.name(k))
	if e != nil {
		o.fail(e)
		return nil
	}
	return &v
}

func decodeInt(raw []byte, name string) (int64, *apiError) {
	raw = bytes.TrimSpace(raw)
	if jsonKind(raw) != "a number" {
		return 0, badRequest(codeInvalidType, name, "'%s' must be an integer, got %s", name, jsonKind(raw))
	}
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, badRequest(codeInvalidType, name, "'%s' must be an integer, got %.40s", name, raw)
	case err == nil && f != math.Trunc(f):
		return 0, badRequest(codeInvalidType, name, "'%s' must be an integer, got %.40s", name, raw)
	case err != nil || f >= math.MaxInt64 || f < math.MinInt64:
		return 0, badRequest(codeInvalidValue, name, "'%s' is out of range: %.40s", name, raw)
	}
	return int64(f), nil
}

// intIn decodes an integer field and checks lo <= v <= hi.
func (o *object) intIn(k string, lo, hi int64) *int64 {
	v := o.integer(k)
	if v != nil && (*v < lo || *v > hi) {
		o.fail(invalidValue(o.name(k), "'%s' must be in [%d, %d], got %d", o.name(k), lo, hi, *v))
		return nil
	}
	return v
}

// array decodes an array field into its raw elements.
func (o *object) array(k string) []json.RawMessage {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	elems, e := decodeArray(raw, o.name(k))
	if e != nil {
		o.fail(e)
		return nil
	}
	return elems
}

func decodeArray(raw []byte, name string) ([]json.RawMessage, *apiError) {
	var elems []json.RawMessage
	if jsonKind(raw) != "an array" || json.Unmarshal(raw, &elems) != nil {
		return nil, badRequest(codeInvalidType, name, "'%s' must be an array, got %s", name, jsonKind(raw))
	}
	if elems == nil {
		elems = []json.RawMessage{}
	}
	return elems, nil
}

// child decodes an object field.
func (o *object) child(k string) *object {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	c, e := parseObject(raw, o.name(k))
	if e != nil {
		o.fail(e)
		return nil
	}
	return c
}

// tokenIDs decodes an array of token ids in [0, vocab).
func decodeTokenIDs(raw []byte, name string, vocab int) ([]int32, *apiError) {
	elems, e := decodeArray(raw, name)
	if e != nil {
		return nil, e
	}
	ids := make([]int32, len(elems))
	for i, el := range elems {
		v, e := decodeInt(el, name+"["+strconv.Itoa(i)+"]")
		if e != nil {
			return nil, e
		}
		if v < 0 || v >= int64(vocab) {
			return nil, invalidValue(name, "'%s' holds token id %d, outside the vocabulary [0, %d)", name, v, vocab)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}

// rejectUnknown fails on the first field not in allowed.
func (o *object) rejectUnknown(allowed map[string]bool) {
	for _, k := range o.keys() {
		if !allowed[k] {
			o.fail(badRequest(codeUnknownParam, o.name(k), "Unrecognized request argument supplied: %s", o.name(k)))
			return
		}
	}
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
