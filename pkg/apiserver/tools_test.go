package apiserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen3Tokenizer is the real Qwen3 tokenizer with its chat template
// (../shared/fixtures/tokenizers/qwen3).
func qwen3Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	dir := filepath.Join(modelsDir(t), "..", "fixtures", "tokenizers", "qwen3")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("Qwen3 tokenizer fixture missing at %s: %v", dir, err)
	}
	qwenOnce.Do(func() { qwenTok, qwenErr = tokenizer.LoadDir(dir) })
	if qwenErr != nil {
		t.Fatalf("load Qwen3 tokenizer: %v", qwenErr)
	}
	return qwenTok
}

func startQwen(t *testing.T, reply string, opts apiserver.Options) *testServer {
	t.Helper()
	tok := qwen3Tokenizer(t)
	if opts.CheckConstraint == nil {
		opts.CheckConstraint = apiserver.GrammarCheck(grammar.NewCache(16), grammar.Options{})
	}
	be := fakebackend.New(tok, fakebackend.Options{Reply: func(*apiserver.Group, int) string { return reply }})
	return startWith(t, opts, be, tok)
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather of a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

type chatOut struct {
	Choices []struct {
		Message struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// streamed assembles a chat stream the way clients do.
type streamed struct {
	content, reasoning string
	names, args, ids   []string
	finish             string
}

func assembleStream(t *testing.T, body []byte) streamed {
	t.Helper()
	var s streamed
	for _, ev := range sseEvents(t, body, "data: ") {
		if ev == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != nil {
				s.content += *c.Delta.Content
			}
			if c.Delta.ReasoningContent != nil {
				s.reasoning += *c.Delta.ReasoningContent
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index == len(s.names) {
					if tc.Function.Name == "" || !strings.HasPrefix(tc.ID, "call_") {
						t.Fatalf("first delta of call %d lacks its name or id: %s", tc.Index, ev)
					}
					s.names, s.ids, s.args = append(s.names, tc.Function.Name), append(s.ids, tc.ID), append(s.args, "")
				} else if tc.Index != len(s.names)-1 || tc.Function.Name != "" {
					t.Fatalf("delta for call %d out of order: %s", tc.Index, ev)
				}
				s.args[tc.Index] += tc.Function.Arguments
			}
			if c.FinishReason != nil {
				s.finish = *c.FinishReason
			}
		}
	}
	return s
}

func TestToolCalls(t *testing.T) {
	call := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	for _, tc := range []struct {
		name, reply, extra string
		content            *string
		calls              int
		finish             string
	}{
		{"auto call", "Checking.\n" + call, ``, ptr("Checking.\n"), 1, "tool_calls"},
		{"auto no call", "It is sunny.", ``, ptr("It is sunny."), 0, "stop"},
		{"two calls", call + "\n" + call, ``, nil, 2, "tool_calls"},
		{"none", call, `,"tool_choice":"none"`, ptr(call), 0, "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startQwen(t, tc.reply, apiserver.Options{})
			body := `{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` + weatherTool + `]` + tc.extra
			r := ts.post(t, "/v1/chat/completions", body+`}`, "x-request-id", "tools-1")
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			out := decode[chatOut](t, r.body)
			m := out.Choices[0].Message
			if (m.Content == nil) != (tc.content == nil) || (m.Content != nil && *m.Content != *tc.content) {
				t.Fatalf("content %v, want %v", m.Content, tc.content)
			}
			if len(m.ToolCalls) != tc.calls || out.Choices[0].FinishReason != tc.finish {
				t.Fatalf("calls %+v finish %q", m.ToolCalls, out.Choices[0].FinishReason)
			}
			for _, c := range m.ToolCalls {
				if c.Function.Name != "get_weather" || c.Function.Arguments != `{"city": "Paris"}` || c.Type != "function" || !strings.HasPrefix(c.ID, "call_") {
					t.Fatalf("call %+v", c)
				}
			}
			s := assembleStream(t, ts.post(t, "/v1/chat/completions", body+`,"stream":true}`, "x-request-id", "tools-1").body)
			if s.finish != tc.finish || len(s.names) != tc.calls || (tc.content != nil && s.content != *tc.content) {
				t.Fatalf("stream %+v", s)
			}
			for i := range s.names {
				if s.names[i] != m.ToolCalls[i].Function.Name || s.args[i] != m.ToolCalls[i].Function.Arguments || s.ids[i] != m.ToolCalls[i].ID {
					t.Fatalf("stream call %d (%s %s %s) != collected %+v", i, s.ids[i], s.names[i], s.args[i], m.ToolCalls[i])
				}
			}
			rendered := ts.tok.Decode(ts.be.Submitted()[0].Prompt, false)
			if want := strings.Contains(tc.extra, "none"); strings.Contains(rendered, "<tools>") == want {
				t.Fatalf("tools rendered = %v in %q", !want, rendered)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestForcedToolCall: required and named choices write the call trigger
// and constrain the call to the tools' schemas.
func TestForcedToolCall(t *testing.T) {
	reply := "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		ts := startQwen(t, reply, apiserver.Options{})
		r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"tools":[`+weatherTool+
			`,{"type":"function","function":{"name":"noop"}}],"tool_choice":`+choice+`}`)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		out := decode[chatOut](t, r.body)
		if c := out.Choices[0].Message.ToolCalls; len(c) != 1 || c[0].Function.Arguments != `{"city": "Oslo"}` || out.Choices[0].FinishReason != "tool_calls" {
			t.Fatalf("%s", r.body)
		}
		g := ts.be.Submitted()[0]
		if rendered := ts.tok.Decode(g.Prompt, false); !strings.HasSuffix(rendered, "<|im_start|>assistant\n<tool_call>\n") {
			t.Fatalf("prompt does not end with the trigger: %q", rendered)
		}
		c := g.Constraint
		if c == nil || c.Grammar.Kind != grammar.KindJSONSchema || c.Trigger != "" || !json.Valid([]byte(c.Grammar.Text)) ||
			!strings.Contains(c.Grammar.Text, `"const": "get_weather"`) || !strings.Contains(c.Grammar.Text, `"required":["city"]`) {
			t.Fatalf("constraint %+v", c)
		}
		if named := strings.Contains(choice, "function"); strings.Contains(c.Grammar.Text, `"noop"`) == named {
			t.Fatalf("choice %s: constraint %s", choice, c.Grammar.Text)
		}
	}
}

func TestReasoning(t *testing.T) {
	for _, tc := range []struct {
		name, reply, extra, content, reasoning string
		opts                                   apiserver.Options
	}{
		{"thinks", "<think>\nLet me think.\n</think>\n\nParis.", ``, "Paris.", "\nLet me think.\n", apiserver.Options{}},
		{"no thinking", "Paris.", `,"chat_template_kwargs":{"enable_thinking":false}`, "Paris.", "", apiserver.Options{}},
		{"parser off", "<think>x</think>y", ``, "<think>x</think>y", "", apiserver.Options{ReasoningParser: "none"}},
		{"separate_reasoning false", "<think>x</think>y", `,"separate_reasoning":false`, "<think>x</think>y", "", apiserver.Options{}},
		{"deepseek", "plan</think>answer", ``, "answer", "plan", apiserver.Options{ReasoningParser: "deepseek-r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startQwen(t, tc.reply, tc.opts)
			body := `{"messages":[{"role":"user","content":"Capital of France?"}]` + tc.extra
			out := decode[chatOut](t, ts.post(t, "/v1/chat/completions", body+`}`).body)
			m := out.Choices[0].Message
			if got := deref(m.ReasoningContent); got != tc.reasoning || deref(m.Content) != tc.content {
				t.Fatalf("reasoning %q content %v", got, deref(m.Content))
			}
			s := assembleStream(t, ts.post(t, "/v1/chat/completions", body+`,"stream":true}`).body)
			if s.reasoning != tc.reasoning || s.content != tc.content {
				t.Fatalf("stream %+v", s)
			}
			rendered := ts.tok.Decode(ts.be.Submitted()[0].Prompt, false)
			if strings.Contains(tc.extra, "enable_thinking") != strings.HasSuffix(rendered, "<think>\n\n</think>\n\n") {
				t.Fatalf("chat_template_kwargs did not reach the template: %q", rendered)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestConstraintFields: each way of asking for structured output reaches
// the backend as one constraint; without a grammar engine it is refused.
func TestConstraintFields(t *testing.T) {
	schema := `{"type":"object","properties":{"a":{"type":"integer"}}}`
	for _, tc := range []struct {
		name, path, body string
		spec             grammar.Spec
	}{
		{"json_schema", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + schema + `}}}`, grammar.Spec{Kind: grammar.KindJSONSchema, Text: schema}},
		{"json_object", "/v1/completions", `{"prompt":"Hi","response_format":{"type":"json_object"}}`, grammar.Spec{Kind: grammar.KindJSONObject}},
		{"guided_json", "/v1/completions", `{"prompt":"Hi","guided_json":` + schema + `}`, grammar.Spec{Kind: grammar.KindJSONSchema, Text: schema}},
		{"guided_regex", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"guided_regex":"[ab]+"}`, grammar.Spec{Kind: grammar.KindRegex, Text: "[ab]+"}},
		{"guided_choice", "/v1/completions", `{"prompt":"Hi","guided_choice":["yes","no.", "a|b"]}`, grammar.Spec{Kind: grammar.KindChoice, Choices: []string{"yes", "no.", "a|b"}}},
		{"guided_grammar", "/v1/completions", `{"prompt":"Hi","guided_grammar":"root ::= \"x\""}`, grammar.Spec{Kind: grammar.KindGBNF, Text: `root ::= "x"`}},
		{"native guided_json", "/generate", `{"inputs":"Hi","parameters":{"guided_json":"{\"type\":\"string\"}"}}`, grammar.Spec{Kind: grammar.KindJSONSchema, Text: `{"type":"string"}`}},
		{"native regular_constraint", "/generate", `{"inputs":"Hi","parameters":{"regular_constraint":"a*"}}`, grammar.Spec{Kind: grammar.KindRegex, Text: "a*"}},
		{"native guided_grammar", "/generate", `{"inputs":"Hi","parameters":{"guided_grammar":"root ::= [a-z]+"}}`, grammar.Spec{Kind: grammar.KindGBNF, Text: "root ::= [a-z]+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startQwen(t, "{}", apiserver.Options{})
			if r := ts.post(t, tc.path, tc.body); r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			c := ts.be.Submitted()[0].Constraint
			if c == nil || !reflect.DeepEqual(c.Grammar, tc.spec) {
				t.Fatalf("constraint %+v", c)
			}
			off := startWith(t, apiserver.Options{}, fakebackend.New(ts.tok, fakebackend.Options{}), ts.tok)
			if r := off.post(t, tc.path, tc.body); r.status != 400 || !strings.Contains(string(r.body), "constrained decoding") {
				t.Fatalf("server without a grammar engine: %d %s", r.status, r.body)
			}
		})
	}
}

// TestConstraintRefused: what the grammar engine cannot enforce is a 400
// naming the field and the keyword.
func TestConstraintRefused(t *testing.T) {
	ts := startQwen(t, "{}", apiserver.Options{})
	r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_schema",`+
		`"json_schema":{"name":"x","schema":{"type":"object","dependencies":{"a":["b"]}}}}}`)
	if r.status != 400 || !strings.Contains(string(r.body), "dependencies") || !strings.Contains(string(r.body), `"param":"response_format"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"tool_choice":"required","tools":[`+
		`{"type":"function","function":{"name":"f","parameters":{"type":"object","dependencies":{"a":["b"]}}}}]}`)
	if r.status != 400 || !strings.Contains(string(r.body), "dependencies") || !strings.Contains(string(r.body), `"param":"tools"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestToolsWithoutFormat: a template with no known call format refuses
// tools by name unless the server names a parser.
func TestToolsWithoutFormat(t *testing.T) {
	body := `{"messages":[{"role":"user","content":"Hi"}],"tools":[` + weatherTool + `]}`
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	if r := ts.post(t, "/v1/chat/completions", body); r.status != 400 || !strings.Contains(string(r.body), `"param":"tools"`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
	ts = startServer(t, apiserver.Options{ChatTemplate: chatML, ToolCallParser: "hermes"}, fakebackend.Options{})
	if r := ts.post(t, "/v1/chat/completions", body); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// chatML does not render tools: a system message describes them.
	if p := ts.tok.Decode(ts.be.Submitted()[0].Prompt, false); !strings.Contains(p, "get_weather") || !strings.Contains(p, "<tool_call>") {
		t.Fatalf("prompt %q", p)
	}
}
