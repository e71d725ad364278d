package apiserver

import (
	"net/http"
	"runtime/debug"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

// vLLM's /tokenize, /detokenize and /version (vllm/entrypoints/openai
// protocol.py: TokenizeCompletionRequest, TokenizeChatRequest,
// DetokenizeRequest), same shapes, so tools written for vLLM count tokens
// here unchanged.

// extraRoutes are vLLM's utility endpoints and the OpenAI Responses API.
func (s *Server) extraRoutes(routes map[string]route) {
	routes["/tokenize"] = route{http.MethodPost: s.handleTokenize}
	routes["/detokenize"] = route{http.MethodPost: s.handleDetokenize}
	routes["/version"] = route{http.MethodGet: s.handleVersion}
	routes["/v1/responses"] = route{http.MethodPost: s.generation(s.handleResponses)}
	routes["/v1/embeddings"] = route{http.MethodPost: s.generation(s.handleEmbeddings)}
}

var (
	tokenizePromptFields = setOf("model", "prompt", "add_special_tokens", "return_token_strs")
	tokenizeChatFields   = setOf("model", "messages", "add_generation_prompt", "continue_final_message",
		"add_special_tokens", "return_token_strs", "chat_template_kwargs", "tools", "chat_template", "mm_processor_kwargs")
)

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// handleTokenize: {"prompt"} or {"messages"} → {"count","max_model_len","tokens","token_strs"}.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	o, e := s.readObject(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	chat := o.has("messages")
	if chat {
		s.ignoreUnknown(o, tokenizeChatFields, r.URL.Path)
	} else {
		s.ignoreUnknown(o, tokenizePromptFields, r.URL.Path)
	}
	s.checkModelField(o)
	addSpecial := !chat // vLLM: the template writes BOS itself
	if v := o.boolean("add_special_tokens"); v != nil {
		addSpecial = *v
	}
	strs := o.boolean("return_token_strs")
	var text string
	if chat {
		addGen := true
		if v := o.boolean("add_generation_prompt"); v != nil {
			addGen = *v
		}
		if v := o.boolean("continue_final_message"); v != nil && *v {
			o.fail(unsupported("continue_final_message", "'continue_final_message' is not supported by this server"))
		}
		if tools := o.array("tools"); len(tools) > 0 {
			o.fail(unsupported("tools", "tool calling is not supported by this server"))
		}
		if v := o.str("chat_template"); v != nil && *v != "" {
			o.fail(unsupported("chat_template", "a per-request 'chat_template' is not supported (start the server with --chat_template)"))
		}
		extra := s.templateExtra()
		s.templateKwargs(o, extra)
		if o.err != nil {
			s.writeError(w, r, o.err)
			return
		}
		msgs, e := parseMessages(o)
		if e != nil {
			s.writeError(w, r, e)
			return
		}
		if s.chat == nil {
			s.writeError(w, r, badRequest(codeNoChatTemplate, "messages", "%v", s.chatErr))
			return
		}
		rendered, err := s.chat.RenderMessages(msgs, addGen, extra)
		if err != nil {
			s.writeError(w, r, invalidValue("messages", "the chat template could not render these messages: %v", err))
			return
		}
		text = rendered
	} else {
		p := o.str("prompt")
		if o.err == nil && p == nil {
			o.fail(badRequest(codeMissing, "prompt", "'prompt' (a string) or 'messages' is required"))
		}
		if o.err != nil {
			s.writeError(w, r, o.err)
			return
		}
		text = *p
	}
	if e := s.checkPromptChars(text, "prompt"); e != nil {
		s.writeError(w, r, e)
		return
	}
	ids := s.tok.Encode(text, addSpecial)
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: s.lengthLimit(), Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int32{}
	}
	if strs != nil && *strs {
		resp.TokenStrs = make([]string, len(ids))
		for i, id := range ids {
			resp.TokenStrs[i] = s.tok.Token(id)
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleDetokenize: {"tokens": [ids]} → {"prompt": text}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	o, e := s.readObject(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.ignoreUnknown(o, setOf("model", "tokens"), r.URL.Path)
	s.checkModelField(o)
	raw, ok := o.raw("tokens")
	if o.err == nil && !ok {
		o.fail(badRequest(codeMissing, "tokens", "'tokens' (an array of token ids) is required"))
	}
	if o.err != nil {
		s.writeError(w, r, o.err)
		return
	}
	ids, e := decodeTokenIDs(raw, "tokens", s.vocab)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": s.tok.Decode(ids, false)})
}

// handleVersion is vLLM's /version: this build's module version.
func (s *Server) handleVersion(w http.ResponseWriter, _ *http.Request) {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	writeJSON(w, http.StatusOK, map[string]string{"version": v})
}

// readObject reads a body that must be a JSON object.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request) (*object, *apiError) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, e
	}
	return parseBody(body)
}

// checkModelField applies the model-name rule of the OpenAI endpoints.
func (s *Server) checkModelField(o *object) {
	if v := o.str("model"); v != nil && *v != "" && s.strictModel() && !s.serves(*v) {
		o.fail(&apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: codeModelNotFound, Param: "model",
			Message: "The model `" + *v + "` does not exist; this server serves " + s.servedList()})
	}
}

// templateKwargs adds chat_template_kwargs to the template variables.
func (s *Server) templateKwargs(o *object, extra *chattmpl.Map) {
	kw := o.child("chat_template_kwargs")
	if kw == nil {
		return
	}
	for _, k := range kw.keys() {
		if k == "messages" || k == "add_generation_prompt" {
			o.fail(invalidValue("chat_template_kwargs", "'chat_template_kwargs' may not set %q", k))
			return
		}
		v, err := chattmpl.DecodeJSON(kw.fields[k])
		if err != nil {
			o.fail(badRequest(codeInvalidJSON, "chat_template_kwargs."+k, "'chat_template_kwargs.%s': %v", k, err))
			return
		}
		extra.Set(k, v)
	}
}
