package chattmpl

import (
	"errors"

	"github.com/ardanlabs/jinja"
)

// The library's select/reject (no test name) and selectattr/rejectattr (no
// test name) slice their argument list past its end and panic (jinja v1.8.0
// builtins.go, args[2:] / args[3:]). Those argument-count cases are
// rewritten to these truthiness filters, which is what jinja2 does when no
// test is given; calls with a test keep the library's implementation.
const (
	fnSelect     = "__ll_select"
	fnReject     = "__ll_reject"
	fnSelectAttr = "__ll_selectattr"
	fnRejectAttr = "__ll_rejectattr"
)

// truthFilterRename returns the replacement for filter name when called
// with argc arguments (not counting the piped value), or "".
func truthFilterRename(name string, argc int) string {
	switch {
	case name == "select" && argc == 0:
		return fnSelect
	case name == "reject" && argc == 0:
		return fnReject
	case name == "selectattr" && argc <= 1:
		return fnSelectAttr
	case name == "rejectattr" && argc <= 1:
		return fnRejectAttr
	}
	return ""
}

func addTruthFilters(data map[string]jinja.Value) {
	data[fnSelect] = jinja.NewCallable("select", truthFilter(false, false))
	data[fnReject] = jinja.NewCallable("reject", truthFilter(true, false))
	data[fnSelectAttr] = jinja.NewCallable("selectattr", truthFilter(false, true))
	data[fnRejectAttr] = jinja.NewCallable("rejectattr", truthFilter(true, true))
}

// truthFilter keeps the items (or, with byAttr, the items whose attribute
// named by the first argument) that are truthy, or with negate falsy.
func truthFilter(negate, byAttr bool) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if byAttr && len(args) < 2 {
			return jinja.Undefined(), errors.New("missing parameter for attribute name") // jinja2's FilterArgumentError
		}
		if len(args) == 0 {
			return jinja.NewList(nil), nil
		}
		items, err := pyIter(args[0])
		if err != nil {
			return jinja.Undefined(), err
		}
		attr := ""
		if byAttr {
			if !args[1].IsString() {
				return jinja.NewList(nil), nil // jinja2 looks up str(attr); chat templates pass names
			}
			attr = args[1].AsString()
		}
		var out []jinja.Value
		for _, it := range items {
			v := it
			if byAttr {
				v = jinja.Undefined()
				if it.IsDict() {
					if got, ok := it.AsDict().Get(attr); ok {
						v = got
					}
				}
			}
			if v.IsTruthy() != negate {
				out = append(out, it)
			}
		}
		return jinja.NewList(out), nil
	}
}

// filterArgCount counts the positional call arguments of the filter at
// sig[n] (0 when it is not called), scanning to the matching ')'. Keyword
// arguments (name=value) do not count: without a positional test name
// jinja2 filters by truthiness whatever keywords come along, and the
// library slices its positional list all the same.
func filterArgCount(toks []ctok, sig []int, n int) int {
	if n+1 >= len(sig) || toks[sig[n+1]].text != "(" {
		return 0
	}
	depth, argc, empty, keyword := 0, 0, true, false
	for m := n + 1; m < len(sig); m++ {
		t := toks[sig[m]]
		switch t.kind {
		case ctOpen:
			depth++
			if depth == 1 {
				continue
			}
		case ctClose:
			depth--
			if depth == 0 {
				if !empty && !keyword {
					argc++
				}
				return argc
			}
		}
		if depth == 1 && t.kind == ctOp && t.text == "," {
			if !keyword {
				argc++
			}
			empty, keyword = true, false
			continue
		}
		if depth == 1 && empty && t.kind == ctName && m+1 < len(sig) {
			if nt := toks[sig[m+1]]; nt.kind == ctOp && nt.text == "=" {
				keyword = true
			}
		}
		empty = false
	}
	return argc
}
