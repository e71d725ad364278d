package apiserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

func TestTokenizeDetokenizeVersion(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML, MaxReqTotalLen: 300}, fakebackend.Options{})
	type tokResp struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []int32  `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}
	want := ts.tok.Encode("Once upon a time", true)
	r := ts.post(t, "/tokenize", `{"prompt":"Once upon a time","return_token_strs":true}`)
	got := decode[tokResp](t, r.body)
	if r.status != 200 || got.Count != len(want) || got.MaxModelLen != 300 || len(got.TokenStrs) != len(want) || got.Tokens[0] != want[0] {
		t.Fatalf("tokenize: %d %s (want ids %v)", r.status, r.body, want)
	}
	r = ts.post(t, "/tokenize", `{"prompt":"Once upon a time","add_special_tokens":false}`)
	if got := decode[tokResp](t, r.body); got.Count != len(want)-1 || got.TokenStrs != nil {
		t.Errorf("without BOS: %s", r.body)
	}
	r = ts.post(t, "/tokenize", `{"messages":[{"role":"user","content":"Hi"}]}`)
	chat := decode[tokResp](t, r.body)
	if text := ts.tok.Decode(chat.Tokens, false); r.status != 200 || !strings.Contains(text, "<|im_start|>assistant") {
		t.Errorf("chat tokenize: %d %s (%q)", r.status, r.body, text)
	}
	ids, _ := json.Marshal(want[1:])
	r = ts.post(t, "/detokenize", `{"tokens":`+string(ids)+`}`)
	if r.status != 200 || string(r.body) != `{"prompt":"Once upon a time"}` {
		t.Errorf("detokenize: %d %s", r.status, r.body)
	}
	for _, tc := range []struct{ path, body, code string }{
		{"/tokenize", `{}`, "missing_required_parameter"},
		{"/tokenize", `{"prompt":5}`, "invalid_type"},
		{"/detokenize", `{"tokens":[999999]}`, "invalid_value"},
		{"/detokenize", `{}`, "missing_required_parameter"},
	} {
		r := ts.post(t, tc.path, tc.body)
		if e := decode[errResp](t, r.body); r.status != 400 || e.Error.Code == nil || *e.Error.Code != tc.code {
			t.Errorf("%s %s: %d %s", tc.path, tc.body, r.status, r.body)
		}
	}
	if r := ts.get(t, "/version"); r.status != 200 || !strings.HasPrefix(string(r.body), `{"version":"`) {
		t.Errorf("version: %d %s", r.status, r.body)
	}
}

func TestResponsesAPI(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	type respJSON struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	r := ts.post(t, "/v1/responses", `{"input":"Hi","instructions":"Be brief.","max_output_tokens":5,"temperature":0}`)
	got := decode[respJSON](t, r.body)
	if r.status != 200 || got.Object != "response" || got.Status != "incomplete" || got.IncompleteDetails == nil ||
		len(got.Output) != 1 || got.Output[0].Role != "assistant" || got.Output[0].Content[0].Type != "output_text" || got.Usage.OutputTokens != 5 {
		t.Fatalf("responses: %d %s", r.status, r.body)
	}
	r = ts.post(t, "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]}],"max_output_tokens":5,"temperature":0,"stream":true}`)
	text := ""
	var types []string
	for _, block := range strings.Split(strings.TrimSpace(string(r.body)), "\n\n") {
		typ, e, ok := strings.Cut(block, "\ndata: ")
		if !ok || !strings.HasPrefix(typ, "event: ") {
			t.Fatalf("event framing %q", block)
		}
		var v struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			t.Fatalf("event %q: %v", e, err)
		}
		if "event: "+v.Type != typ {
			t.Errorf("event line %q, data type %q", typ, v.Type)
		}
		types = append(types, v.Type)
		text += v.Delta
	}
	if len(types) < 8 || types[0] != "response.created" || types[len(types)-1] != "response.incomplete" || text != got.Output[0].Content[0].Text {
		t.Errorf("stream events %v, text %q want %q", types, text, got.Output[0].Content[0].Text)
	}
	if !strings.Contains(string(r.body), "event: response.output_text.delta\ndata: ") {
		t.Errorf("no typed event lines: %s", r.body)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"input":"Hi","store":true}`, "store"},
		{`{"input":"Hi","previous_response_id":"resp_1"}`, "previous_response_id"},
		{`{"input":"Hi","tools":[{"type":"web_search"}]}`, "tools"},
		{`{"input":"Hi","text":{"format":{"type":"json_schema"}}}`, "text.format"},
		{`{"input":[{"type":"function_call_output","output":"x"}]}`, "input[0].type"},
		{`{}`, "input"},
	} {
		r := ts.post(t, "/v1/responses", tc.body)
		if e := decode[errResp](t, r.body); r.status != 400 || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("%s: %d %s", tc.body, r.status, r.body)
		}
	}
}
