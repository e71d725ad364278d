package chattmpl

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// Limits in the spirit of jinja2's sandbox (MAX_RANGE = 100000): a context
// value must not be able to make a render allocate without bound.
const (
	maxRange       = 100000
	maxRepeatBytes = 64 << 20
	maxRepeatItems = 1 << 20
)

// pyMul is Python's '*' for template values (translate() routes every
// A * B here): numbers multiply, str/list * int repeat.
func pyMul(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("*: expected two operands")
	}
	a, b := args[0], args[1]
	if isIntLike(a) && (b.IsString() || b.IsList()) {
		a, b = b, a
	}
	switch {
	case a.IsString() && isIntLike(b):
		n := intOf(b)
		s := a.AsString()
		if n <= 0 || s == "" {
			return jinja.NewString(""), nil
		}
		if int64(len(s)) > maxRepeatBytes/n {
			return jinja.Undefined(), fmt.Errorf("*: repeated string would exceed %d bytes", maxRepeatBytes)
		}
		return jinja.NewString(strings.Repeat(s, int(n))), nil
	case a.IsList() && isIntLike(b):
		n := intOf(b)
		items := a.AsList().Items
		if n <= 0 || len(items) == 0 {
			return jinja.NewList(nil), nil
		}
		if int64(len(items)) > maxRepeatItems/n {
			return jinja.Undefined(), fmt.Errorf("*: repeated list would exceed %d items", maxRepeatItems)
		}
		out := make([]jinja.Value, 0, len(items)*int(n))
		for range n {
			out = append(out, items...)
		}
		return jinja.NewList(out), nil
	case isIntLike(a) && isIntLike(b):
		x, y := intOf(a), intOf(b)
		hi, lo := bits.Mul64(uint64(absInt(x)), uint64(absInt(y)))
		if hi != 0 || lo > math.MaxInt64 {
			// Python's int is unbounded; a float is the closest we hold.
			return jinja.NewFloat(float64(x) * float64(y)), nil
		}
		return jinja.NewInt(x * y), nil
	case isNumberLike(a) && isNumberLike(b):
		return jinja.NewFloat(floatOf(a) * floatOf(b)), nil
	}
	return jinja.Undefined(), fmt.Errorf("unsupported operand type(s) for *: %s and %s", typeName(a), typeName(b))
}

// pyRange is the sandbox's range(): Python semantics, at most maxRange items.
func pyRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 || len(args) > 3 {
		return jinja.Undefined(), fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	var p [3]int64
	for i, a := range args {
		if !isIntLike(a) {
			return jinja.Undefined(), fmt.Errorf("range: %s object cannot be interpreted as an integer", typeName(a))
		}
		p[i] = intOf(a)
	}
	start, stop, step := int64(0), p[0], int64(1)
	if len(args) >= 2 {
		start, stop = p[0], p[1]
	}
	if len(args) == 3 {
		step = p[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range() arg 3 must not be zero")
	}
	// Count in float to dodge int64 overflow on extreme bounds.
	n := math.Ceil((float64(stop) - float64(start)) / float64(step))
	if n > maxRange {
		return jinja.Undefined(), fmt.Errorf("range too big: the sandbox allows at most %d items", maxRange)
	}
	items := make([]jinja.Value, 0, max(int(n), 0))
	for i := range max(int(n), 0) {
		items = append(items, jinja.NewInt(start+int64(i)*step))
	}
	return jinja.NewList(items), nil
}

func isIntLike(v jinja.Value) bool    { return v.IsInt() || v.IsBool() }
func isNumberLike(v jinja.Value) bool { return isIntLike(v) || v.IsFloat() }

func intOf(v jinja.Value) int64 {
	if v.IsBool() {
		if v.AsBool() {
			return 1
		}
		return 0
	}
	return v.AsInt()
}

func floatOf(v jinja.Value) float64 {
	if v.IsFloat() {
		return v.AsFloat()
	}
	return float64(intOf(v))
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x // MinInt64 stays negative; bits.Mul64 then reports overflow
	}
	return x
}

// typeName is the Python type name used in error messages.
func typeName(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	}
	return "function"
}

// pyIter is Python's iteration over a value: list items, dict keys, the
// characters of a string; Undefined iterates as empty, as in jinja2.
func pyIter(v jinja.Value) ([]jinja.Value, error) {
	switch {
	case v.IsList():
		return v.AsList().Items, nil
	case v.IsDict():
		keys := v.AsDict().Keys
		out := make([]jinja.Value, len(keys))
		for i, k := range keys {
			out[i] = jinja.NewString(k)
		}
		return out, nil
	case v.IsString():
		var out []jinja.Value
		for _, r := range v.AsString() {
			out = append(out, jinja.NewString(string(r)))
		}
		return out, nil
	case v.IsUndefined():
		return nil, nil
	}
	return nil, fmt.Errorf("%s object is not iterable", typeName(v))
}

// filterList is jinja2's list filter: list(value).
func filterList(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewList(nil), nil
	}
	items, err := pyIter(args[0])
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("list: %w", err)
	}
	return jinja.NewList(append([]jinja.Value(nil), items...)), nil
}

// filterJoin is jinja2's join(value, d=”, attribute=None), with str() of
// each item (None prints as "None", floats as Python does).
func filterJoin(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	items, err := pyIter(args[0])
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("join: %w", err)
	}
	sep := jinja.NewString("")
	if len(args) > 1 {
		sep = args[1]
	}
	if d, ok := kwargs["d"]; ok {
		sep = d
	}
	sepStr, err := pyStr(sep)
	if err != nil {
		return jinja.Undefined(), err
	}
	attr, hasAttr := kwargs["attribute"]
	if !hasAttr && len(args) > 2 {
		attr, hasAttr = args[2], true
	}
	parts := make([]string, len(items))
	for i, it := range items {
		if hasAttr && !attr.IsNone() {
			it = getAttr(it, attr)
		}
		if parts[i], err = pyStr(it); err != nil {
			return jinja.Undefined(), err
		}
	}
	return jinja.NewString(strings.Join(parts, sepStr)), nil
}

// getAttr follows jinja2's make_attrgetter: a dotted path of keys or
// integer indexes; a missing step gives Undefined.
func getAttr(v jinja.Value, attr jinja.Value) jinja.Value {
	var path []string
	if attr.IsInt() {
		path = []string{strconv.FormatInt(attr.AsInt(), 10)}
	} else {
		s, _ := pyStr(attr)
		path = strings.Split(s, ".")
	}
	for _, p := range path {
		switch {
		case v.IsDict():
			nv, ok := v.AsDict().Get(p)
			if !ok {
				return jinja.Undefined()
			}
			v = nv
		case v.IsList():
			i, err := strconv.Atoi(p)
			items := v.AsList().Items
			if err != nil || i < -len(items) || i >= len(items) {
				return jinja.Undefined()
			}
			if i < 0 {
				i += len(items)
			}
			v = items[i]
		default:
			return jinja.Undefined()
		}
	}
	return v
}
