package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ModelDetails describe the served model for ollama's /api/tags, /api/ps
// and /api/show (the role fills them from the model directory).
type ModelDetails struct {
	Format        string // "gguf" or "safetensors"
	Family        string // the architecture, e.g. "llama"
	DType         string // fp16|bf16|fp32 or a GGUF quantization
	SizeBytes     int64  // the weight files' size
	ContextLength int
	ModifiedAt    time.Time
}

// ollamaDone is the last line of a generation: ollama's statistics, with
// durations in nanoseconds as ollama gives them.
type ollamaDone struct {
	DoneReason         string  `json:"done_reason"`
	Context            []int32 `json:"context,omitempty"`
	TotalDuration      int64   `json:"total_duration"`
	LoadDuration       int64   `json:"load_duration"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	PromptEvalDuration int64   `json:"prompt_eval_duration"`
	EvalCount          int     `json:"eval_count"`
	EvalDuration       int64   `json:"eval_duration"`
}

// runOllama admits req and answers /api/generate (chat false) or
// /api/chat: NDJSON lines while streaming, one object otherwise.
func (s *Server) runOllama(w http.ResponseWriter, r *http.Request, req *ollamaRequest, chat bool) {
	g := &Group{RequestID: requestIDFrom(r.Context()), Prompt: req.prompt, N: 1, Params: req.params, Arrival: time.Now()}
	rn, e := s.submit(r.Context(), r.URL.Path, g)
	if rn == nil {
		if e != nil {
			s.writeError(w, r, e)
		}
		return
	}
	defer rn.close()
	line := func(text string, done *ollamaDone) map[string]any {
		m := map[string]any{"model": req.model, "created_at": s.ollamaTime()}
		if chat {
			m["message"] = map[string]string{"role": "assistant", "content": text}
		} else {
			m["response"] = text
		}
		m["done"] = done != nil
		if done != nil {
			m["done_reason"] = done.DoneReason
			if !chat {
				m["context"] = done.Context
			}
			m["total_duration"], m["load_duration"] = done.TotalDuration, done.LoadDuration
			m["prompt_eval_count"], m["prompt_eval_duration"] = done.PromptEvalCount, done.PromptEvalDuration
			m["eval_count"], m["eval_duration"] = done.EvalCount, done.EvalDuration
		}
		return m
	}
	var nd *ndjsonWriter
	if req.stream {
		nd = newNDJSON(w)
	}
	filter := newStopFilter(req.params.StopStrings())
	var text strings.Builder
	ids := append([]int32(nil), req.prompt...)
	reason := FinishStop
	for {
		ev, ok, err := rn.next(r.Context())
		if err != nil {
			return // the client is gone
		}
		if !ok {
			break
		}
		if ev.TokenID >= 0 {
			ids = append(ids, ev.TokenID)
		}
		piece := filter.push(ev.Text)
		if ev.Finished {
			piece += filter.flush()
			reason = ev.Reason
		}
		if ev.Reason == FinishError {
			msg := ev.Err
			if msg == "" {
				msg = "generation failed"
			}
			if nd != nil {
				_ = nd.line(map[string]string{"error": msg})
				return
			}
			s.writeError(w, r, generationFailed(msg))
			return
		}
		if nd != nil && piece != "" {
			if nd.line(line(piece, nil)) != nil {
				return
			}
		}
		text.WriteString(piece)
	}
	total := time.Since(g.Arrival)
	done := &ollamaDone{DoneReason: string(reason), TotalDuration: total.Nanoseconds(),
		PromptEvalCount: len(req.prompt), PromptEvalDuration: rn.firstToken.Nanoseconds(),
		EvalCount: rn.completionTokens(), EvalDuration: (total - rn.firstToken).Nanoseconds()}
	if reason == FinishAbort {
		done.DoneReason = "stop"
	}
	if req.context {
		done.Context = ids
	}
	if nd != nil {
		_ = nd.line(line("", done))
		return
	}
	writeJSON(w, http.StatusOK, line(text.String(), done))
}

// ndjsonWriter writes newline-delimited JSON, flushing every line.
type ndjsonWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func newNDJSON(w http.ResponseWriter) *ndjsonWriter {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	n := &ndjsonWriter{w: w, rc: http.NewResponseController(w)}
	n.err = n.rc.Flush()
	return n
}

func (n *ndjsonWriter) line(v any) error {
	if n.err != nil {
		return n.err
	}
	b, err := marshal(v)
	if err != nil {
		return err
	}
	if _, err := n.w.Write(append(b, '\n')); err != nil {
		n.err = err
		return err
	}
	n.err = n.rc.Flush()
	return n.err
}

// ollamaName is a served name as ollama spells it (name:tag).
func ollamaName(n string) string {
	if strings.Contains(n, ":") {
		return n
	}
	return n + ":latest"
}

// ollamaCard is one model of /api/tags and /api/ps.
func (s *Server) ollamaCard(name string) map[string]any {
	d := s.opts.ModelDetails
	// The digest identifies the model as served here (name, directory,
	// size, modification time); ollama's is its manifest's hash.
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d", name, s.opts.ModelDir, d.SizeBytes, d.ModifiedAt.UnixNano())))
	return map[string]any{
		"name": ollamaName(name), "model": ollamaName(name),
		"modified_at": d.ModifiedAt.UTC().Format(time.RFC3339Nano), "size": d.SizeBytes,
		"digest":  hex.EncodeToString(sum[:]),
		"details": s.ollamaDetails(),
	}
}

func (s *Server) ollamaDetails() map[string]any {
	d := s.opts.ModelDetails
	return map[string]any{"parent_model": "", "format": d.Format, "family": d.Family, "families": []string{d.Family},
		"parameter_size": "", "quantization_level": strings.ToUpper(d.DType)}
}

func (s *Server) handleOllamaTags(w http.ResponseWriter, _ *http.Request) {
	models := make([]map[string]any, 0, len(s.served))
	for _, n := range s.served {
		models = append(models, s.ollamaCard(n))
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

// handleOllamaPs: the model is always loaded (it never expires).
func (s *Server) handleOllamaPs(w http.ResponseWriter, _ *http.Request) {
	models := make([]map[string]any, 0, len(s.served))
	for _, n := range s.served {
		c := s.ollamaCard(n)
		delete(c, "modified_at")
		c["expires_at"] = "9999-12-31T23:59:59Z"
		c["size_vram"] = 0
		models = append(models, c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

func (s *Server) handleOllamaShow(w http.ResponseWriter, r *http.Request) {
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
	s.ignoreUnknown(o, setOf("model", "name", "verbose", "system", "template", "options"), r.URL.Path)
	if !o.has("model") && o.has("name") { // the older spelling
		o.fields["model"] = o.fields["name"]
	}
	if _, e := s.ollamaModel(o); e != nil {
		s.writeError(w, r, e)
		return
	}
	d := s.opts.ModelDetails
	tmpl := s.opts.ChatTemplate
	if tmpl == "" {
		tmpl = s.tok.ChatTemplate()
	}
	caps := []string{"completion"}
	info := map[string]any{"general.architecture": d.Family}
	if d.ContextLength > 0 {
		info[d.Family+".context_length"] = d.ContextLength
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"license":      "",
		"modelfile":    "# served by lightllm\nFROM " + s.opts.ModelDir + "\n",
		"parameters":   "",
		"template":     tmpl,
		"details":      s.ollamaDetails(),
		"model_info":   info,
		"capabilities": caps,
		"modified_at":  d.ModifiedAt.UTC().Format(time.RFC3339Nano),
	})
}

func (s *Server) handleOllamaVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollamaAPIVersion})
}

// ollamaError is ollama's error shape.
type ollamaError struct {
	Error string `json:"error"`
}

// isOllamaPath reports whether errors on path take ollama's shape.
func isOllamaPath(path string) bool { return strings.HasPrefix(path, ollamaPrefix) }

func itoa(i int) string { return strconv.Itoa(i) }
