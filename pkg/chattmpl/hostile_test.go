package chattmpl

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// hostileTemplates exercise the paths a context can steer: attribute and
// item access, string methods, filters, tojson, arithmetic, slicing.
var hostileTemplates = map[string]string{
	"methods": `{% for m in messages %}{{ m.role | upper }}{{ m.content.strip() }}{{ m.content.split('x')[-1] }}` +
		`{{ m['content'][1:3] }}{{ m.content | length }}{{ m | tojson }}{{ m | tojson(indent=2) }}{{ m.tool_calls | first }}` +
		`{% for tc in m.tool_calls %}{{ tc.function.arguments | tojson }}{{ tc.function.name ~ '!' }}{% endfor %}{% endfor %}`,
	"arith": `{{ messages | length - 1 }}{{ (n or 0) + 1 }}{{ n * 2 }}{{ 'ab' * (n or 1) }}{{ n // 3 }}{{ n % 5 }}{{ messages[n] }}{{ messages[:n] }}`,
	"filters": `{{ messages | map(attribute='role') | join(',') }}{{ messages | selectattr('role', 'equalto', 'user') | list }}` +
		`{{ tools | tojson(separators=sep) }}{{ messages | sort | first }}{{ messages | reverse | list }}{{ n | int }}{{ n | float }}` +
		`{{ n | round }}{{ n | abs }}{{ messages | items }}{{ tools | dictsort }}{{ n | default('d') }}{{ n | trim }}{{ n | string }}`,
	"ns": `{% set ns = namespace(i=0) %}{% for m in messages[::-1] %}{% set ns.i = ns.i + loop.index %}{% endfor %}{{ ns.i }}` +
		`{% if messages[0].role == 'system' %}{{ messages[0]['content'] }}{% endif %}{{ raise_exception(n) if n == 13 else '' }}`,
}

// randValue builds a random context value: nested lists/dicts of awkward
// scalars (NaN, huge ints, invalid UTF-8, control characters, long strings).
func randValue(r *rand.Rand, depth int) any {
	k := r.IntN(12)
	if depth > 4 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return []int64{0, -1, 1, 13, math.MaxInt64, math.MinInt64, -1 << 40}[r.IntN(7)]
	case 3:
		return []float64{0, -0.0, math.NaN(), math.Inf(1), math.Inf(-1), 1e300, 5e-324, 0.1}[r.IntN(8)]
	case 4, 5:
		return []string{"", "x", "\xff\xfe", "\x00\x01\x1f", "\u2028😀é", strings.Repeat("ab", 5000), "{{ x }}", "role",
			"<tool_response>x</tool_response>", "</think>", "\u3000 x \u3000"}[r.IntN(11)]
	case 6:
		return map[string]any{"role": "user"}
	case 7, 8:
		n := r.IntN(5)
		l := make([]any, n)
		for i := range l {
			l[i] = randValue(r, depth+1)
		}
		return l
	default:
		m := NewMap()
		keys := []string{"role", "content", "tool_calls", "function", "arguments", "name", "reasoning_content", "type", "items"}
		for range r.IntN(5) {
			m.Set(keys[r.IntN(len(keys))], randValue(r, depth+1))
		}
		return m
	}
}

// TestHostileContexts renders thousands of random contexts through the real
// templates and ours: any outcome is fine except a panic (ErrInternal).
func TestHostileContexts(t *testing.T) {
	templates := map[string]string{}
	for k, v := range hostileTemplates {
		templates[k] = v
	}
	for k, v := range fixtureTemplates(t) {
		templates[k] = v
	}
	r := rand.New(rand.NewPCG(1, 2))
	seps := []any{nil, []any{",", ":"}, []any{1, 2}, "ab", []any{}}
	for name, src := range templates {
		tmpl, err := New(src)
		if err != nil {
			t.Fatalf("%s: compile: %v", name, err)
		}
		for i := range 400 {
			ctx := NewMap()
			for _, k := range []string{"messages", "tools", "n", "add_generation_prompt", "enable_thinking", "bos_token"} {
				if r.IntN(4) > 0 {
					ctx.Set(k, randValue(r, 0))
				}
			}
			ctx.Set("sep", seps[r.IntN(len(seps))])
			if _, err := tmpl.Render(ctx); errors.Is(err, ErrInternal) {
				t.Fatalf("%s case %d: %v", name, i, err)
			}
		}
	}
}

func fixtureTemplates(t *testing.T) map[string]string {
	out := map[string]string{}
	for k, v := range diffTemplates(t) {
		if strings.HasPrefix(k, "fixture-") {
			out[k] = v
		}
	}
	return out
}

// FuzzRenderJSON feeds arbitrary JSON contexts to the Qwen3-style template.
func FuzzRenderJSON(f *testing.F) {
	for _, c := range ourConversations {
		f.Add(c.json)
	}
	f.Add(`{"messages":"x"}`)
	f.Add(`{"messages":[1,[2],{"role":{"a":1}}],"tools":[null]}`)
	tmpl, err := New(hostileTemplates["methods"] + hostileTemplates["filters"] + hostileTemplates["ns"])
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ctx string) {
		if _, err := tmpl.RenderJSON([]byte(ctx)); errors.Is(err, ErrInternal) {
			t.Fatal(err)
		}
	})
}

// FuzzTemplate compiles and renders arbitrary template text.
func FuzzTemplate(f *testing.F) {
	for _, s := range hostileTemplates {
		f.Add(s)
	}
	f.Add("{% raw %}{{ x }}{% endraw %}")
	f.Add("{{ 'a' ~ x ~ 1.5 }}{%- if x -%} y {%+ endif +%}")
	f.Add("{{ {'a': {'b': 1}} }}")
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := New(src)
		if err != nil {
			if errors.Is(err, ErrInternal) {
				t.Fatalf("compile panicked: %v", err)
			}
			return
		}
		if _, err := tmpl.RenderJSON([]byte(`{"x": [1, "a", null], "messages": [{"role": "user", "content": "hi"}]}`)); errors.Is(err, ErrInternal) {
			t.Fatalf("render panicked: %v", err)
		}
	})
}

// TestConcurrentRender renders one template from many goroutines (go test
// -race checks that Render shares nothing mutable).
func TestConcurrentRender(t *testing.T) {
	tmpl, err := New(hostileTemplates["ns"] + `{{ messages | tojson }}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := NewMap().Set("messages", []any{NewMap().Set("role", "system").Set("content", "s")})
	want, err := tmpl.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got, err := tmpl.Render(ctx); err != nil || got != want {
					t.Errorf("got %q, %v; want %q", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
