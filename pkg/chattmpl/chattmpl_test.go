package chattmpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"math"
	"strings"
	"testing"
	"time"
)

// qwenTools is the fixture's "tools" case rebuilt through the Message API.
func TestRenderMessagesMatchesFixture(t *testing.T) {
	path := sharedDir(t) + "/fixtures/chat_templates/cases.json"
	var fx struct {
		Templates map[string]string `json:"templates"`
		Cases     []fixtureCase     `json:"cases"`
	}
	if !readJSON(t, path, &fx) {
		testmodels.Missing(t, fmt.Sprintf("chat template fixtures not available at %s", path), nil)
	}
	var want string
	for _, c := range fx.Cases {
		if c.Model == "qwen3" && c.Name == "tools" {
			want = c.Want
		}
	}
	if want == "" {
		t.Skip("fixture has no qwen3/tools case")
	}
	tmpl, err := New(fx.Templates["qwen3"])
	if err != nil {
		t.Fatal(err)
	}
	var msgs []Message
	if err := json.Unmarshal([]byte(`[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},
		{"role":"tool","content":"{\"temp\": 21}"},
		{"role":"tool","content":"{\"humidity\": 40}"}]`), &msgs); err != nil {
		t.Fatal(err)
	}
	var tools []any
	v, err := DecodeJSON([]byte(`[{"type": "function", "function": {"name": "get_weather", "description": "Get weather for a city",
		"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "城市"}}, "required": ["city"]}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	tools = v.([]any)
	got, err := tmpl.RenderMessages(msgs, true, NewMap().Set("tools", tools).Set("bos_token", "").Set("eos_token", "<|im_end|>"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

func readJSON(t *testing.T, path string, dst any) bool {
	t.Helper()
	data, err := readFile(path)
	if err != nil {
		return false
	}
	if err := json.Unmarshal(data, dst); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return true
}

func TestMessageFields(t *testing.T) {
	rc := "why"
	tmpl, err := New(`{% for m in messages %}{{ m | tojson }}
{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.RenderMessages([]Message{
		{Role: "user", Content: TextContent("hi"), Name: "bob"},
		{Role: "assistant", Content: Content{Null: true}, ReasoningContent: &rc,
			ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "f", Arguments: json.RawMessage(`"{\"a\":1}"`)}}}},
		{Role: "tool", Content: TextContent("r"), ToolCallID: "c1"},
		{Role: "user", Content: Content{Parts: []*Map{NewMap().Set("type", "text").Set("text", "p")}}},
	}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "user", "content": "hi", "name": "bob"}
{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}], "reasoning_content": "why"}
{"role": "tool", "content": "r", "tool_call_id": "c1"}
{"role": "user", "content": [{"type": "text", "text": "p"}]}
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestContentJSON(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{
		{`"text"`, false}, {`null`, false}, {`[{"type":"text","text":"a"}]`, false},
		{`42`, true}, {`[1]`, true}, {`{"a":1}`, true},
	} {
		var c Content
		err := json.Unmarshal([]byte(tc.in), &c)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err=%v, wantErr=%v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil {
			out, _ := json.Marshal(c)
			if string(out) != strings.ReplaceAll(tc.in, " ", "") {
				t.Errorf("%s: round trip gave %s", tc.in, out)
			}
		}
	}
}

func TestSyntaxErrors(t *testing.T) {
	for name, src := range map[string]string{
		"unclosed-var":     "a {{ x ",
		"unclosed-block":   "{% if x %}",
		"unclosed-comment": "{# x ",
		"unterminated-str": "{{ 'abc }}",
		"empty-expr":       "{{ }}",
		"unbalanced":       "{{ (a }}",
		"bad-close":        "{{ a) }}",
		"unknown-tag":      "{% frobnicate %}",
		"missing-endfor":   "{% for x in y %}z",
		"raw-unclosed":     "{% raw %} abc",
		"bad-escape":       `{{ '\xZZ' }}`,
		"bang-filter":      "{{ messages|!select }}", // the library skipped '!' and panicked in select
		"semicolon-filter": "{{ messages|;select }}", // likewise ';' (found by FuzzTemplate in CI)
		"semicolon":        "{{ a; b }}",
		"unknown-char":     "{{ a $ b }}",
		"non-ascii-name":   "{{ messages|\xc5select }}",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(src)
			if err == nil {
				t.Fatalf("%q compiled", src)
			}
			if errors.Is(err, ErrInternal) {
				t.Fatalf("internal error instead of a syntax error: %v", err)
			}
			if !strings.Contains(err.Error(), "compile chat template") {
				t.Fatalf("error lacks context: %v", err)
			}
		})
	}
	_, err := New("line1\nline2 {{ 'x }}")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("want a SyntaxError on line 2, got %v", err)
	}
}

func TestRaiseException(t *testing.T) {
	tmpl, err := New(`{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}ok`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.RenderMessages([]Message{{Role: "assistant", Content: TextContent("x")}}, true, nil)
	var raised *RaisedError
	if !errors.As(err, &raised) || raised.Message != "Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Fatalf("want RaisedError, got %v", err)
	}
	out, err := tmpl.RenderMessages([]Message{{Role: "user", Content: TextContent("x")}}, true, nil)
	if err != nil || out != "ok" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestPyFloatRepr(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {0.1, "0.1"}, {1e16, "1e+16"},
		{1e15, "1000000000000000.0"}, {1.5e16, "1.5e+16"}, {1e-4, "0.0001"}, {1e-5, "1e-05"},
		{123456789.125, "123456789.125"}, {1e100, "1e+100"}, {5e-324, "5e-324"}, {-2.5, "-2.5"},
		{math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {0.7, "0.7"},
		{9007199254740993, "9007199254740992.0"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
	} {
		if got := pyFloatRepr(tc.f); got != tc.want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestStrftime(t *testing.T) {
	ts := time.Date(2024, 7, 4, 15, 5, 9, 123456000, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":       "04 Jul 2024",
		"%-d %B %y":      "4 July 24",
		"%H:%M:%S %p %I": "15:05:09 PM 03",
		"%A %a %j %%":    "Thursday Thu 186 %",
		"%Y-%m-%dT%f":    "2024-07-04T123456",
		"%e|%k|%l|%F":    " 4|15| 3|2024-07-04",
		"%Q":             "%Q",
	} {
		if got := strftime(format, ts); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}

func TestMapJSONRoundTrip(t *testing.T) {
	in := `{"z":1,"a":{"y":[1,2.5,"x",null,true],"b":{}},"m":"é"}`
	var m Map
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.Keys(), ","); got != "z,a,m" {
		t.Fatalf("keys %s", got)
	}
	out, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("round trip\n got %s\nwant %s", out, in)
	}
	for _, bad := range []string{`[1]`, `{"a":}`, `{"a":1} x`, ``} {
		var m Map
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}

func TestUnsupportedContextValue(t *testing.T) {
	tmpl, err := New("{{ x }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render(NewMap().Set("x", make(chan int))); err == nil {
		t.Fatal("a channel in the context rendered")
	}
	out, err := tmpl.Render(NewMap().Set("x", []int{1, 2}))
	if err != nil || out != "[1, 2]" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestSelectTemplate(t *testing.T) {
	list := json.RawMessage(`[{"name":"default","template":"D"},{"name":"tool_use","template":"T"},{"name":"rag","template":"R"}]`)
	for _, tc := range []struct {
		raw     json.RawMessage
		name    string
		tools   bool
		want    string
		wantErr bool
	}{
		{json.RawMessage(`"S"`), "", false, "S", false},
		{json.RawMessage(`"S"`), "", true, "S", false},
		{json.RawMessage(`"S"`), "rag", false, "", true},
		{list, "", false, "D", false},
		{list, "", true, "T", false},
		{list, "rag", true, "R", false},
		{list, "nope", false, "", true},
		{json.RawMessage(`[{"name":"a","template":"A"}]`), "", false, "", true},
		{json.RawMessage(`null`), "", false, "", true},
		{json.RawMessage(`42`), "", false, "", true},
	} {
		got, err := SelectTemplate(tc.raw, tc.name, tc.tools)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("SelectTemplate(%s, %q, %v) = %q, %v", tc.raw, tc.name, tc.tools, got, err)
		}
	}
}
