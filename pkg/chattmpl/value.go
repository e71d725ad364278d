package chattmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Map is an insertion-ordered string-keyed map: the render context and the
// dicts inside it. Order matters because tojson prints keys in it, as
// Python's dict does.
type Map struct {
	keys []string
	vals map[string]any
}

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{vals: map[string]any{}} }

// Set inserts or replaces k; a new key goes last. It returns m for chaining.
func (m *Map) Set(k string, v any) *Map {
	if m.vals == nil {
		m.vals = map[string]any{}
	}
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
	return m
}

// Get returns the value stored under k.
func (m *Map) Get(k string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m.vals[k]
	return v, ok
}

// Keys returns the keys in insertion order.
func (m *Map) Keys() []string {
	if m == nil {
		return nil
	}
	return append([]string(nil), m.keys...)
}

// Len is the number of keys.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.keys)
}

// MarshalJSON writes the keys in order.
func (m *Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.Keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(m.vals[k])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a JSON object keeping key order; nested objects
// become *Map, arrays []any, numbers json.Number.
func (m *Map) UnmarshalJSON(data []byte) error {
	v, err := DecodeJSON(data)
	if err != nil {
		return err
	}
	mm, ok := v.(*Map)
	if !ok {
		return fmt.Errorf("chattmpl: expected a JSON object, got %T", v)
	}
	*m = *mm
	return nil
}

// DecodeJSON decodes one JSON value, keeping object key order: objects become
// *Map, arrays []any, numbers json.Number, plus string, bool and nil.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode JSON: trailing data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := t.(json.Delim)
	if !ok {
		return t, nil // string, json.Number, bool, nil
	}
	switch d {
	case '{':
		m := NewMap()
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := kt.(string)
			if !ok {
				return nil, fmt.Errorf("object key is %T, not a string", kt)
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			m.Set(k, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return m, nil
	case '[':
		list := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return list, nil
	}
	return nil, fmt.Errorf("unexpected delimiter %q", d)
}

// toValue converts Go data to a template value. It knows *Map, Message and
// the JSON shapes; map[string]any gets sorted keys (Go maps have no order).
func toValue(v any, depth int) (jinja.Value, error) {
	if depth > maxDepth {
		return jinja.Undefined(), errTooDeep
	}
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return x, nil
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int32:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case float32:
		return jinja.NewFloat(float64(x)), nil
	case float64:
		return jinja.NewFloat(x), nil
	case json.Number:
		return numberValue(x)
	case json.RawMessage:
		d, err := DecodeJSON(x)
		if err != nil {
			return jinja.Undefined(), err
		}
		return toValue(d, depth+1)
	case *Map:
		if x == nil {
			return jinja.None(), nil
		}
		out := jinja.NewDict()
		d := out.AsDict()
		for _, k := range x.keys {
			cv, err := toValue(x.vals[k], depth+1)
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("%s: %w", k, err)
			}
			d.Set(k, cv)
		}
		return out, nil
	case Message:
		return toValue(x.toMap(), depth+1)
	case []Message:
		items := make([]jinja.Value, len(x))
		for i := range x {
			cv, err := toValue(x[i].toMap(), depth+1)
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("[%d]: %w", i, err)
			}
			items[i] = cv
		}
		return jinja.NewList(items), nil
	case []any:
		items := make([]jinja.Value, len(x))
		for i, it := range x {
			cv, err := toValue(it, depth+1)
			if err != nil {
				return jinja.Undefined(), fmt.Errorf("[%d]: %w", i, err)
			}
			items[i] = cv
		}
		return jinja.NewList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := NewMap()
		for _, k := range keys {
			m.Set(k, x[k])
		}
		return toValue(m, depth)
	}
	return reflectValue(reflect.ValueOf(v), depth)
}

// reflectValue handles other slices, string-keyed maps and integer kinds.
func reflectValue(rv reflect.Value, depth int) (jinja.Value, error) {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jinja.NewInt(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return jinja.NewFloat(float64(u)), nil
		}
		return jinja.NewInt(int64(u)), nil
	case reflect.Pointer:
		if rv.IsNil() {
			return jinja.None(), nil
		}
		return toValue(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		items := make([]any, rv.Len())
		for i := range items {
			items[i] = rv.Index(i).Interface()
		}
		return toValue(items, depth)
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			m := make(map[string]any, rv.Len())
			for it := rv.MapRange(); it.Next(); {
				m[it.Key().String()] = it.Value().Interface()
			}
			return toValue(m, depth)
		}
	}
	if !rv.IsValid() {
		return jinja.None(), nil
	}
	return jinja.Undefined(), fmt.Errorf("unsupported context value of type %s", rv.Type())
}

// numberValue keeps JSON's int/float distinction as Python's json.loads does.
func numberValue(n json.Number) (jinja.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i), nil
		}
		// Python ints are unbounded; the nearest we can hold is a float.
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return jinja.Undefined(), fmt.Errorf("bad number %q: %w", s, err)
	}
	return jinja.NewFloat(f), nil
}
