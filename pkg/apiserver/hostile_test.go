package apiserver_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

type hostileCase struct {
	name, method, path, body string
	status                   int
	code, param              string // "" = not checked
}

func nativeCase(name, params string, status int, code, param string) hostileCase {
	return hostileCase{name: "native/" + name, path: "/generate", body: `{"inputs":"Hi","parameters":{` + params + `}}`,
		status: status, code: code, param: param}
}

func complCase(name, fields string, status int, code, param string) hostileCase {
	return hostileCase{name: "completions/" + name, path: "/v1/completions", body: `{"prompt":"Hi"` + fields + `}`,
		status: status, code: code, param: param}
}

func chatCase(name, body string, status int, code, param string) hostileCase {
	return hostileCase{name: "chat/" + name, path: "/v1/chat/completions", body: body, status: status, code: code, param: param}
}

const userHi = `[{"role":"user","content":"Hi"}]`

func hostileCases() []hostileCase {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	huge := `{"inputs":"` + strings.Repeat("once upon a time ", 10<<20/17) + `"}`
	ids600 := "[" + strings.TrimSuffix(strings.Repeat("5,", 600), ",") + "]"
	manyPrompts := "[" + strings.TrimSuffix(strings.Repeat(`"a",`, 257), ",") + "]"
	var stops11 []string
	for i := 0; i < 11; i++ {
		stops11 = append(stops11, strconv.Quote("s"+strconv.Itoa(i)))
	}
	bias11 := "{" + strings.TrimSuffix(strings.Repeat(`"1":1,`, 1), ",")
	for i := 2; i <= 11; i++ {
		bias11 += `,"` + strconv.Itoa(i) + `":1`
	}
	bias11 += "}"
	allowed300 := "[" + strings.TrimSuffix(strings.Repeat("3,", 300), ",") + "]"
	return []hostileCase{
		// Bodies that are not a JSON object.
		{name: "empty body", path: "/generate", body: "", status: 400, code: "invalid_json"},
		{name: "blank body", path: "/v1/completions", body: " \n\t ", status: 400, code: "invalid_json"},
		{name: "truncated json", path: "/generate", body: `{"inputs":"Hi"`, status: 400, code: "invalid_json"},
		{name: "array body", path: "/v1/chat/completions", body: `[1,2]`, status: 400, code: "invalid_json"},
		{name: "null body", path: "/generate", body: `null`, status: 400, code: "invalid_json"},
		{name: "string body", path: "/v1/completions", body: `"prompt"`, status: 400, code: "invalid_json"},
		{name: "trailing garbage", path: "/generate", body: `{"inputs":"Hi"} {}`, status: 400, code: "invalid_json"},
		{name: "NaN literal", path: "/generate", body: `{"inputs":"Hi","parameters":{"temperature":NaN}}`, status: 400, code: "invalid_json"},
		{name: "Infinity literal", path: "/v1/completions", body: `{"prompt":"Hi","temperature":Infinity}`, status: 400, code: "invalid_json"},
		{name: "invalid utf-8", path: "/generate", body: "{\"inputs\":\"Hi \xff\xfe there\"}", status: 400, code: "invalid_encoding"},
		{name: "invalid utf-8 in chat", path: "/v1/chat/completions", body: "{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}", status: 400, code: "invalid_encoding"},
		{name: "nesting 20000 deep", path: "/generate", body: `{"inputs":` + deep + `}`, status: 400, code: "invalid_json"},
		{name: "10 MB prompt", path: "/generate", body: huge, status: 400, code: "context_length_exceeded", param: "inputs"},

		// Native inputs.
		{name: "native/missing inputs", path: "/generate", body: `{"parameters":{}}`, status: 400, code: "missing_required_parameter", param: "inputs"},
		{name: "native/inputs number", path: "/generate", body: `{"inputs":42}`, status: 400, code: "invalid_type", param: "inputs"},
		{name: "native/inputs object", path: "/generate", body: `{"inputs":{"text":"Hi"}}`, status: 400, code: "invalid_type", param: "inputs"},
		{name: "native/negative id", path: "/generate", body: `{"inputs":[1,-3]}`, status: 400, code: "invalid_value", param: "inputs"},
		{name: "native/id past vocab", path: "/generate", body: `{"inputs":[1,512]}`, status: 400, code: "invalid_value", param: "inputs"},
		{name: "native/fractional id", path: "/generate", body: `{"inputs":[1,2.5]}`, status: 400, code: "invalid_type", param: "inputs[1]"},
		{name: "native/empty ids", path: "/generate", body: `{"inputs":[]}`, status: 400, code: "invalid_value"},
		{name: "native/empty text no bos", path: "/generate", body: `{"inputs":"","parameters":{"add_special_tokens":false}}`, status: 400, code: "invalid_value"},
		{name: "native/prompt too long in tokens", path: "/generate", body: `{"inputs":` + ids600 + `}`, status: 400, code: "context_length_exceeded"},
		{name: "native/parameters string", path: "/generate", body: `{"inputs":"Hi","parameters":"fast"}`, status: 400, code: "invalid_type", param: "parameters"},
		{name: "native/unknown top-level", path: "/generate", body: `{"inputs":"Hi","prompt":"x"}`, status: 400, code: "unknown_parameter", param: "prompt"},
		{name: "native/stream on generate_stream n=2", path: "/generate_stream", body: `{"inputs":"Hi","parameters":{"n":2,"best_of":2}}`, status: 400, code: "invalid_value"},
		{name: "native/multimodal images", path: "/generate", body: `{"inputs":"Hi","multimodal_params":{"images":[{"type":"url","data":"x"}]}}`, status: 400, code: "unsupported_parameter"},

		// Native parameters.
		nativeCase("unknown param", `"max_new_token":5`, 400, "unknown_parameter", "parameters.max_new_token"),
		nativeCase("temperature string", `"temperature":"hot"`, 400, "invalid_type", "parameters.temperature"),
		nativeCase("temperature negative", `"temperature":-0.5`, 400, "invalid_value", "parameters.temperature"),
		nativeCase("temperature 1e999", `"temperature":1e999`, 400, "invalid_value", "parameters.temperature"),
		nativeCase("top_p zero", `"top_p":0`, 400, "invalid_value", "parameters.top_p"),
		nativeCase("top_p above one", `"top_p":1.5`, 400, "invalid_value", "parameters.top_p"),
		nativeCase("top_k zero", `"top_k":0`, 400, "invalid_value", "parameters.top_k"),
		nativeCase("top_k -2", `"top_k":-2`, 400, "invalid_value", "parameters.top_k"),
		nativeCase("top_k 1e20", `"top_k":1e20`, 400, "invalid_value", "parameters.top_k"),
		nativeCase("repetition_penalty below 1", `"repetition_penalty":0.5`, 400, "invalid_value", "parameters.repetition_penalty"),
		nativeCase("presence_penalty negative", `"presence_penalty":-1`, 400, "invalid_value", "parameters.presence_penalty"),
		nativeCase("frequency_penalty huge", `"frequency_penalty":1e300`, 400, "invalid_value", "parameters.frequency_penalty"),
		nativeCase("max_new_tokens zero", `"max_new_tokens":0`, 400, "invalid_value", "parameters.max_new_tokens"),
		nativeCase("max_new_tokens negative", `"max_new_tokens":-5`, 400, "invalid_value", "parameters.max_new_tokens"),
		nativeCase("max_new_tokens 1e30", `"max_new_tokens":1e30`, 400, "invalid_value", "parameters.max_new_tokens"),
		nativeCase("max_new_tokens 23 digits", `"max_new_tokens":99999999999999999999999`, 400, "invalid_value", "parameters.max_new_tokens"),
		nativeCase("max_new_tokens string", `"max_new_tokens":"10"`, 400, "invalid_type", "parameters.max_new_tokens"),
		nativeCase("max_new_tokens fraction", `"max_new_tokens":2.5`, 400, "invalid_type", "parameters.max_new_tokens"),
		nativeCase("min above max", `"min_new_tokens":9,"max_new_tokens":3`, 400, "invalid_value", "parameters.min_new_tokens"),
		nativeCase("min_new_tokens zero", `"min_new_tokens":0`, 400, "invalid_value", "parameters.min_new_tokens"),
		nativeCase("n differs from best_of", `"n":2,"best_of":3`, 400, "invalid_value", "parameters.n"),
		nativeCase("best_of 9", `"best_of":9`, 400, "invalid_value", "parameters.best_of"),
		nativeCase("n zero", `"n":0`, 400, "invalid_value", "parameters.n"),
		nativeCase("seed -2", `"seed":-2`, 400, "invalid_value", "parameters.seed"),
		nativeCase("seed 2^64", `"seed":18446744073709551616`, 400, "invalid_value", "parameters.seed"),
		nativeCase("do_sample string", `"do_sample":"yes"`, 400, "invalid_type", "parameters.do_sample"),
		nativeCase("do_sample number", `"do_sample":1`, 400, "invalid_type", "parameters.do_sample"),
		nativeCase("stop number", `"stop_sequences":5`, 400, "invalid_type", "parameters.stop_sequences"),
		nativeCase("11 stops", `"stop_sequences":[`+strings.Join(stops11, ",")+`]`, 400, "invalid_value", "parameters.stop_sequences"),
		nativeCase("empty stop", `"stop_sequences":[""]`, 400, "invalid_value", "parameters.stop_sequences"),
		nativeCase("stop 300 bytes", `"stop_sequences":["`+strings.Repeat("x", 300)+`"]`, 400, "invalid_value", "parameters.stop_sequences"),
		nativeCase("stop ids negative", `"stop_sequences":[[1,-1]]`, 400, "invalid_value", "parameters.stop_sequences[0]"),
		nativeCase("stop object", `"stop_sequences":[{"a":1}]`, 400, "invalid_type", "parameters.stop_sequences[0]"),
		nativeCase("logit_bias bad key", `"logit_bias":{"abc":1}`, 400, "invalid_value", "parameters.logit_bias"),
		nativeCase("logit_bias 11 keys", `"logit_bias":`+bias11, 400, "invalid_value", "parameters.logit_bias"),
		nativeCase("decay penalty short", `"exponential_decay_length_penalty":[1]`, 400, "invalid_type", "parameters.exponential_decay_length_penalty"),
		nativeCase("decay factor below 1", `"exponential_decay_length_penalty":[1,0.5]`, 400, "invalid_value", "parameters.exponential_decay_length_penalty"),
		nativeCase("guided_json", `"guided_json":"{}"`, 400, "unsupported_parameter", "parameters.guided_json"),
		nativeCase("prompt_logprobs", `"prompt_logprobs":1`, 400, "unsupported_parameter", "parameters.prompt_logprobs"),
		nativeCase("allowed ids 300", `"allowed_token_ids":`+allowed300, 400, "invalid_value", "parameters.allowed_token_ids"),
		nativeCase("logprobs 21", `"logprobs":21`, 400, "invalid_value", "parameters.logprobs"),

		// Completions.
		{name: "completions/missing prompt", path: "/v1/completions", body: `{"model":"x"}`, status: 400, code: "missing_required_parameter", param: "prompt"},
		{name: "completions/empty list", path: "/v1/completions", body: `{"prompt":[]}`, status: 400, code: "invalid_value", param: "prompt"},
		{name: "completions/empty id list", path: "/v1/completions", body: `{"prompt":[[]]}`, status: 400, code: "invalid_value", param: "prompt[0]"},
		{name: "completions/mixed list", path: "/v1/completions", body: `{"prompt":["a",[1]]}`, status: 400, code: "invalid_type", param: "prompt"},
		{name: "completions/ids then string", path: "/v1/completions", body: `{"prompt":[1,"a"]}`, status: 400, code: "invalid_type", param: "prompt[1]"},
		{name: "completions/prompt bool", path: "/v1/completions", body: `{"prompt":true}`, status: 400, code: "invalid_type", param: "prompt"},
		{name: "completions/257 prompts", path: "/v1/completions", body: `{"prompt":` + manyPrompts + `}`, status: 400, code: "invalid_value", param: "prompt"},
		{name: "completions/stream batch", path: "/v1/completions", body: `{"prompt":["a","b"],"stream":true}`, status: 400, code: "invalid_value", param: "prompt"},
		complCase("temperature 3", `,"temperature":3`, 400, "invalid_value", "temperature"),
		complCase("n 9", `,"n":9`, 400, "invalid_value", "n"),
		complCase("best_of below n", `,"n":3,"best_of":2`, 400, "invalid_value", "best_of"),
		complCase("stream best_of", `,"n":1,"best_of":2,"stream":true`, 400, "invalid_value", "best_of"),
		complCase("logprobs 21", `,"logprobs":21`, 400, "invalid_value", "logprobs"),
		complCase("suffix", `,"suffix":"end"`, 400, "unsupported_parameter", "suffix"),
		complCase("logit_bias", `,"logit_bias":{"1":5}`, 400, "unsupported_parameter", "logit_bias"),
		complCase("unknown field", `,"foo":1`, 400, "unknown_parameter", "foo"),
		complCase("stream_options without stream", `,"stream_options":{"include_usage":true}`, 400, "invalid_value", "stream_options"),
		complCase("include_usage string", `,"stream":true,"stream_options":{"include_usage":"yes"}`, 400, "invalid_type", "stream_options.include_usage"),
		complCase("stop number", `,"stop":5`, 400, "invalid_type", "stop"),
		complCase("stop ids", `,"stop":[1]`, 400, "invalid_type", "stop[0]"),
		complCase("response_format json", `,"response_format":{"type":"json_object"}`, 400, "unsupported_parameter", "response_format"),
		complCase("max_tokens zero", `,"max_tokens":0`, 400, "invalid_value", "max_tokens"),
		complCase("max_tokens NaN-ish string", `,"max_tokens":"NaN"`, 400, "invalid_type", "max_tokens"),
		complCase("model number", `,"model":123`, 400, "invalid_type", "model"),
		complCase("seed float", `,"seed":1.5`, 400, "invalid_type", "seed"),
		complCase("min_tokens above max", `,"min_tokens":10,"max_tokens":2`, 400, "invalid_value", "min_tokens"),

		// Chat.
		chatCase("missing messages", `{"model":"x"}`, 400, "missing_required_parameter", "messages"),
		chatCase("empty messages", `{"messages":[]}`, 400, "invalid_value", "messages"),
		chatCase("messages string", `{"messages":"Hi"}`, 400, "invalid_type", "messages"),
		chatCase("message not object", `{"messages":["Hi"]}`, 400, "invalid_type", "messages[0]"),
		chatCase("missing role", `{"messages":[{"content":"Hi"}]}`, 400, "missing_required_parameter", "messages[0].role"),
		chatCase("unknown role", `{"messages":[{"role":"robot","content":"Hi"}]}`, 400, "invalid_value", "messages[0].role"),
		chatCase("content number", `{"messages":[{"role":"user","content":5}]}`, 400, "invalid_type", "messages[0].content"),
		chatCase("user content null", `{"messages":[{"role":"user","content":null}]}`, 400, "missing_required_parameter", "messages[0].content"),
		chatCase("image part", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x"}}]}]}`, 400, "unsupported_parameter", "messages[0].content[0]"),
		chatCase("unknown part", `{"messages":[{"role":"user","content":[{"type":"hologram"}]}]}`, 400, "invalid_value", "messages[0].content[0].type"),
		chatCase("part without text", `{"messages":[{"role":"user","content":[{"type":"text"}]}]}`, 400, "missing_required_parameter", "messages[0].content[0].text"),
		chatCase("message unknown field", `{"messages":[{"role":"user","content":"Hi","mood":"sad"}]}`, 400, "unknown_parameter", "messages[0].mood"),
		chatCase("tools", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"f"}}]}`, 400, "unsupported_parameter", "tools"),
		chatCase("tool_choice required", `{"messages":`+userHi+`,"tool_choice":"required"}`, 400, "unsupported_parameter", "tool_choice"),
		chatCase("top_logprobs alone", `{"messages":`+userHi+`,"top_logprobs":3}`, 400, "invalid_value", "top_logprobs"),
		chatCase("logprobs string", `{"messages":`+userHi+`,"logprobs":"true"}`, 400, "invalid_type", "logprobs"),
		chatCase("kwargs sets messages", `{"messages":`+userHi+`,"chat_template_kwargs":{"messages":[]}}`, 400, "invalid_value", "chat_template_kwargs"),
		chatCase("kwargs not object", `{"messages":`+userHi+`,"chat_template_kwargs":[1]}`, 400, "invalid_type", "chat_template_kwargs"),
		chatCase("n 100", `{"messages":`+userHi+`,"n":100}`, 400, "invalid_value", "n"),
		chatCase("audio output", `{"messages":`+userHi+`,"audio":{"voice":"x"}}`, 400, "unsupported_parameter", "audio"),
		chatCase("negative max_completion_tokens", `{"messages":`+userHi+`,"max_completion_tokens":-1}`, 400, "invalid_value", "max_completion_tokens"),
		chatCase("stop list of 11", `{"messages":`+userHi+`,"stop":[`+strings.Join(stops11, ",")+`]}`, 400, "invalid_value", "stop"),

		// Routes and methods.
		{name: "route/GET generate", method: http.MethodGet, path: "/generate", status: 405, code: "method_not_allowed"},
		{name: "route/unknown path", path: "/v2/generate", body: `{}`, status: 404, code: "not_found"},
		{name: "route/trailing slash", path: "/generate/", body: `{"inputs":"Hi"}`, status: 404, code: "not_found"},
		{name: "route/DELETE models", method: http.MethodDelete, path: "/v1/models", status: 405, code: "method_not_allowed"},
		{name: "route/PUT health", method: http.MethodPut, path: "/health", status: 405, code: "method_not_allowed"},
		{name: "route/GET chat", method: http.MethodGet, path: "/v1/chat/completions", status: 405, code: "method_not_allowed"},
		{name: "tokens/missing text", path: "/tokens", body: `{"parameters":{}}`, status: 400, code: "missing_required_parameter", param: "text"},
		{name: "tokens/text number", path: "/tokens", body: `{"text":1}`, status: 400, code: "invalid_type", param: "text"},
	}
}

// TestHostileRequests sends malformed and hostile requests: each gets its
// status and an OpenAI-style error body naming the problem, never a 5xx,
// and the server keeps serving.
func TestHostileRequests(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	cases := hostileCases()
	if len(cases) < 50 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			r := ts.do(t, method, tc.path, []byte(tc.body))
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			e := decode[errResp](t, r.body)
			if e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == nil {
				t.Fatalf("error body lacks message/type/code: %s", r.body)
			}
			if tc.code != "" && *e.Error.Code != tc.code {
				t.Errorf("code %q, want %q: %s", *e.Error.Code, tc.code, e.Error.Message)
			}
			if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
				t.Errorf("param %v, want %q: %s", e.Error.Param, tc.param, e.Error.Message)
			}
			if r.status == 405 && r.header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
			if r.header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}
	if n := len(ts.be.Submitted()); n != 0 {
		t.Errorf("%d hostile requests reached the backend", n)
	}
	if r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":3}}`); r.status != 200 {
		t.Fatalf("server stopped serving after the hostile requests: %d %s", r.status, r.body)
	}
}

// TestOversizedBodies: bodies past the limit get a clean 413 (the client
// reads the answer, the connection is not reset mid-upload), with and
// without Content-Length.
func TestOversizedBodies(t *testing.T) {
	ts := startServer(t, apiserver.Options{MaxBodyBytes: 1 << 20}, fakebackend.Options{})
	big := append([]byte(`{"inputs":"`), bytes.Repeat([]byte("a"), 3<<20)...)
	big = append(big, `"}`...)
	for name, chunked := range map[string]bool{"content-length": false, "chunked": true} {
		t.Run(name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(big)
			if chunked {
				body = io.MultiReader(bytes.NewReader(big)) // hides the length: chunked encoding
			}
			req, _ := http.NewRequest(http.MethodPost, ts.url+"/generate", body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("dropped connection instead of a 413: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 413 || !strings.Contains(string(b), "request_too_large") {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
		})
	}
	if r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2}}`); r.status != 200 {
		t.Fatalf("not serving after 413s: %d %s", r.status, r.body)
	}
}
