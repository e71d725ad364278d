package apiserver

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/chatout"
	"github.com/lightllm-go/lightllm/pkg/chattmpl"
	"github.com/lightllm-go/lightllm/pkg/grammar"
)

// maxTools bounds the tools of one request (OpenAI allows 128).
const maxTools = 128

// toolNameRE is OpenAI's rule for function names.
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// tool is one function a request offers.
type tool struct {
	name   string
	params json.RawMessage // the JSON schema of its arguments
	strict bool
	value  any // the tool object as the template sees it (key order kept)
}

// toolChoice values.
const (
	choiceAuto     = "auto"
	choiceNone     = "none"
	choiceRequired = "required"
	choiceNamed    = "function"
)

// toolRequest is a request's tools, tool_choice and parallel_tool_calls.
type toolRequest struct {
	tools    []tool
	choice   string
	named    string // the function tool_choice names
	parallel bool
}

// active reports whether the model may call tools.
func (t *toolRequest) active() bool { return t != nil && len(t.tools) > 0 && t.choice != choiceNone }

// forced reports whether the model must call a tool.
func (t *toolRequest) forced() bool {
	return t.active() && (t.choice == choiceRequired || t.choice == choiceNamed)
}

// parseTools reads tools, tool_choice and parallel_tool_calls.
func parseTools(o *object) *toolRequest {
	tr := &toolRequest{choice: choiceAuto, parallel: true}
	elems := o.array("tools")
	if len(elems) > maxTools {
		o.fail(invalidValue("tools", "at most %d tools, got %d", maxTools, len(elems)))
		return nil
	}
	seen := map[string]bool{}
	for i, el := range elems {
		t, e := parseTool(el, "tools["+strconv.Itoa(i)+"]")
		if e == nil && seen[t.name] {
			e = invalidValue("tools", "two tools are named %q", t.name)
		}
		if e != nil {
			o.fail(e)
			return nil
		}
		seen[t.name] = true
		tr.tools = append(tr.tools, t)
	}
	if v := o.boolean("parallel_tool_calls"); v != nil {
		tr.parallel = *v
	}
	raw, ok := o.raw("tool_choice")
	if !ok {
		if len(tr.tools) == 0 {
			tr.choice = choiceNone
		}
		return tr
	}
	switch jsonKind(raw) {
	case "a string":
		s, e := decodeString(raw, "tool_choice")
		if e != nil {
			o.fail(e)
			return nil
		}
		switch s {
		case choiceAuto, choiceNone, choiceRequired:
			tr.choice = s
		default:
			o.fail(invalidValue("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}, got %q", s))
			return nil
		}
	case "an object":
		c, e := parseObject(raw, "tool_choice")
		if e != nil {
			o.fail(e)
			return nil
		}
		c.rejectUnknown(setOf("type", "function"))
		if t := c.str("type"); c.err == nil && (t == nil || *t != "function") {
			c.fail(invalidValue("tool_choice.type", "'tool_choice.type' must be \"function\""))
		}
		fn := c.child("function")
		if c.err == nil && fn == nil {
			c.fail(badRequest(codeMissing, "tool_choice.function", "'tool_choice.function' is required"))
		}
		if fn != nil {
			fn.rejectUnknown(setOf("name"))
			if n := fn.str("name"); n != nil {
				tr.named = *n
			} else if fn.err == nil {
				fn.fail(badRequest(codeMissing, "tool_choice.function.name", "'tool_choice.function.name' is required"))
			}
			c.fail(fn.err)
		}
		if c.err != nil {
			o.fail(c.err)
			return nil
		}
		if !seen[tr.named] {
			o.fail(invalidValue("tool_choice", "'tool_choice' names function %q, which is not in 'tools'", tr.named))
			return nil
		}
		tr.choice = choiceNamed
	default:
		o.typeError("tool_choice", "a string or an object", raw)
		return nil
	}
	if len(tr.tools) == 0 && tr.choice != choiceNone {
		o.fail(invalidValue("tool_choice", "'tool_choice' %q needs 'tools'", tr.choice))
		return nil
	}
	return tr
}

func parseTool(raw json.RawMessage, name string) (tool, *apiError) {
	var t tool
	o, e := parseObject(raw, name)
	if e != nil {
		return t, e
	}
	o.rejectUnknown(setOf("type", "function"))
	if typ := o.str("type"); o.err == nil && (typ == nil || *typ != "function") {
		return t, invalidValue(name+".type", "'%s.type' must be \"function\" (the only tool type this server offers)", name)
	}
	fn := o.child("function")
	if o.err != nil {
		return t, o.err
	}
	if fn == nil {
		return t, badRequest(codeMissing, name+".function", "'%s.function' is required", name)
	}
	fn.rejectUnknown(setOf("name", "description", "parameters", "strict"))
	n := fn.str("name")
	fn.str("description")
	if v := fn.boolean("strict"); v != nil {
		t.strict = *v
	}
	if fn.err != nil {
		return t, fn.err
	}
	if n == nil {
		return t, badRequest(codeMissing, name+".function.name", "'%s.function.name' is required", name)
	}
	if !toolNameRE.MatchString(*n) {
		return t, invalidValue(name+".function.name", "'%s.function.name' must be 1-64 letters, digits, '_' or '-', got %q", name, *n)
	}
	t.name = *n
	t.params = json.RawMessage(`{"type": "object"}`)
	if p, ok := fn.raw("parameters"); ok {
		if jsonKind(p) != "an object" {
			return t, badRequest(codeInvalidType, name+".function.parameters", "'%s.function.parameters' must be a JSON Schema object, got %s", name, jsonKind(p))
		}
		t.params = p
	}
	v, err := chattmpl.DecodeJSON(raw)
	if err != nil {
		return t, badRequest(codeInvalidJSON, name, "'%s': %v", name, err)
	}
	t.value = v
	return t, nil
}

// templateTools is the tools list the chat template renders.
func (t *toolRequest) templateTools() []any {
	out := make([]any, len(t.tools))
	for i, tl := range t.tools {
		out[i] = tl.value
	}
	return out
}

// argsKey is the key a format writes a call's arguments under.
func argsKey(parser string) string {
	if parser == "llama3_json" {
		return "parameters"
	}
	return "arguments"
}

// callSchema is the JSON schema of one call object to tool tl in a
// format: the name first, then the arguments (schema order is the order
// the grammar writes them, which is what the parser streams best).
func callSchema(tl tool, key string, strict bool) string {
	params := string(tl.params)
	if !strict {
		params = `{"type": "object"}`
	}
	name, _ := json.Marshal(tl.name)
	k, _ := json.Marshal(key)
	return `{"type": "object", "properties": {"name": {"const": ` + string(name) + `}, ` + string(k) + `: ` + params +
		`}, "required": ["name", ` + string(k) + `], "additionalProperties": false}`
}

// callsSchema is the schema of what follows the call trigger: one call
// object (any of the offered tools, or the named one), or for Mistral a
// list of them. allStrict constrains every tool's arguments (required or
// named choices); otherwise only strict tools' arguments are.
func (t *toolRequest) callsSchema(parser string, allStrict bool) string {
	var alts []string
	for _, tl := range t.tools {
		if t.choice == choiceNamed && tl.name != t.named {
			continue
		}
		alts = append(alts, callSchema(tl, argsKey(parser), allStrict || tl.strict))
	}
	one := alts[0]
	if len(alts) > 1 {
		one = `{"anyOf": [` + strings.Join(alts, ", ") + `]}`
	}
	if parser != "mistral" {
		return one
	}
	maxItems := ""
	if !t.parallel || t.choice == choiceNamed {
		maxItems = `, "maxItems": 1`
	}
	return `{"type": "array", "items": ` + one + `, "minItems": 1` + maxItems + `}`
}

// anyStrict reports whether some offered tool asks for strict arguments.
func (t *toolRequest) anyStrict() bool {
	for _, tl := range t.tools {
		if tl.strict {
			return true
		}
	}
	return false
}

// forcedPrefix is what the server writes after the generation prompt to
// make the model call a tool: the format's trigger (Llama 3 writes a bare
// JSON object, so it needs none).
func forcedPrefix(parser string) string {
	switch parser {
	case "hermes":
		return "<tool_call>\n"
	case "mistral":
		return "[TOOL_CALLS]"
	}
	return ""
}

// toolsPrompt describes the tools in a system message for templates that
// do not render tools themselves (Llama 3.0's), in the call format the
// parser reads.
func toolsPrompt(t *toolRequest, parser string) string {
	var b strings.Builder
	b.WriteString("You have access to the following functions. To call one, respond with ")
	switch parser {
	case "hermes":
		b.WriteString("<tool_call>\n{\"name\": function name, \"arguments\": arguments as a JSON object}\n</tool_call>")
	case "mistral":
		b.WriteString("[TOOL_CALLS][{\"name\": function name, \"arguments\": arguments as a JSON object}]")
	default:
		b.WriteString("a JSON object {\"name\": function name, \"parameters\": arguments as a JSON object}")
	}
	b.WriteString(" and nothing else.\n")
	for _, tl := range t.tools {
		raw, _ := json.Marshal(tl.value)
		b.Write(raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// addToolsPrompt puts toolsPrompt into the conversation's system message.
func addToolsPrompt(msgs []chattmpl.Message, text string) []chattmpl.Message {
	if len(msgs) > 0 && msgs[0].Role == "system" && msgs[0].Content.Parts == nil && !msgs[0].Content.Null {
		out := append([]chattmpl.Message(nil), msgs...)
		out[0].Content = chattmpl.TextContent(msgs[0].Content.Text + "\n\n" + text)
		return out
	}
	return append([]chattmpl.Message{{Role: "system", Content: chattmpl.TextContent(text)}}, msgs...)
}

// toolParserFor is the call format of this server's model, or "".
func (s *Server) toolParserFor() string {
	if s.opts.ToolCallParser != "" {
		return s.opts.ToolCallParser
	}
	if s.chat == nil {
		return ""
	}
	return chatout.DetectToolParser(s.chat.Source())
}

// reasoningParserFor is the reasoning parser of this server's model, or "".
func (s *Server) reasoningParserFor() string {
	switch s.opts.ReasoningParser {
	case "none":
		return ""
	case "":
		if s.chat == nil {
			return ""
		}
		return chatout.DetectReasoningParser(s.chat.Source())
	}
	return s.opts.ReasoningParser
}

// applyTools offers the request's tools to the model: the template renders
// them (or a system message describes them when the template cannot), the
// output is parsed in the model's call format, and required, named and
// strict calls are constrained by the tools' schemas.
func (s *Server) applyTools(tr *toolRequest, req *chatRequest, msgs *[]chattmpl.Message, extra *chattmpl.Map, skipSet bool) *apiError {
	if !tr.active() {
		return nil
	}
	if req.output.reasoning == chatout.HarmonyParser {
		return harmonyTools(tr, req, extra)
	}
	parser := s.toolParserFor()
	if parser == "" {
		return unsupported("tools", "this model's chat template shows no tool call format this server reads (%s); "+
			"start the server with --tool_call_parser", strings.Join(chatout.ToolParsers(), ", "))
	}
	if req.constraint != nil {
		return invalidValue("response_format", "a structured output constraint cannot be combined with tools; "+
			"send tool_choice \"none\" or drop the constraint")
	}
	req.output.tools = parser
	if strings.Contains(s.chat.Source(), "tools") {
		extra.Set("tools", tr.templateTools())
	} else {
		*msgs = addToolsPrompt(*msgs, toolsPrompt(tr, parser))
	}
	if parser == "mistral" && !skipSet {
		// [TOOL_CALLS] is a special token: it must reach the parser.
		req.params.SkipSpecialTokens = false
	}
	switch {
	case tr.forced():
		req.output.inCall = true
		req.constraint = newConstraint(grammar.Spec{Kind: grammar.KindJSONSchema, Text: tr.callsSchema(parser, true)})
	case tr.anyStrict() && chatout.ToolTrigger(parser) != "":
		req.constraint = newConstraint(grammar.Spec{Kind: grammar.KindJSONSchema, Text: tr.callsSchema(parser, false)})
		req.constraint.Trigger = chatout.ToolTrigger(parser)
	}
	req.tools = tr
	return nil
}

// harmonyTools offers tools to gpt-oss: its template renders them and its
// calls are messages to "functions.NAME" in the harmony channels, read by
// the harmony parser. A call cannot be forced or constrained there yet
// (the grammar would have to let the analysis channel come first), so
// tool_choice "required" or a named function, and strict tools, are
// refused by name.
func harmonyTools(tr *toolRequest, req *chatRequest, extra *chattmpl.Map) *apiError {
	if tr.forced() {
		return unsupported("tool_choice", "a required or named tool_choice is not supported for gpt-oss's harmony format "+
			"(its calls cannot be forced yet); send \"auto\"")
	}
	if tr.anyStrict() {
		return unsupported("tools", "strict tools are not supported for gpt-oss's harmony format "+
			"(its calls cannot be constrained yet); drop \"strict\"")
	}
	if req.constraint != nil {
		return invalidValue("response_format", "a structured output constraint cannot be combined with tools; "+
			"send tool_choice \"none\" or drop the constraint")
	}
	req.output.tools = chatout.HarmonyParser
	extra.Set("tools", tr.templateTools())
	req.tools = tr
	return nil
}

// finishChatPrompt completes the rendered prompt: a forced call gets its
// trigger written (closing an open thinking block first), and the parsers
// and the constraint learn whether the prompt left thinking open.
func (s *Server) finishChatPrompt(text string, req *chatRequest) string {
	open := req.output.reasoning != "" && chatout.ThinkingOpen(text)
	if req.tools.forced() {
		if open {
			text += "</think>\n\n"
		}
		// The call is the whole answer: no reasoning comes after the
		// trigger (so a thinking budget has nothing left to bound).
		req.output.reasoning = ""
		req.params.ThinkingBudget = nil
		return text + forcedPrefix(req.output.tools)
	}
	req.output.thinkingOpen = open
	closed := strings.HasSuffix(strings.TrimRight(text, " \t\r\n"), "</think>")
	inThink := open || (req.output.reasoning == "deepseek-r1" && !closed)
	if c := req.constraint; c != nil && req.output.reasoning != "" {
		c.ThinkOpen = inThink
		c.ThinkOptional = !c.ThinkOpen && !closed && req.output.reasoning == "qwen3"
	}
	if b := req.params.ThinkingBudget; b != nil {
		b.Open = inThink
	}
	return text
}
