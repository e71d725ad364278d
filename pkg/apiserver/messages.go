package apiserver

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

// maxMessages bounds one conversation (the body limit bounds the rest).
const maxMessages = 4096

var messageFields = setOf("role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content",
	"reasoning", "refusal")

var knownRoles = setOf("system", "developer", "user", "assistant", "tool")

// parseMessages reads OpenAI chat messages into what chat templates expect.
// Text-only content parts are joined into a string (vLLM's default
// "string" content format), so templates written for string content work.
func parseMessages(o *object) ([]chattmpl.Message, *apiError) {
	raw, ok := o.raw("messages")
	if !ok {
		if o.err != nil {
			return nil, o.err
		}
		return nil, badRequest(codeMissing, "messages", "'messages' is required: a non-empty array of messages")
	}
	elems, e := decodeArray(raw, "messages")
	if e != nil {
		return nil, e
	}
	switch {
	case len(elems) == 0:
		return nil, invalidValue("messages", "'messages' must hold at least one message")
	case len(elems) > maxMessages:
		return nil, invalidValue("messages", "at most %d messages, got %d", maxMessages, len(elems))
	}
	out := make([]chattmpl.Message, len(elems))
	for i, el := range elems {
		name := "messages[" + strconv.Itoa(i) + "]"
		m, e := parseMessage(el, name)
		if e != nil {
			return nil, e
		}
		out[i] = m
	}
	return out, nil
}

func parseMessage(raw json.RawMessage, name string) (chattmpl.Message, *apiError) {
	var m chattmpl.Message
	mo, e := parseObject(raw, name)
	if e != nil {
		return m, e
	}
	mo.rejectUnknown(messageFields)
	role := mo.str("role")
	if mo.err != nil {
		return m, mo.err
	}
	if role == nil {
		return m, badRequest(codeMissing, name+".role", "'%s.role' is required", name)
	}
	if !knownRoles[*role] {
		return m, invalidValue(name+".role", "'%s.role' must be one of system, developer, user, assistant, tool; got %q", name, *role)
	}
	m.Role = *role
	if v := mo.str("name"); v != nil {
		m.Name = *v
	}
	if v := mo.str("tool_call_id"); v != nil {
		m.ToolCallID = *v
	}
	if v := mo.str("reasoning_content"); v != nil {
		m.ReasoningContent = v
	} else if v := mo.str("reasoning"); v != nil {
		m.ReasoningContent = v
	}
	mo.str("refusal")
	if calls := mo.array("tool_calls"); calls != nil {
		m.ToolCalls = make([]chattmpl.ToolCall, 0, len(calls))
		for j, c := range calls {
			tc, e := parseToolCall(c, name+".tool_calls["+strconv.Itoa(j)+"]")
			if e != nil {
				return m, e
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		}
	}
	if mo.err != nil {
		return m, mo.err
	}
	content, ok := mo.raw("content")
	switch {
	case !ok && m.Role == "assistant":
		m.Content = chattmpl.Content{Null: true}
	case !ok:
		return m, badRequest(codeMissing, name+".content", "'%s.content' is required for role %q", name, m.Role)
	case jsonKind(content) == "a string":
		s, e := decodeString(content, name+".content")
		if e != nil {
			return m, e
		}
		m.Content = chattmpl.TextContent(s)
	case jsonKind(content) == "an array":
		text, e := parseContentParts(content, name+".content")
		if e != nil {
			return m, e
		}
		m.Content = chattmpl.TextContent(text)
	default:
		return m, badRequest(codeInvalidType, name+".content", "'%s.content' must be a string or an array of content parts, got %s", name, jsonKind(content))
	}
	return m, nil
}

// parseContentParts joins text parts; other kinds need a multimodal model.
func parseContentParts(raw json.RawMessage, name string) (string, *apiError) {
	parts, e := decodeArray(raw, name)
	if e != nil {
		return "", e
	}
	texts := make([]string, 0, len(parts))
	for i, p := range parts {
		pname := name + "[" + strconv.Itoa(i) + "]"
		po, e := parseObject(p, pname)
		if e != nil {
			return "", e
		}
		t := po.str("type")
		if po.err != nil {
			return "", po.err
		}
		if t == nil {
			return "", badRequest(codeMissing, pname+".type", "'%s.type' is required", pname)
		}
		switch *t {
		case "text":
			po.rejectUnknown(setOf("type", "text"))
			txt := po.str("text")
			if po.err != nil {
				return "", po.err
			}
			if txt == nil {
				return "", badRequest(codeMissing, pname+".text", "'%s.text' is required", pname)
			}
			texts = append(texts, *txt)
		case "image_url", "input_audio", "audio_url", "video_url", "file", "image", "input_image":
			return "", unsupported(pname, "content parts of type %q need a multimodal model; this server serves text only", *t)
		default:
			return "", invalidValue(pname+".type", "unknown content part type %q", *t)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// parseToolCall reads an assistant's earlier tool call (history only: this
// server does not offer tools, but a conversation may replay one).
func parseToolCall(raw json.RawMessage, name string) (chattmpl.ToolCall, *apiError) {
	var tc chattmpl.ToolCall
	o, e := parseObject(raw, name)
	if e != nil {
		return tc, e
	}
	o.rejectUnknown(setOf("id", "type", "function", "index"))
	if v := o.str("id"); v != nil {
		tc.ID = *v
	}
	if v := o.str("type"); v != nil {
		tc.Type = *v
	}
	o.integer("index")
	fn := o.child("function")
	if o.err != nil {
		return tc, o.err
	}
	if fn == nil {
		return tc, badRequest(codeMissing, name+".function", "'%s.function' is required", name)
	}
	fn.rejectUnknown(setOf("name", "arguments"))
	if v := fn.str("name"); v != nil {
		tc.Function.Name = *v
	}
	if args, ok := fn.raw("arguments"); ok {
		tc.Function.Arguments = args
	}
	if fn.err != nil {
		return tc, fn.err
	}
	return tc, nil
}
