package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// harmonyTemplate frames messages as gpt-oss's template does (a reduced
// form: enough for the server to detect the harmony format and to end the
// prompt with the assistant's start).
const harmonyTemplate = `{% if tools %}<|start|>developer<|message|>{% for t in tools %}{{ t.function.name }} {% endfor %}<|end|>{% endif %}` +
	`{% for m in messages %}{% if m.role == 'assistant' %}<|start|>assistant<|channel|>final<|message|>` +
	`{% else %}<|start|>{{ m.role }}<|message|>{% endif %}{{ m.content }}<|end|>{% endfor %}<|start|>assistant`

// startHarmony serves a fake model with gpt-oss's tokenizer (its channel
// markers are special tokens) that writes reply.
func startHarmony(t *testing.T, reply string) *testServer {
	t.Helper()
	dir := filepath.Join(modelsDir(t), "..", "fixtures", "tokenizers", "gptoss")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("gpt-oss tokenizer fixture missing at %s: %v", dir, err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatalf("load gpt-oss tokenizer: %v", err)
	}
	be := fakebackend.New(tok, fakebackend.Options{Reply: func(*apiserver.Group, int) string { return reply }})
	return startWith(t, apiserver.Options{ChatTemplate: harmonyTemplate}, be, tok)
}

// TestHarmonyReasoning: gpt-oss's analysis channel is reasoning_content
// and its final channel content, whole and streamed, although the markers
// are special tokens the OpenAI endpoints skip by default; what the
// harmony parser cannot honour is refused by name.
func TestHarmonyReasoning(t *testing.T) {
	ts := startHarmony(t, "<|channel|>analysis<|message|>The user wants a capital.<|end|>"+
		"<|start|>assistant<|channel|>final<|message|>Paris.<|return|>")
	body := `{"messages":[{"role":"user","content":"Capital of France?"}]`
	out := decode[chatOut](t, ts.post(t, "/v1/chat/completions", body+`}`).body)
	m := out.Choices[0].Message
	if got := deref(m.ReasoningContent); got != "The user wants a capital." || deref(m.Content) != "Paris." {
		t.Fatalf("reasoning %q content %q", got, deref(m.Content))
	}
	s := assembleStream(t, ts.post(t, "/v1/chat/completions", body+`,"stream":true}`).body)
	if s.reasoning != "The user wants a capital." || s.content != "Paris." {
		t.Fatalf("stream %+v", s)
	}
	if g := ts.be.Submitted()[0]; g.Params.SkipSpecialTokens {
		t.Fatal("special tokens skipped: the parser cannot see the channels")
	}
	// Without separation the channels are the content, markers included.
	raw := decode[chatOut](t, ts.post(t, "/v1/chat/completions", body+`,"separate_reasoning":false,"skip_special_tokens":false}`).body)
	if c := deref(raw.Choices[0].Message.Content); !strings.HasPrefix(c, "<|channel|>analysis") {
		t.Fatalf("unseparated content %q", c)
	}
	for _, tc := range []struct{ extra, param string }{
		{`,"thinking_token_budget":10`, "thinking_token_budget"},
		{`,"response_format":{"type":"json_object"}`, "response_format"},
		{`,"tools":[` + weatherTool + `],"tool_choice":"required"`, "tool_choice"},
		{`,"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`, "tool_choice"},
		{`,"tools":[` + strings.Replace(weatherTool, `"name":"get_weather",`, `"name":"get_weather","strict":true,`, 1) + `]`, "tools"},
	} {
		r := ts.post(t, "/v1/chat/completions", body+tc.extra+`}`)
		if r.status != 400 || !strings.Contains(string(r.body), `"param":"`+tc.param+`"`) || !strings.Contains(string(r.body), "gpt-oss") {
			t.Errorf("%s: %d %s", tc.param, r.status, r.body)
		}
	}
}

// TestHarmonyToolCalls: a message gpt-oss addresses to functions.NAME
// (commentary channel, ended by <|call|>) is a tool call with its body as
// the arguments, whole and streamed; the template is given the tools.
func TestHarmonyToolCalls(t *testing.T) {
	ts := startHarmony(t, "<|channel|>analysis<|message|>Need the weather.<|end|>"+
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"+`{"city":"Oslo"}`+"<|call|>")
	body := `{"messages":[{"role":"user","content":"Weather in Oslo?"}],"tools":[` + weatherTool + `]`
	out := decode[chatOut](t, ts.post(t, "/v1/chat/completions", body+`}`).body)
	c := out.Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_weather" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` || c.Message.ToolCalls[0].Type != "function" ||
		!strings.HasPrefix(c.Message.ToolCalls[0].ID, "call_") {
		t.Fatalf("tool calls %+v", c.Message.ToolCalls)
	}
	if c.FinishReason != "tool_calls" || deref(c.Message.ReasoningContent) != "Need the weather." || deref(c.Message.Content) != "" {
		t.Fatalf("finish %q reasoning %q content %q", c.FinishReason, deref(c.Message.ReasoningContent), deref(c.Message.Content))
	}
	prompt := ts.tok.Decode(ts.be.Submitted()[0].Prompt, false)
	if !strings.Contains(prompt, "<|start|>developer<|message|>get_weather <|end|>") {
		t.Fatalf("the template was not given the tools: %q", prompt)
	}
	s := assembleStream(t, ts.post(t, "/v1/chat/completions", body+`,"stream":true}`).body)
	if len(s.names) != 1 || s.names[0] != "get_weather" || s.args[0] != `{"city":"Oslo"}` || s.finish != "tool_calls" ||
		s.reasoning != "Need the weather." || s.content != "" {
		t.Fatalf("stream %+v", s)
	}
}
