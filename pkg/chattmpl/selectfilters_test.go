package chattmpl

import (
	"errors"
	"testing"
)

// TestTruthFilters pins jinja2's no-test forms of select/reject/selectattr/
// rejectattr (the library panics on them; see selectfilters.go). Wants are
// Python jinja2 3.1's output.
func TestTruthFilters(t *testing.T) {
	ctx := `{"xs": [0, 1, "", "a", null], "messages": [{"role": "user", "x": 1}, {"role": "assistant"}, {"role": "tool", "x": 0}]}`
	tests := map[string]struct{ src, want string }{
		"select":          {`{{ xs|select|list }}`, `[1, 'a']`},
		"reject":          {`{{ xs|reject|list }}`, `[0, '', None]`},
		"select empty ()": {`{{ xs|select()|list }}`, `[1, 'a']`},
		"selectattr":      {`{% for m in messages|selectattr('x') %}{{ m.role }};{% endfor %}`, `user;`},
		"rejectattr":      {`{% for m in messages|rejectattr("x") %}{{ m.role }};{% endfor %}`, `assistant;tool;`},
		"with test kept":  {`{% for m in messages|selectattr('role', 'equalto', 'tool') %}{{ m.role }}{% endfor %}`, `tool`},
		"keywords only":   {`{{ xs|select(a='')|list }}{{ xs|reject(k=1)|list }}`, `[1, 'a'][0, '', None]`},
		"attr, keyword":   {`{% for m in messages|selectattr('x', k=1) %}{{ m.role }};{% endfor %}`, `user;`},
		"fuzz crasher":    {`00000000000000{{messages|select }}`, `00000000000000[{'role': 'user', 'x': 1}, {'role': 'assistant'}, {'role': 'tool', 'x': 0}]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tmpl, err := New(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.RenderJSON([]byte(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSelectAttrWithoutName: selectattr/rejectattr with no positional
// attribute name is jinja2's "missing parameter" error, not an engine
// panic (the library slices past its argument list).
func TestSelectAttrWithoutName(t *testing.T) {
	for _, src := range []string{`{{ messages|selectattr(attr='x')|list }}`, `{{ messages|rejectattr()|list }}`} {
		tmpl, err := New(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tmpl.RenderJSON([]byte(`{"messages": [{"x": 1}]}`))
		if err == nil || errors.Is(err, ErrInternal) {
			t.Errorf("%s: got %v, want a template error", src, err)
		}
	}
}
