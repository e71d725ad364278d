package apiserver

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/lightllm-go/lightllm/pkg/chattmpl"
)

// ollama's HTTP API (github.com/ollama/ollama docs/api.md), so that Open
// WebUI, Continue and every ollama client work against this server
// unchanged: /api/generate and /api/chat (NDJSON streams, streaming by
// default), /api/tags, /api/ps, /api/show and /api/version. Errors are
// ollama's {"error": "message"} (writeError picks the shape by path).
// Request fields follow ollama's leniency (unknown ones are ignored with one
// warning each, as the OpenAI endpoints do); options that change what is
// generated and that this server cannot honour are refused by name.

// ollamaAPIVersion is the ollama API level these endpoints implement, what
// /api/version reports (clients compare it against minimum versions).
const ollamaAPIVersion = "0.5.0"

const ollamaPrefix = "/api/"

// ollamaRoutes are the ollama endpoints, added to the route table.
func (s *Server) ollamaRoutes(routes map[string]route) {
	gen := s.generation
	routes["/api/generate"] = route{http.MethodPost: gen(s.handleOllamaGenerate)}
	routes["/api/chat"] = route{http.MethodPost: gen(s.handleOllamaChat)}
	routes["/api/tags"] = route{http.MethodGet: s.handleOllamaTags}
	routes["/api/ps"] = route{http.MethodGet: s.handleOllamaPs}
	routes["/api/show"] = route{http.MethodPost: s.handleOllamaShow}
	routes["/api/version"] = route{http.MethodGet: s.handleOllamaVersion}
}

var (
	ollamaGenerateFields = setOf("model", "prompt", "suffix", "images", "format", "options", "system", "template",
		"context", "stream", "raw", "keep_alive", "think")
	ollamaChatFields = setOf("model", "messages", "tools", "format", "options", "stream", "keep_alive", "think")
	// ollamaLoadOptions configure loading the model in ollama; here the
	// server's flags do, so they are accepted and have no effect.
	ollamaLoadOptions = setOf("num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all",
		"vocab_only", "use_mmap", "use_mlock", "num_thread", "numa", "num_keep", "penalize_newline")
	// ollamaOffOptions change sampling in ollama and are not implemented
	// here: refused unless they hold their off value.
	ollamaOffOptions = map[string]float64{"typical_p": 1, "tfs_z": 1, "mirostat": 0, "min_p": 0}
)

// ollamaRequest is what /api/generate and /api/chat share.
type ollamaRequest struct {
	model   string
	stream  bool
	params  SamplingParams
	prompt  []int32
	context bool // /api/generate: return "context"
}

// ollamaModel checks the requested model name against the served names
// (ollama's "name:latest" is the same model as "name").
func (s *Server) ollamaModel(o *object) (string, *apiError) {
	m := o.str("model")
	if o.err != nil {
		return "", o.err
	}
	if m == nil || *m == "" {
		return "", badRequest(codeMissing, "model", "model is required")
	}
	name := strings.TrimSuffix(*m, ":latest")
	if s.strictModel() && !s.serves(name) {
		return "", &apiError{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: codeModelNotFound, Param: "model",
			Message: "model \"" + *m + "\" not found; this server serves " + s.servedList()}
	}
	return *m, nil
}

// parseOllamaCommon reads model, stream, format and options.
func (s *Server) parseOllamaCommon(o *object, req *ollamaRequest, path string) *apiError {
	model, e := s.ollamaModel(o)
	if e != nil {
		return e
	}
	req.model = model
	req.stream = true // ollama streams unless told not to
	if v := o.boolean("stream"); v != nil {
		req.stream = *v
	}
	if f, ok := o.raw("format"); ok && !isOff(f, "") {
		o.fail(unsupported("format", "structured output ('format') is not supported by this server"))
	}
	if v := o.boolean("think"); v != nil && *v {
		o.fail(unsupported("think", "'think' is not supported by this server"))
	}
	o.raw("keep_alive") // the model stays loaded; any value is fine
	req.params = s.defaultParams(true)
	if opts := o.child("options"); opts != nil {
		s.ollamaOptions(opts, &req.params, path)
		if opts.err != nil {
			return opts.err
		}
	}
	if o.err != nil {
		return o.err
	}
	normalize(&req.params)
	return nil
}

// ollamaOptions maps ollama's options onto the sampling parameters.
func (s *Server) ollamaOptions(o *object, p *SamplingParams, path string) {
	for _, k := range o.keys() {
		if off, ok := ollamaOffOptions[k]; ok {
			if v := o.float(k); v != nil && *v != off {
				o.fail(unsupported(o.name(k), "'%s' is not supported by this server (only %g, its off value)", o.name(k), off))
			}
			continue
		}
		switch k {
		case "temperature", "top_p", "presence_penalty", "frequency_penalty", "seed", "stop", "num_predict",
			"top_k", "repeat_penalty", "repeat_last_n", "mirostat_eta", "mirostat_tau":
		default:
			if !ollamaLoadOptions[k] && s.unknownFields.first(o.name(k)) {
				s.log.Warn().Str("field", o.name(k)).Str("path", path).
					Msg("ignoring an unknown request field (this warning is logged once per field name)")
			}
		}
	}
	if v := o.float("temperature"); v != nil {
		if *v < 0 {
			o.fail(invalidValue(o.name("temperature"), "'%s' must be >= 0, got %g", o.name("temperature"), *v))
		}
		p.Temperature = float32(*v)
	}
	if v := o.float("top_p"); v != nil {
		if *v <= 0 || *v > 1 {
			o.fail(invalidValue(o.name("top_p"), "'%s' must be in (0, 1], got %g", o.name("top_p"), *v))
		}
		p.TopP = float32(*v)
	}
	if v := o.intIn("top_k", math.MinInt32, math.MaxInt32); v != nil {
		p.TopK = int(*v)
		if *v <= 0 { // llama.cpp's sampler: <= 0 is the whole vocabulary
			p.TopK = -1
		}
	}
	if v := o.float("repeat_penalty"); v != nil {
		if *v < 1 || *v > 1e6 {
			o.fail(invalidValue(o.name("repeat_penalty"), "'%s' must be in [1, 1e6] here (values below 1 are not supported), got %g", o.name("repeat_penalty"), *v))
		}
		p.RepetitionPenalty = float32(*v)
	}
	// Penalties count every generated token (LightLLM's rule): ollama's
	// window of the last N tokens is honoured only as "all" (-1) or "none".
	if v := o.integer("repeat_last_n"); v != nil {
		switch {
		case *v == 0:
			p.RepetitionPenalty, p.PresencePenalty, p.FrequencyPenalty = 1, 0, 0
		case *v != -1:
			o.fail(unsupported(o.name("repeat_last_n"), "'%s' must be -1 (all tokens) or 0 (off) here: penalties count every generated token", o.name("repeat_last_n")))
		}
	}
	for _, k := range []string{"presence_penalty", "frequency_penalty"} {
		if v := o.float(k); v != nil {
			if *v < -2 || *v > 2 {
				o.fail(invalidValue(o.name(k), "'%s' must be in [-2, 2], got %g", o.name(k), *v))
			}
			if k == "presence_penalty" {
				p.PresencePenalty = float32(*v)
			} else {
				p.FrequencyPenalty = float32(*v)
			}
		}
	}
	if v := o.integer("seed"); v != nil {
		p.Seed = -1 // ollama's "random"
		if *v != -1 {
			p.Seed = openAISeed(*v)
		}
	}
	if v := o.integer("num_predict"); v != nil {
		switch {
		case *v > 0:
			p.MaxNewTokens = int(min(*v, math.MaxInt32))
		case *v == -1 || *v == -2: // unlimited / fill the context: the length rule cuts it
		default:
			o.fail(invalidValue(o.name("num_predict"), "'%s' must be >= 1, or -1 (no limit) or -2 (fill the context), got %d", o.name("num_predict"), *v))
		}
	}
	s.stopStrings(o, "stop", p)
}

// ollamaLoaded is ollama's answer to a request with nothing to generate
// (an empty prompt or no messages): the model is loaded.
func (s *Server) ollamaLoaded(w http.ResponseWriter, model string, chat bool) {
	resp := map[string]any{"model": model, "created_at": s.ollamaTime(), "done": true, "done_reason": "load"}
	if chat {
		resp["message"] = map[string]string{"role": "assistant", "content": ""}
	} else {
		resp["response"] = ""
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) ollamaTime() string { return s.opts.Now().UTC().Format(time.RFC3339Nano) }

func (s *Server) handleOllamaGenerate(w http.ResponseWriter, r *http.Request) {
	req, empty, e := s.parseOllamaGenerate(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if empty {
		s.ollamaLoaded(w, req.model, false)
		return
	}
	s.runOllama(w, r, req, false)
}

func (s *Server) parseOllamaGenerate(w http.ResponseWriter, r *http.Request) (*ollamaRequest, bool, *apiError) {
	body, e := s.readBody(w, r)
	if e != nil {
		return nil, false, e
	}
	o, e := parseBody(body)
	if e != nil {
		return nil, false, e
	}
	s.ignoreUnknown(o, ollamaGenerateFields, r.URL.Path)
	req := &ollamaRequest{context: true}
	if e := s.parseOllamaCommon(o, req, r.URL.Path); e != nil {
		return nil, false, e
	}
	for _, k := range []string{"suffix", "template"} {
		if v := o.str(k); v != nil && *v != "" {
			o.fail(unsupported(k, "'%s' is not supported by this server", k))
		}
	}
	if imgs := o.array("images"); len(imgs) > 0 {
		o.fail(unsupported("images", "images are not supported by this server (text models only)"))
	}
	raw := o.boolean("raw")
	system := o.str("system")
	prompt := o.str("prompt")
	var ctxIDs []int32
	if c, ok := o.raw("context"); ok {
		ids, e := decodeTokenIDs(c, "context", s.vocab)
		if e != nil {
			return nil, false, e
		}
		ctxIDs = ids
	}
	if o.err != nil {
		return nil, false, o.err
	}
	text := ""
	if prompt != nil {
		text = *prompt
	}
	if text == "" && len(ctxIDs) == 0 {
		return req, true, nil
	}
	if e := s.checkPromptChars(text, "prompt"); e != nil {
		return nil, false, e
	}
	switch {
	case (raw == nil || !*raw) && s.chat != nil && text != "":
		// ollama applies the model's template unless raw.
		var msgs []chattmpl.Message
		if system != nil && *system != "" {
			msgs = append(msgs, chattmpl.Message{Role: "system", Content: chattmpl.TextContent(*system)})
		}
		msgs = append(msgs, chattmpl.Message{Role: "user", Content: chattmpl.TextContent(text)})
		rendered, e := s.renderChat(msgs, "prompt")
		if e != nil {
			return nil, false, e
		}
		req.prompt = append(ctxIDs, s.tok.Encode(rendered, false)...)
	case system != nil && *system != "":
		return nil, false, badRequest(codeNoChatTemplate, "system", "'system' needs a chat template, and this model has none (send the whole prompt with raw, or start the server with --chat_template)")
	default:
		req.prompt = append(ctxIDs, s.tok.Encode(text, len(ctxIDs) == 0)...)
	}
	if e := s.applyLengthRule(len(req.prompt), &req.params, "num_predict", "prompt"); e != nil {
		return nil, false, e
	}
	return req, false, nil
}

// renderChat renders messages with the chat template and a generation
// prompt; param names the field errors point at.
func (s *Server) renderChat(msgs []chattmpl.Message, param string) (string, *apiError) {
	if s.chat == nil {
		return "", badRequest(codeNoChatTemplate, param, "%v", s.chatErr)
	}
	text, err := s.chat.RenderMessages(msgs, true, s.templateExtra())
	if err != nil {
		return "", invalidValue(param, "the chat template could not render these messages: %v", err)
	}
	if e := s.checkPromptChars(text, param); e != nil {
		return "", e
	}
	return text, nil
}

// templateExtra are the template variables every render gets.
func (s *Server) templateExtra() *chattmpl.Map {
	extra := chattmpl.NewMap()
	if bos := s.tok.BOS(); bos >= 0 {
		extra.Set("bos_token", s.tok.Token(bos))
	}
	if eos := s.tok.EOS(); eos >= 0 {
		extra.Set("eos_token", s.tok.Token(eos))
	}
	return extra
}

func (s *Server) handleOllamaChat(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	o, e := parseBody(body)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.ignoreUnknown(o, ollamaChatFields, r.URL.Path)
	req := &ollamaRequest{}
	if e := s.parseOllamaCommon(o, req, r.URL.Path); e != nil {
		s.writeError(w, r, e)
		return
	}
	if tools := o.array("tools"); len(tools) > 0 {
		o.fail(unsupported("tools", "tool calling is not supported by this server"))
	}
	if o.err != nil {
		s.writeError(w, r, o.err)
		return
	}
	if elems := o.array("messages"); len(elems) == 0 {
		s.ollamaLoaded(w, req.model, true)
		return
	}
	if e := ollamaMessages(o); e != nil {
		s.writeError(w, r, e)
		return
	}
	msgs, e := parseMessages(o)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	text, e := s.renderChat(msgs, "messages")
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	req.prompt = s.tok.Encode(text, false)
	if e := s.applyLengthRule(len(req.prompt), &req.params, "num_predict", "messages"); e != nil {
		s.writeError(w, r, e)
		return
	}
	s.runOllama(w, r, req, true)
}

// ollamaMessages rewrites ollama's message fields into the OpenAI ones
// parseMessages reads: "thinking" is the reasoning content; "images" must
// be empty (text models only).
func ollamaMessages(o *object) *apiError {
	elems := o.array("messages")
	for i, el := range elems {
		var m map[string]json.RawMessage
		if json.Unmarshal(el, &m) != nil {
			continue // parseMessages names the problem
		}
		if imgs, ok := m["images"]; ok {
			if !isOff(imgs, "") {
				return unsupported("messages["+itoa(i)+"].images", "images are not supported by this server (text models only)")
			}
			delete(m, "images")
		}
		if th, ok := m["thinking"]; ok {
			delete(m, "thinking")
			if _, has := m["reasoning_content"]; !has && !isOff(th, "") {
				m["reasoning_content"] = th
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return internalError("re-encoding a message failed")
		}
		elems[i] = b
	}
	b, err := json.Marshal(elems)
	if err != nil {
		return internalError("re-encoding the messages failed")
	}
	o.fields["messages"] = b
	return nil
}
