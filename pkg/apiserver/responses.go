package apiserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

// The OpenAI Responses API (POST /v1/responses), text in and text out:
// `input` as a string or a list of messages, `instructions` as the system
// turn, through the chat template; non-streamed, or streamed as OpenAI's
// typed events (response.created … response.output_text.delta …
// response.completed). Nothing is stored, so `store: true` and
// `previous_response_id` are refused, as are tools and structured output.

var responsesFields = setOf("model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "stream",
	"store", "previous_response_id", "tools", "tool_choice", "text", "reasoning", "metadata", "user",
	"parallel_tool_calls", "truncation", "include", "background", "service_tier", "prompt_cache_key",
	"safety_identifier", "top_logprobs", "stream_options",
	"top_k", "repetition_penalty", "seed", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens")

type responsesRequest struct {
	openAIRequest
	prompt       []int32
	instructions *string
	maxOutput    *int64
	temperature  float64 // as asked (normalize rewrites greedy ones)
	topP         float64
	metadata     json.RawMessage
	user         *string
}

func (s *Server) parseResponses(body []byte, path string) (*responsesRequest, *apiError) {
	o, e := parseBody(body)
	if e != nil {
		return nil, e
	}
	s.ignoreUnknown(o, responsesFields, path)
	req := &responsesRequest{}
	req.params = s.defaultParams(true)
	p := &req.params
	if v := o.str("model"); v != nil {
		req.model = *v
	}
	s.checkModelField(o)
	samplingFields(o, p, true)
	if v := o.float("temperature"); v != nil && *v > 2 {
		o.fail(invalidValue("temperature", "'temperature' must be in [0, 2], got %g", *v))
	}
	if v := o.boolean("stream"); v != nil {
		req.stream = *v
	}
	req.maxName = "max_output_tokens"
	if v := o.intIn("max_output_tokens", 1, 1<<31-1); v != nil {
		req.maxOutput = v
		p.MaxNewTokens = int(*v)
	}
	for _, k := range []string{"store", "background"} {
		if v := o.boolean(k); v != nil && *v {
			o.fail(unsupported(k, "'%s' is not supported: this server keeps no responses", k))
		}
	}
	if v := o.str("previous_response_id"); v != nil && *v != "" {
		o.fail(unsupported("previous_response_id", "'previous_response_id' is not supported: this server keeps no responses (send the whole conversation as input)"))
	}
	if tools := o.array("tools"); len(tools) > 0 {
		o.fail(unsupported("tools", "tools are not supported by this server"))
	}
	if tc, ok := o.raw("tool_choice"); ok && !isOff(tc, "") && string(tc) != `"auto"` && string(tc) != `"none"` {
		o.fail(unsupported("tool_choice", "'tool_choice' must be \"auto\" or \"none\": tools are not supported by this server"))
	}
	if t := o.child("text"); t != nil {
		if f := t.child("format"); f != nil {
			if ty := f.str("type"); f.err != nil || (ty != nil && *ty != "text") {
				o.fail(unsupported("text.format", "only text.format {\"type\": \"text\"} is supported (no structured output)"))
			}
		}
		if t.err != nil {
			o.fail(t.err)
		}
	}
	if v := o.str("truncation"); v != nil && *v != "disabled" {
		o.fail(unsupported("truncation", "only truncation \"disabled\" is supported"))
	}
	if inc := o.array("include"); len(inc) > 0 {
		o.fail(unsupported("include", "'include' is not supported by this server"))
	}
	if v := o.integer("top_logprobs"); v != nil && *v != 0 {
		o.fail(unsupported("top_logprobs", "'top_logprobs' is not supported on /v1/responses (use /v1/chat/completions)"))
	}
	extra := s.templateExtra()
	if rs := o.child("reasoning"); rs != nil {
		if v := rs.str("effort"); v != nil {
			extra.Set("reasoning_effort", *v)
		}
	}
	req.instructions = o.str("instructions")
	req.user = o.str("user")
	if m, ok := o.raw("metadata"); ok {
		req.metadata = m
	}
	o.boolean("parallel_tool_calls")
	if o.err != nil {
		return nil, o.err
	}
	msgs, e := responsesInput(o, req.instructions)
	if e != nil {
		return nil, e
	}
	req.temperature, req.topP = shortest64(p.Temperature), shortest64(p.TopP)
	normalize(p)
	if s.chat == nil {
		return nil, badRequest(codeNoChatTemplate, "input", "%v", s.chatErr)
	}
	text, err := s.chat.RenderMessages(msgs, true, extra)
	if err != nil {
		return nil, invalidValue("input", "the chat template could not render this input: %v", err)
	}
	if e := s.checkPromptChars(text, "input"); e != nil {
		return nil, e
	}
	req.prompt = s.tok.Encode(text, false)
	if e := s.applyLengthRule(len(req.prompt), p, req.maxName, "input"); e != nil {
		return nil, e
	}
	return req, nil
}

// responsesInput turns input (a string, or a list of message items with
// string or input_text/output_text content) into chat messages.
func responsesInput(o *object, instructions *string) ([]chattmpl.Message, *apiError) {
	var msgs []chattmpl.Message
	if instructions != nil && *instructions != "" {
		msgs = append(msgs, chattmpl.Message{Role: "system", Content: chattmpl.TextContent(*instructions)})
	}
	raw, ok := o.raw("input")
	if !ok {
		return nil, badRequest(codeMissing, "input", "'input' is required: a string or a list of messages")
	}
	if jsonKind(raw) == "a string" {
		text, e := decodeString(raw, "input")
		if e != nil {
			return nil, e
		}
		return append(msgs, chattmpl.Message{Role: "user", Content: chattmpl.TextContent(text)}), nil
	}
	items, e := decodeArray(raw, "input")
	if e != nil {
		return nil, badRequest(codeInvalidType, "input", "'input' must be a string or a list of messages, got %s", jsonKind(raw))
	}
	if len(items) == 0 {
		return nil, invalidValue("input", "'input' must hold at least one message")
	}
	for i, it := range items {
		name := "input[" + strconv.Itoa(i) + "]"
		io, e := parseObject(it, name)
		if e != nil {
			return nil, e
		}
		if ty := io.str("type"); ty != nil && *ty != "message" {
			return nil, unsupported(name+".type", "input items of type %q are not supported (only messages)", *ty)
		}
		role := io.str("role")
		if io.err != nil {
			return nil, io.err
		}
		if role == nil || !knownRoles[*role] || *role == "tool" {
			return nil, invalidValue(name+".role", "'%s.role' must be user, system, developer or assistant", name)
		}
		content, ok := io.raw("content")
		if !ok {
			return nil, badRequest(codeMissing, name+".content", "'%s.content' is required", name)
		}
		text, e := responsesContent(content, name+".content")
		if e != nil {
			return nil, e
		}
		msgs = append(msgs, chattmpl.Message{Role: *role, Content: chattmpl.TextContent(text)})
	}
	return msgs, nil
}

// responsesContent reads a string or a list of text parts, joined as chat
// content parts are.
func responsesContent(raw json.RawMessage, name string) (string, *apiError) {
	if jsonKind(raw) == "a string" {
		return decodeString(raw, name)
	}
	parts, e := decodeArray(raw, name)
	if e != nil {
		return "", badRequest(codeInvalidType, name, "'%s' must be a string or a list of content parts", name)
	}
	text := ""
	for i, p := range parts {
		pname := name + "[" + strconv.Itoa(i) + "]"
		po, e := parseObject(p, pname)
		if e != nil {
			return "", e
		}
		ty, t := po.str("type"), po.str("text")
		if po.err != nil {
			return "", po.err
		}
		if ty == nil || (*ty != "input_text" && *ty != "output_text" && *ty != "text") {
			return "", unsupported(pname+".type", "only text content parts (input_text, output_text) are supported")
		}
		if t == nil {
			return "", badRequest(codeMissing, pname+".text", "'%s.text' is required", pname)
		}
		if i > 0 {
			text += "\n"
		}
		text += *t
	}
	return text, nil
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	req, e := s.parseResponses(body, r.URL.Path)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	g := &Group{RequestID: requestIDFrom(r.Context()), Prompt: req.prompt, N: 1, Params: req.params, Arrival: time.Now()}
	rn, e := s.submit(r.Context(), r.URL.Path, g)
	if rn == nil {
		if e != nil {
			s.writeError(w, r, e)
		}
		return
	}
	defer rn.close()
	if req.stream {
		s.responsesStream(w, r, req, rn)
		return
	}
	seqs, err := s.collect(r.Context(), rn, &req.openAIRequest)
	if err != nil {
		return // client gone
	}
	if seqs[0].reason == FinishError {
		s.writeError(w, r, generationFailed(seqs[0].err))
		return
	}
	writeJSON(w, http.StatusOK, s.responseObject(r, req, rn, seqs[0].text, seqs[0].reason, true))
}
