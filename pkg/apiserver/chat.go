package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/lightllm-go/lightllm/pkg/chatout"
	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

var chatFields = setOf(append([]string{"messages", "logprobs", "top_logprobs", "tools", "tool_choice",
	"parallel_tool_calls", "functions", "function_call", "metadata", "store", "service_tier", "modalities",
	"audio", "prediction", "reasoning_effort", "prompt_cache_key", "safety_identifier", "web_search_options",
	"add_generation_prompt", "chat_template_kwargs", "separate_reasoning", "stream_reasoning",
	"thinking_token_budget"},
	append(structuredFields, openAICommon...)...)...)

// chatRequest is a parsed /v1/chat/completions body.
type chatRequest struct {
	openAIRequest
	prompt      []int32
	n           int
	logprobs    bool
	topLogprobs int
	output      outputParsing
	tools       *toolRequest // nil when the model may not call tools
}

func (s *Server) parseChat(body []byte) (*chatRequest, *apiError) {
	o, e := parseBody(body)
	if e != nil {
		return nil, e
	}
	s.ignoreUnknown(o, chatFields, pathChat)
	req := &chatRequest{n: 1}
	s.parseOpenAICommon(o, &req.openAIRequest, pathChat)
	req.params.AddSpecialTokens = false // the template writes BOS itself
	if v := o.boolean("add_special_tokens"); v != nil {
		req.params.AddSpecialTokens = *v
	}
	if v := o.intIn("n", 1, MaxBestOf); v != nil {
		req.n = int(*v)
	}
	if v := o.boolean("logprobs"); v != nil {
		req.logprobs = *v
	}
	req.params.NoLogProb = !req.logprobs // nothing else shows or ranks them
	if v := o.intIn("top_logprobs", 0, maxTopLogprobs); v != nil {
		if !req.logprobs && *v > 0 {
			o.fail(invalidValue("top_logprobs", "'top_logprobs' needs 'logprobs' set to true"))
		}
		req.topLogprobs = int(*v)
		req.params.TopLogprobs = int(*v)
	}
	chatUnsupported(o)
	tools := parseTools(o)
	separate := true
	if v := o.boolean("separate_reasoning"); v != nil {
		separate = *v
	}
	addGen := true
	if v := o.boolean("add_generation_prompt"); v != nil {
		addGen = *v
	}
	extra := s.templateExtra()
	if v := o.str("reasoning_effort"); v != nil {
		extra.Set("reasoning_effort", *v)
	}
	s.templateKwargs(o, extra)
	for _, k := range []string{"stream_reasoning", "store"} {
		o.boolean(k)
	}
	for _, k := range []string{"service_tier", "prompt_cache_key", "safety_identifier"} {
		o.str(k)
	}
	o.child("metadata")
	if o.err != nil {
		return nil, o.err
	}
	if e := req.checkMinMax(); e != nil {
		return nil, e
	}
	normalize(&req.params)
	msgs, e := parseMessages(o)
	if e != nil {
		return nil, e
	}
	if s.chat == nil {
		return nil, badRequest(codeNoChatTemplate, "messages", "%v", s.chatErr)
	}
	if separate {
		req.output.reasoning = s.reasoningParserFor()
	}
	if req.output.reasoning == chatout.HarmonyParser {
		if e := harmonyRequest(o, req); e != nil {
			return nil, e
		}
	}
	if e := s.parseThinkingBudget(o, req); e != nil {
		return nil, e
	}
	if e := s.applyTools(tools, req, &msgs, extra, o.has("skip_special_tokens")); e != nil {
		return nil, e
	}
	text, err := s.chat.RenderMessages(msgs, addGen, extra)
	if err != nil {
		var raised *chattmpl.RaisedError
		if errors.As(err, &raised) {
			return nil, invalidValue("messages", "the chat template refused these messages: %s", raised.Message)
		}
		s.log.Warn().Err(err).Msg("chat template render failed")
		return nil, invalidValue("messages", "the chat template could not render these messages: %v", err)
	}
	text = s.finishChatPrompt(text, req)
	if e := s.checkConstraint(req.constraint, &req.params); e != nil {
		return nil, e
	}
	if e := s.checkPromptChars(text, "messages"); e != nil {
		return nil, e
	}
	req.prompt = s.tok.Encode(text, req.params.AddSpecialTokens)
	if e := s.applyLengthRule(len(req.prompt), &req.params, req.maxName, "messages"); e != nil {
		return nil, e
	}
	return req, nil
}

// maxThinkingBudget bounds thinking_token_budget (no output is longer).
const maxThinkingBudget = 1 << 24

// maxThinkTagTokens is how many tokens "<think>" or "</think>" may take
// (shm's bound on a thinking budget's tags).
const maxThinkTagTokens = 16

// parseThinkingBudget reads vLLM's thinking_token_budget. It needs a
// reasoning parser (the block it bounds is the one the parser reads);
// finishChatPrompt says whether the prompt opened the block.
func (s *Server) parseThinkingBudget(o *object, req *chatRequest) *apiError {
	v := o.intIn("thinking_token_budget", 0, maxThinkingBudget)
	if o.err != nil {
		return o.err
	}
	if v == nil {
		return nil
	}
	if req.output.reasoning == "" {
		return unsupported("thinking_token_budget", "'thinking_token_budget' needs a reasoning parser: start the server with --reasoning_parser (and leave separate_reasoning true)")
	}
	if req.output.reasoning == chatout.HarmonyParser {
		return unsupported("thinking_token_budget", "'thinking_token_budget' is not supported for gpt-oss's harmony format (its thinking ends at a channel switch, not a </think> tag)")
	}
	if len(req.params.AllowedTokenIDs) > 0 {
		// The forced end tag may be a token the list leaves out.
		return unsupported("thinking_token_budget", "'thinking_token_budget' together with 'allowed_token_ids' is not supported")
	}
	b := &ThinkingBudget{Budget: int(*v), Start: s.tok.Encode(chatout.ThinkOpenTag, false), End: s.tok.Encode(chatout.ThinkCloseTag, false)}
	for _, ids := range [][]int32{b.Start, b.End} {
		if len(ids) == 0 || len(ids) > maxThinkTagTokens {
			return unsupported("thinking_token_budget", "'thinking_token_budget': the tokenizer spells a thinking tag in %d tokens (at most %d)", len(ids), maxThinkTagTokens)
		}
	}
	req.params.ThinkingBudget = b
	return nil
}

// chatUnsupported refuses features this server does not have, unless set
// to their "off" value.
func chatUnsupported(o *object) {
	if fns := o.array("functions"); len(fns) > 0 {
		o.fail(unsupported("functions", "the deprecated 'functions' parameter is not supported: send 'tools'"))
	}
	if raw, ok := o.raw("function_call"); ok {
		var s string
		if jsonKind(raw) != "a string" || json.Unmarshal(raw, &s) != nil || (s != "none" && s != "auto") {
			o.fail(unsupported("function_call", "the deprecated 'function_call' parameter is not supported: send 'tool_choice'"))
		}
	}
	if mods := o.array("modalities"); mods != nil {
		for _, m := range mods {
			var s string
			if json.Unmarshal(m, &s) != nil || s != "text" {
				o.fail(unsupported("modalities", "only the \"text\" modality is supported"))
				break
			}
		}
	}
	for _, k := range []string{"audio", "prediction", "web_search_options"} {
		if o.has(k) {
			o.fail(unsupported(k, "'%s' is not supported by this server", k))
		}
	}
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	req, e := s.parseChat(body)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	g := &Group{RequestID: requestIDFrom(r.Context()), Prompt: req.prompt, N: req.n, Params: req.params, Arrival: time.Now(),
		Constraint: req.constraint}
	rn, e := s.submit(r.Context(), r.URL.Path, g)
	if rn == nil {
		if e != nil {
			s.writeError(w, r, e)
		}
		return
	}
	defer rn.close()
	if req.stream {
		s.chatStream(w, r, req, rn)
		return
	}
	s.chatCollect(w, r, req, rn)
}

type chatMessage struct {
	Role             string     `json:"role"`
	Content          *string    `json:"content"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

type chatTokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []chatTopToken `json:"top_logprobs"`
}

type chatTopToken struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
}

// chatDelta is a stream chunk's delta; Role and Content are omitted when
// absent (the final chunk's delta is {}).
type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   json.RawMessage   `json:"usage,omitempty"`
}

// chatTokenLogprobs is one token in the chat logprobs format.
func (s *Server) chatTokenLogprobs(id int32, lp float32, top []TokenLogprob) chatTokenLogprob {
	txt, b := s.tokenText(id)
	out := chatTokenLogprob{Token: txt, Logprob: roundLogprob(lp), Bytes: b, TopLogprobs: []chatTopToken{}}
	for _, alt := range top {
		at, ab := s.tokenText(alt.TokenID)
		out.TopLogprobs = append(out.TopLogprobs, chatTopToken{Token: at, Logprob: roundLogprob(alt.Logprob), Bytes: ab})
	}
	return out
}

func (s *Server) chatCollect(w http.ResponseWriter, r *http.Request, req *chatRequest, rn *run) {
	seqs, err := s.collect(r.Context(), rn, &req.openAIRequest)
	if err != nil {
		return // client gone
	}
	resp := chatResponse{ID: "chatcmpl-" + requestIDFrom(r.Context()), Object: "chat.completion",
		Created: s.opts.Now().Unix(), Model: s.responseModel(&req.openAIRequest), Choices: make([]chatChoice, 0, len(seqs)),
		Usage: newUsage(len(rn.group.Prompt), rn.completionTokens(), rn.cacheLen)}
	for i, sr := range seqs {
		if sr.reason == FinishError {
			s.writeError(w, r, generationFailed(sr.err))
			return
		}
		msg, reason := req.output.parsedMessage(sr.text, requestIDFrom(r.Context()), i, sr.reason)
		c := chatChoice{Index: i, Message: msg, FinishReason: string(reason)}
		if req.logprobs {
			c.Logprobs = &chatLogprobs{Content: []chatTokenLogprob{}}
			for _, t := range sr.tokens {
				if t.logprob != nil {
					c.Logprobs.Content = append(c.Logprobs.Content, s.chatTokenLogprobs(t.id, float32(*t.logprob), t.top))
				}
			}
		}
		resp.Choices = append(resp.Choices, c)
	}
	writeJSON(w, http.StatusOK, resp)
}

// chatStream writes, per choice, a role chunk, content chunks and a finish
// chunk; then the usage chunk when asked; then [DONE].
func (s *Server) chatStream(w http.ResponseWriter, r *http.Request, req *chatRequest, rn *run) {
	sse := newSSE(w, false)
	rn.attach(sse)
	id := "chatcmpl-" + requestIDFrom(r.Context())
	created, model := s.opts.Now().Unix(), s.responseModel(&req.openAIRequest)
	n := rn.group.N
	filters := make([]*stopFilter, n)
	started := make([]bool, n)
	parsers := make([]*chatout.Parser, n)
	for i := range filters {
		filters[i] = s.newFilter(&req.openAIRequest)
		if req.output.enabled() {
			parsers[i] = req.output.newParser(requestIDFrom(r.Context()), i)
		}
	}
	promptLen := len(rn.group.Prompt)
	send := func(c chatChunkChoice) error {
		chunk := chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chatChunkChoice{c}}
		switch {
		case req.continuousUse:
			chunk.Usage, _ = marshal(newUsage(promptLen, rn.completionTokens(), rn.cacheLen))
		case req.includeUsage:
			chunk.Usage = nullJSON
		}
		return sse.event(chunk)
	}
	for {
		ev, ok, err := rn.next(r.Context())
		if err != nil {
			return
		}
		if !ok {
			break
		}
		i := ev.Seq
		if ev.Reason == FinishError {
			_ = sse.event(streamFailure(&ev))
			continue
		}
		if !started[i] {
			started[i] = true
			empty := ""
			if send(chatChunkChoice{Index: i, Delta: chatDelta{Role: "assistant", Content: &empty}}) != nil {
				return
			}
		}
		text := filters[i].push(ev.Text)
		if ev.Finished {
			text += filters[i].flush()
		}
		var lp *chatLogprobs
		if req.logprobs && ev.TokenID >= 0 && ev.HasLogprob {
			lp = &chatLogprobs{Content: []chatTokenLogprob{s.chatTokenLogprobs(ev.TokenID, ev.Logprob, ev.TopLogprobs)}}
		}
		deltas := []chatDelta{{Content: &text}}
		if p := parsers[i]; p != nil {
			evs := p.Push(text)
			if ev.Finished {
				evs = append(evs, p.Finish()...)
			}
			deltas = streamDeltas(evs)
		} else if text == "" {
			deltas = nil
		}
		if len(deltas) == 0 && lp != nil {
			empty := ""
			deltas = []chatDelta{{Content: &empty}}
		}
		for k, d := range deltas {
			c := chatChunkChoice{Index: i, Delta: d}
			if k == 0 {
				c.Logprobs = lp
			}
			if send(c) != nil {
				return
			}
		}
		if ev.Finished {
			reason := finishReasonPtr(&ev)
			if p := parsers[i]; p != nil && len(p.Calls()) > 0 && reason != nil && *reason == string(FinishStop) {
				tc := string(FinishToolCalls)
				reason = &tc
			}
			if send(chatChunkChoice{Index: i, Delta: chatDelta{}, FinishReason: reason}) != nil {
				return
			}
		}
	}
	if req.includeUsage || req.continuousUse {
		u, _ := marshal(newUsage(promptLen, rn.completionTokens(), rn.cacheLen))
		chunk := chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chatChunkChoice{}, Usage: u}
		if sse.event(chunk) != nil {
			return
		}
	}
	_ = sse.done()
}

// harmonyRequest adapts a chat request to gpt-oss's harmony output: the
// channel markers are special tokens, so they stay in the text the parser
// reads unless the request sets skip_special_tokens itself (the parser
// drops them from what it returns either way); what the harmony parser
// cannot honour yet is refused by name.
func harmonyRequest(o *object, req *chatRequest) *apiError {
	if req.constraint != nil {
		return unsupported("response_format", "structured output is not supported for gpt-oss's harmony format "+
			"(the answer follows an analysis channel the constraint would forbid)")
	}
	if !o.has("skip_special_tokens") {
		req.params.SkipSpecialTokens = false
	}
	return nil
}
