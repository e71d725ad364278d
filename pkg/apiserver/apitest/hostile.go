// Package apitest holds what tests of the HTTP API share across packages:
// the table of hostile requests that pkg/apiserver's tests send to a server
// over the fake backend and the end-to-end tests send to the real one.
package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// HostileCase is one malformed or hostile request and the answer it must
// get: Status, and an OpenAI-style error body whose code and param are
// Code and Param ("" = not checked).
type HostileCase struct {
	Name, Method, Path, Body string
	Status                   int
	Code, Param              string
}

// nativeCase is a /generate request with the given parameters.
func nativeCase(name, params string, status int, code, param string) HostileCase {
	return HostileCase{Name: "native/" + name, Path: "/generate", Body: `{"inputs":"Hi","parameters":{` + params + `}}`,
		Status: status, Code: code, Param: param}
}

// complCase is a /v1/completions request with extra fields.
func complCase(name, fields string, status int, code, param string) HostileCase {
	return HostileCase{Name: "completions/" + name, Path: "/v1/completions", Body: `{"prompt":"Hi"` + fields + `}`,
		Status: status, Code: code, Param: param}
}

// chatCase is a /v1/chat/completions request.
func chatCase(name, body string, status int, code, param string) HostileCase {
	return HostileCase{Name: "chat/" + name, Path: "/v1/chat/completions", Body: body, Status: status, Code: code, Param: param}
}

// userHi is a valid messages list.
const userHi = `[{"role":"user","content":"Hi"}]`

// HostileCases are more than a hundred requests every server must refuse
// cleanly: bodies that are not JSON objects, invalid UTF-8, huge numbers,
// NaN/Infinity, out-of-range and mistyped parameters, unknown fields, empty
// prompts and messages, a 10 MB prompt, unknown routes and methods. They
// expect a model with stories260K's 512-token vocabulary and a
// max_req_total_len below 600 (its 512-token context). The chat cases are
// refused while parsing, so a server without a chat template answers them
// the same way.
func HostileCases() []HostileCase {
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
	return []HostileCase{
		// Bodies that are not a JSON object.
		{Name: "empty body", Path: "/generate", Body: "", Status: 400, Code: "invalid_json"},
		{Name: "blank body", Path: "/v1/completions", Body: " \n\t ", Status: 400, Code: "invalid_json"},
		{Name: "truncated json", Path: "/generate", Body: `{"inputs":"Hi"`, Status: 400, Code: "invalid_json"},
		{Name: "array body", Path: "/v1/chat/completions", Body: `[1,2]`, Status: 400, Code: "invalid_json"},
		{Name: "null body", Path: "/generate", Body: `null`, Status: 400, Code: "invalid_json"},
		{Name: "string body", Path: "/v1/completions", Body: `"prompt"`, Status: 400, Code: "invalid_json"},
		{Name: "trailing garbage", Path: "/generate", Body: `{"inputs":"Hi"} {}`, Status: 400, Code: "invalid_json"},
		{Name: "NaN literal", Path: "/generate", Body: `{"inputs":"Hi","parameters":{"temperature":NaN}}`, Status: 400, Code: "invalid_json"},
		{Name: "Infinity literal", Path: "/v1/completions", Body: `{"prompt":"Hi","temperature":Infinity}`, Status: 400, Code: "invalid_json"},
		{Name: "invalid utf-8", Path: "/generate", Body: "{\"inputs\":\"Hi \xff\xfe there\"}", Status: 400, Code: "invalid_encoding"},
		{Name: "invalid utf-8 in chat", Path: "/v1/chat/completions", Body: "{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}", Status: 400, Code: "invalid_encoding"},
		{Name: "nesting 20000 deep", Path: "/generate", Body: `{"inputs":` + deep + `}`, Status: 400, Code: "invalid_json"},
		{Name: "10 MB prompt", Path: "/generate", Body: huge, Status: 400, Code: "context_length_exceeded", Param: "inputs"},

		// Native inputs.
		{Name: "native/missing inputs", Path: "/generate", Body: `{"parameters":{}}`, Status: 400, Code: "missing_required_parameter", Param: "inputs"},
		{Name: "native/inputs number", Path: "/generate", Body: `{"inputs":42}`, Status: 400, Code: "invalid_type", Param: "inputs"},
		{Name: "native/inputs object", Path: "/generate", Body: `{"inputs":{"text":"Hi"}}`, Status: 400, Code: "invalid_type", Param: "inputs"},
		{Name: "native/negative id", Path: "/generate", Body: `{"inputs":[1,-3]}`, Status: 400, Code: "invalid_value", Param: "inputs"},
		{Name: "native/id past vocab", Path: "/generate", Body: `{"inputs":[1,512]}`, Status: 400, Code: "invalid_value", Param: "inputs"},
		{Name: "native/fractional id", Path: "/generate", Body: `{"inputs":[1,2.5]}`, Status: 400, Code: "invalid_type", Param: "inputs[1]"},
		{Name: "native/empty ids", Path: "/generate", Body: `{"inputs":[]}`, Status: 400, Code: "invalid_value"},
		{Name: "native/empty text no bos", Path: "/generate", Body: `{"inputs":"","parameters":{"add_special_tokens":false}}`, Status: 400, Code: "invalid_value"},
		{Name: "native/prompt too long in tokens", Path: "/generate", Body: `{"inputs":` + ids600 + `}`, Status: 400, Code: "context_length_exceeded"},
		{Name: "native/parameters string", Path: "/generate", Body: `{"inputs":"Hi","parameters":"fast"}`, Status: 400, Code: "invalid_type", Param: "parameters"},
		{Name: "native/unknown top-level", Path: "/generate", Body: `{"inputs":"Hi","prompt":"x"}`, Status: 400, Code: "unknown_parameter", Param: "prompt"},
		{Name: "native/stream on generate_stream n=2", Path: "/generate_stream", Body: `{"inputs":"Hi","parameters":{"n":2,"best_of":2}}`, Status: 400, Code: "invalid_value"},
		{Name: "native/multimodal images", Path: "/generate", Body: `{"inputs":"Hi","multimodal_params":{"images":[{"type":"url","data":"x"}]}}`, Status: 400, Code: "unsupported_parameter"},

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
		nativeCase("guided_json not a schema", `"guided_json":"nope"`, 400, "invalid_json", "parameters.guided_json"),
		nativeCase("prompt_logprobs", `"prompt_logprobs":1`, 400, "unsupported_parameter", "parameters.prompt_logprobs"),
		nativeCase("allowed ids 300", `"allowed_token_ids":`+allowed300, 400, "invalid_value", "parameters.allowed_token_ids"),
		nativeCase("logprobs 21", `"logprobs":21`, 400, "invalid_value", "parameters.logprobs"),

		// Completions.
		{Name: "completions/missing prompt", Path: "/v1/completions", Body: `{"model":"x"}`, Status: 400, Code: "missing_required_parameter", Param: "prompt"},
		{Name: "completions/empty list", Path: "/v1/completions", Body: `{"prompt":[]}`, Status: 400, Code: "invalid_value", Param: "prompt"},
		{Name: "completions/empty id list", Path: "/v1/completions", Body: `{"prompt":[[]]}`, Status: 400, Code: "invalid_value", Param: "prompt[0]"},
		{Name: "completions/mixed list", Path: "/v1/completions", Body: `{"prompt":["a",[1]]}`, Status: 400, Code: "invalid_type", Param: "prompt"},
		{Name: "completions/ids then string", Path: "/v1/completions", Body: `{"prompt":[1,"a"]}`, Status: 400, Code: "invalid_type", Param: "prompt[1]"},
		{Name: "completions/prompt bool", Path: "/v1/completions", Body: `{"prompt":true}`, Status: 400, Code: "invalid_type", Param: "prompt"},
		{Name: "completions/257 prompts", Path: "/v1/completions", Body: `{"prompt":` + manyPrompts + `}`, Status: 400, Code: "invalid_value", Param: "prompt"},
		{Name: "completions/stream batch", Path: "/v1/completions", Body: `{"prompt":["a","b"],"stream":true}`, Status: 400, Code: "invalid_value", Param: "prompt"},
		complCase("temperature 3", `,"temperature":3`, 400, "invalid_value", "temperature"),
		complCase("n 9", `,"n":9`, 400, "invalid_value", "n"),
		complCase("best_of below n", `,"n":3,"best_of":2`, 400, "invalid_value", "best_of"),
		complCase("stream best_of", `,"n":1,"best_of":2,"stream":true`, 400, "invalid_value", "best_of"),
		complCase("logprobs 21", `,"logprobs":21`, 400, "invalid_value", "logprobs"),
		complCase("suffix", `,"suffix":"end"`, 400, "unsupported_parameter", "suffix"),
		complCase("logit_bias 101", `,"logit_bias":{"1":101}`, 400, "invalid_value", "logit_bias"),
		complCase("logit_bias -100.5", `,"logit_bias":{"1":-100.5}`, 400, "invalid_value", "logit_bias"),
		complCase("logit_bias id past vocab", `,"logit_bias":{"512":1}`, 400, "invalid_value", "logit_bias"),
		complCase("logit_bias negative id", `,"logit_bias":{"-1":1}`, 400, "invalid_value", "logit_bias"),
		complCase("logit_bias word key", `,"logit_bias":{"hello":1}`, 400, "invalid_value", "logit_bias"),
		complCase("logit_bias string value", `,"logit_bias":{"1":"5"}`, 400, "invalid_type", "logit_bias"),
		complCase("logit_bias list", `,"logit_bias":[1]`, 400, "invalid_type", "logit_bias"),
		complCase("vLLM beam search", `,"use_beam_search":true`, 400, "unsupported_parameter", "use_beam_search"),
		complCase("guided_regex with min_tokens", `,"guided_regex":"a+","min_tokens":5`, 400, "invalid_value", "min_tokens"),
		complCase("stream_options without stream", `,"stream_options":{"include_usage":true}`, 400, "invalid_value", "stream_options"),
		complCase("include_usage string", `,"stream":true,"stream_options":{"include_usage":"yes"}`, 400, "invalid_type", "stream_options.include_usage"),
		complCase("stop number", `,"stop":5`, 400, "invalid_type", "stop"),
		complCase("stop ids", `,"stop":[1]`, 400, "invalid_type", "stop[0]"),
		complCase("constraint with ignore_eos", `,"guided_regex":"a+","ignore_eos":true`, 400, "invalid_value", "ignore_eos"),
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
		chatCase("vLLM length_penalty", `{"messages":`+userHi+`,"length_penalty":0.5}`, 400, "unsupported_parameter", "length_penalty"),
		chatCase("message unknown field", `{"messages":[{"role":"user","content":"Hi","mood":"sad"}]}`, 400, "unknown_parameter", "messages[0].mood"),
		chatCase("functions (deprecated)", `{"messages":`+userHi+`,"functions":[{"name":"f"}]}`, 400, "unsupported_parameter", "functions"),
		chatCase("tool_choice required without tools", `{"messages":`+userHi+`,"tool_choice":"required"}`, 400, "invalid_value", "tool_choice"),
		chatCase("tool_choice names a missing tool", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, 400, "invalid_value", "tool_choice"),
		chatCase("tool_choice bad string", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"always"}`, 400, "invalid_value", "tool_choice"),
		chatCase("tool name with spaces", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"get weather"}}]}`, 400, "invalid_value", "tools[0].function.name"),
		chatCase("tool without function", `{"messages":`+userHi+`,"tools":[{"type":"function"}]}`, 400, "missing_required_parameter", "tools[0].function"),
		chatCase("tool parameters not object", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, 400, "invalid_type", "tools[0].function.parameters"),
		chatCase("tool type retrieval", `{"messages":`+userHi+`,"tools":[{"type":"retrieval"}]}`, 400, "invalid_value", "tools[0].type"),
		chatCase("duplicate tools", `{"messages":`+userHi+`,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, 400, "invalid_value", "tools"),
		chatCase("response_format unknown type", `{"messages":`+userHi+`,"response_format":{"type":"yaml"}}`, 400, "invalid_value", "response_format.type"),
		chatCase("json_schema without name", `{"messages":`+userHi+`,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, 400, "missing_required_parameter", "response_format.json_schema.name"),
		chatCase("json_schema schema string", `{"messages":`+userHi+`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"{}"}}}`, 400, "invalid_type", "response_format.json_schema.schema"),
		chatCase("two constraints", `{"messages":`+userHi+`,"response_format":{"type":"json_object"},"guided_regex":"a+"}`, 400, "invalid_value", "guided_regex"),
		chatCase("guided_json not a schema", `{"messages":`+userHi+`,"guided_json":"nope"}`, 400, "invalid_json", "guided_json"),
		chatCase("guided_choice empty", `{"messages":`+userHi+`,"guided_choice":[]}`, 400, "invalid_value", "guided_choice"),
		chatCase("guided_whitespace_pattern", `{"messages":`+userHi+`,"guided_whitespace_pattern":" *"}`, 400, "unsupported_parameter", "guided_whitespace_pattern"),
		chatCase("top_logprobs alone", `{"messages":`+userHi+`,"top_logprobs":3}`, 400, "invalid_value", "top_logprobs"),
		chatCase("logprobs string", `{"messages":`+userHi+`,"logprobs":"true"}`, 400, "invalid_type", "logprobs"),
		chatCase("kwargs sets messages", `{"messages":`+userHi+`,"chat_template_kwargs":{"messages":[]}}`, 400, "invalid_value", "chat_template_kwargs"),
		chatCase("kwargs not object", `{"messages":`+userHi+`,"chat_template_kwargs":[1]}`, 400, "invalid_type", "chat_template_kwargs"),
		chatCase("n 100", `{"messages":`+userHi+`,"n":100}`, 400, "invalid_value", "n"),
		chatCase("audio output", `{"messages":`+userHi+`,"audio":{"voice":"x"}}`, 400, "unsupported_parameter", "audio"),
		chatCase("negative max_completion_tokens", `{"messages":`+userHi+`,"max_completion_tokens":-1}`, 400, "invalid_value", "max_completion_tokens"),
		chatCase("stop list of 11", `{"messages":`+userHi+`,"stop":[`+strings.Join(stops11, ",")+`]}`, 400, "invalid_value", "stop"),

		// Routes and methods.
		{Name: "route/GET generate", Method: http.MethodGet, Path: "/generate", Status: 405, Code: "method_not_allowed"},
		{Name: "route/unknown path", Path: "/v2/generate", Body: `{}`, Status: 404, Code: "not_found"},
		{Name: "route/trailing slash", Path: "/generate/", Body: `{"inputs":"Hi"}`, Status: 404, Code: "not_found"},
		{Name: "route/DELETE models", Method: http.MethodDelete, Path: "/v1/models", Status: 405, Code: "method_not_allowed"},
		{Name: "route/PUT health", Method: http.MethodPut, Path: "/health", Status: 405, Code: "method_not_allowed"},
		{Name: "route/GET chat", Method: http.MethodGet, Path: "/v1/chat/completions", Status: 405, Code: "method_not_allowed"},
		{Name: "tokens/missing text", Path: "/tokens", Body: `{"parameters":{}}`, Status: 400, Code: "missing_required_parameter", Param: "text"},
		{Name: "tokens/text number", Path: "/tokens", Body: `{"text":1}`, Status: 400, Code: "invalid_type", Param: "text"},
	}
}

// ErrorBody is the OpenAI-style error answer.
type ErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// Check compares an answer with what c expects: the status, an error body
// with a message, a type and a code, and the expected code and param.
func (c HostileCase) Check(status int, body []byte) error {
	if status != c.Status {
		return fmt.Errorf("status %d, want %d: %.300s", status, c.Status, body)
	}
	var e ErrorBody
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("error body is not JSON (%v): %.300s", err, body)
	}
	if e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == nil {
		return fmt.Errorf("error body lacks message/type/code: %.300s", body)
	}
	if c.Code != "" && *e.Error.Code != c.Code {
		return fmt.Errorf("code %q, want %q: %s", *e.Error.Code, c.Code, e.Error.Message)
	}
	if c.Param != "" && (e.Error.Param == nil || *e.Error.Param != c.Param) {
		got := "null"
		if e.Error.Param != nil {
			got = strconv.Quote(*e.Error.Param)
		}
		return fmt.Errorf("param %s, want %q: %s", got, c.Param, e.Error.Message)
	}
	return nil
}

// HTTPMethod is the case's method, POST by default.
func (c HostileCase) HTTPMethod() string {
	if c.Method == "" {
		return http.MethodPost
	}
	return c.Method
}
