package gguf

import "math"

// Keys returns the metadata keys in file order.
func (f *File) Keys() []string { return append([]string(nil), f.keys...) }

// Value returns a metadata value as decoded: a Go scalar (uint8 … float64,
// bool, string) or a typed slice for arrays ([]string, []int32, []float32, …;
// nested arrays are []any).
func (f *File) Value(key string) (any, bool) {
	v, ok := f.kv[key]
	return v, ok
}

// String returns a string value.
func (f *File) String(key string) (string, bool) {
	s, ok := f.kv[key].(string)
	return s, ok
}

// Uint returns any integer value widened to uint64; negative values are
// reported as absent.
func (f *File) Uint(key string) (uint64, bool) {
	i, ok := toInt64(f.kv[key])
	if ok && i >= 0 {
		return uint64(i), true
	}
	if u, isU := f.kv[key].(uint64); isU {
		return u, true
	}
	return 0, false
}

// Int returns any integer value as int64 (uint64 values above MaxInt64 are absent).
func (f *File) Int(key string) (int64, bool) { return toInt64(f.kv[key]) }

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// Float returns a float32/float64 value (integers are widened too).
func (f *File) Float(key string) (float64, bool) {
	switch x := f.kv[key].(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := toInt64(f.kv[key]); ok {
		return float64(i), true
	}
	return 0, false
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, bool) {
	b, ok := f.kv[key].(bool)
	return b, ok
}

// Strings returns a string array.
func (f *File) Strings(key string) ([]string, bool) {
	s, ok := f.kv[key].([]string)
	return s, ok
}

// Float32s returns a float array as float32.
func (f *File) Float32s(key string) ([]float32, bool) {
	switch x := f.kv[key].(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = float32(v)
		}
		return out, true
	}
	return nil, false
}

// Int32s returns an integer array converted to int32; absent when any
// element does not fit.
func (f *File) Int32s(key string) ([]int32, bool) {
	v := f.kv[key]
	if x, ok := v.([]int32); ok {
		return x, true
	}
	var n int
	var at func(i int) int64
	switch x := v.(type) {
	case []uint8:
		n, at = len(x), func(i int) int64 { return int64(x[i]) }
	case []int8:
		n, at = len(x), func(i int) int64 { return int64(x[i]) }
	case []uint16:
		n, at = len(x), func(i int) int64 { return int64(x[i]) }
	case []int16:
		n, at = len(x), func(i int) int64 { return int64(x[i]) }
	case []uint32:
		n, at = len(x), func(i int) int64 { return int64(x[i]) }
	case []uint64:
		n, at = len(x), func(i int) int64 {
			if x[i] > math.MaxInt64 {
				return math.MaxInt64
			}
			return int64(x[i])
		}
	case []int64:
		n, at = len(x), func(i int) int64 { return x[i] }
	default:
		return nil, false
	}
	out := make([]int32, n)
	for i := range out {
		e := at(i)
		if e < math.MinInt32 || e > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(e)
	}
	return out, true
}
