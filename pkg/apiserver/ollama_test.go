package apiserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

type ollamaLine struct {
	Model    string `json:"model"`
	Response string `json:"response"`
	Message  *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason"`
	Context    []int32 `json:"context"`
	EvalCount  int     `json:"eval_count"`
	PromptEval int     `json:"prompt_eval_count"`
	Error      string  `json:"error"`
}

// ndjson splits an NDJSON body into lines, each a JSON object.
func ndjson(t *testing.T, body []byte) []ollamaLine {
	t.Helper()
	var out []ollamaLine
	for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		var v ollamaLine
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

func TestOllamaGenerateAndChat(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML, ServedModelNames: []string{"stories"}}, fakebackend.Options{})
	// Non-streamed and streamed give the same text; the stream ends with
	// the statistics line.
	r := ts.post(t, "/api/generate", `{"model":"stories","prompt":"Once upon a time","raw":true,"stream":false,"options":{"num_predict":6,"temperature":0}}`)
	if r.status != 200 {
		t.Fatalf("generate: %d %s", r.status, r.body)
	}
	one := decode[ollamaLine](t, r.body)
	if !one.Done || one.DoneReason != "length" || one.EvalCount != 6 || one.Response == "" || len(one.Context) != one.PromptEval+6 {
		t.Errorf("generate: %s", r.body)
	}
	r = ts.post(t, "/api/generate", `{"model":"stories:latest","prompt":"Once upon a time","raw":true,"options":{"num_predict":6,"temperature":0}}`)
	if r.status != 200 || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("stream: %d %v %s", r.status, r.header, r.body)
	}
	lines := ndjson(t, r.body)
	text := ""
	for _, l := range lines[:len(lines)-1] {
		if l.Done {
			t.Errorf("done before the last line: %s", r.body)
		}
		text += l.Response
	}
	if last := lines[len(lines)-1]; !last.Done || last.EvalCount != 6 || text != one.Response {
		t.Errorf("stream text %q (want %q), last %+v", text, one.Response, last)
	}
	// Chat through the template.
	r = ts.post(t, "/api/chat", `{"model":"stories","stream":false,"messages":[{"role":"user","content":"Hi","images":[]}],"options":{"num_predict":3}}`)
	if c := decode[ollamaLine](t, r.body); r.status != 200 || c.Message == nil || c.Message.Role != "assistant" || !c.Done || c.EvalCount != 3 {
		t.Errorf("chat: %d %s", r.status, r.body)
	}
	r = ts.post(t, "/api/chat", `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"options":{"num_predict":3}}`)
	if lines := ndjson(t, r.body); r.status != 200 || !lines[len(lines)-1].Done || lines[0].Message == nil {
		t.Errorf("chat stream: %d %s", r.status, r.body)
	}
	// Nothing to generate: the model is "loaded".
	r = ts.post(t, "/api/generate", `{"model":"stories"}`)
	if l := decode[ollamaLine](t, r.body); r.status != 200 || l.DoneReason != "load" {
		t.Errorf("load: %d %s", r.status, r.body)
	}
}

func TestOllamaErrorsAndInfo(t *testing.T) {
	ts := startServer(t, apiserver.Options{ServedModelNames: []string{"stories", "alias"}}, fakebackend.Options{})
	cases := []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"unknown model", "/api/generate", `{"model":"llama3","prompt":"Hi"}`, 404, `model "llama3" not found`},
		{"no model", "/api/generate", `{"prompt":"Hi"}`, 400, "model is required"},
		{"mirostat", "/api/generate", `{"model":"stories","prompt":"Hi","options":{"mirostat":2}}`, 400, "options.mirostat"},
		{"format json", "/api/generate", `{"model":"stories","prompt":"Hi","format":"json"}`, 400, "format"},
		{"images", "/api/generate", `{"model":"stories","prompt":"Hi","images":["aGk="]}`, 400, "images"},
		{"system without template", "/api/generate", `{"model":"stories","prompt":"Hi","system":"be brief"}`, 400, "chat template"},
		{"num_predict 0", "/api/generate", `{"model":"stories","prompt":"Hi","options":{"num_predict":0}}`, 400, "num_predict"},
		{"repeat_last_n 64", "/api/generate", `{"model":"stories","prompt":"Hi","options":{"repeat_last_n":64}}`, 400, "repeat_last_n"},
		{"chat without template", "/api/chat", `{"model":"stories","messages":[{"role":"user","content":"Hi"}]}`, 400, "chat template"},
		{"bad json", "/api/chat", `{`, 400, "invalid JSON"},
		{"show unknown", "/api/show", `{"model":"nope"}`, 404, "not found"},
		{"unknown endpoint", "/api/pull", `{"model":"x"}`, 404, "no route"},
		{"ignored options", "/api/generate", `{"model":"stories","prompt":"Hi","stream":false,"keep_alive":"5m","options":{"num_ctx":4096,"num_thread":2,"num_predict":2,"seed":-5,"top_k":0,"some_new_option":1}}`, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(t, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.msg == "" {
				return
			}
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(r.body, &e) != nil || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("want ollama's {\"error\": \"...%s...\"}, got %s", tc.msg, r.body)
			}
		})
	}
	var tags struct {
		Models []struct {
			Name    string         `json:"name"`
			Details map[string]any `json:"details"`
		} `json:"models"`
	}
	if err := json.Unmarshal(ts.get(t, "/api/tags").body, &tags); err != nil || len(tags.Models) != 2 ||
		tags.Models[0].Name != "stories:latest" || tags.Models[1].Name != "alias:latest" {
		t.Errorf("tags: %+v %v", tags, err)
	}
	if r := ts.get(t, "/api/version"); r.status != 200 || !strings.Contains(string(r.body), `"version"`) {
		t.Errorf("version: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/api/ps"); r.status != 200 || !strings.Contains(string(r.body), `"expires_at"`) {
		t.Errorf("ps: %d %s", r.status, r.body)
	}
	if r := ts.post(t, "/api/show", `{"name":"alias"}`); r.status != 200 || !strings.Contains(string(r.body), `"capabilities"`) {
		t.Errorf("show: %d %s", r.status, r.body)
	}
	if r := ts.do(t, http.MethodGet, "/api/generate", nil); r.status != 405 || !strings.Contains(string(r.body), `{"error":"method GET`) {
		t.Errorf("GET generate: %d %s", r.status, r.body)
	}
}
