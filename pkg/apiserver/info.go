package apiserver

import (
	"net/http"
)

// routes is the endpoint table (LightLLM's api_http.py, same methods).
func (s *Server) routes() http.Handler {
	gen := s.generation
	rt := &router{s: s, routes: map[string]route{
		"/generate":            {http.MethodPost: gen(s.handleGenerate)},
		"/generate_stream":     {http.MethodPost: gen(s.handleGenerateStream)},
		"/":                    {http.MethodPost: gen(s.handleCompat)},
		"/v1/completions":      {http.MethodPost: gen(s.handleCompletions)},
		"/v1/chat/completions": {http.MethodPost: gen(s.handleChat)},
		"/v1/models":           {http.MethodGet: s.handleModels},
		"/health":              {http.MethodGet: s.handleHealth, http.MethodHead: s.handleHealth},
		"/healthz":             {http.MethodGet: s.handleHealth, http.MethodHead: s.handleHealth},
		"/liveness":            {http.MethodGet: s.handleLiveness, http.MethodPost: s.handleLiveness},
		"/readiness":           {http.MethodGet: s.handleReadiness, http.MethodPost: s.handleReadiness},
		"/token_load":          {http.MethodGet: s.handleTokenLoad},
		"/tokens":              {http.MethodGet: s.handleTokens, http.MethodPost: s.handleTokens},
		"/get_model_name":      {http.MethodGet: s.handleModelName, http.MethodPost: s.handleModelName},
		"/get_server_info":     {http.MethodGet: s.handleServerInfo, http.MethodPost: s.handleServerInfo},
		"/metrics":             {http.MethodGet: s.handleMetrics},
	}}
	s.ollamaRoutes(rt.routes)
	s.extraRoutes(rt.routes)
	s.addWebRoutes(rt.routes)
	return s.wrap(s.guard(rt))
}

// handleHealth is LightLLM's /health: 200 {"message":"Ok"} when the engine
// makes progress or is idle; 503 {"message":"Error"} otherwise, and also
// before the model is ready and while draining (so a load balancer stops
// sending here as soon as SIGTERM arrives).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	ok := !s.draining.Load() && s.backend.Ready() && s.backend.Healthy()
	status, msg := http.StatusOK, "Ok"
	if !ok {
		status, msg = http.StatusServiceUnavailable, "Error"
	}
	writeJSON(w, status, map[string]string{"message": msg})
}

// handleLiveness: the process answers.
func (s *Server) handleLiveness(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadiness: ready to take requests; fails as soon as draining starts,
// and while the backend is unhealthy.
func (s *Server) handleReadiness(w http.ResponseWriter, _ *http.Request) {
	switch {
	case s.draining.Load():
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	case !s.backend.Ready():
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
	case !s.backend.Healthy():
		// A role of the request path is down or stalled (/health says so too).
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

// handleTokenLoad is LightLLM's /token_load: floats with one dp rank,
// lists with several.
func (s *Server) handleTokenLoad(w http.ResponseWriter, _ *http.Request) {
	l := s.backend.TokenLoad()
	pick := func(v []float64) any {
		if len(v) == 1 {
			return v[0]
		}
		if v == nil {
			return []float64{}
		}
		return v
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"current_load":     pick(l.CurrentLoad),
		"logical_max_load": pick(l.LogicalMaxLoad),
		"dynamic_max_load": pick(l.DynamicMaxLoad),
	})
}

// handleTokens is LightLLM's /tokens: {"text", "parameters"?} →
// {"ntokens"}; parameters.add_special_tokens is honoured.
func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
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
	o.rejectUnknown(setOf("text", "parameters", "multimodal_params"))
	text := o.str("text")
	add := true
	if p := o.child("parameters"); p != nil {
		if v := p.boolean("add_special_tokens"); v != nil {
			add = *v
		}
		if p.err != nil {
			o.fail(p.err)
		}
	}
	if mm := o.child("multimodal_params"); mm != nil && len(mm.fields) > 0 {
		o.fail(unsupported("multimodal_params", "multimodal inputs are not supported by this server"))
	}
	switch {
	case o.err != nil:
		s.writeError(w, r, o.err)
		return
	case text == nil:
		s.writeError(w, r, badRequest(codeMissing, "text", "'text' is required"))
		return
	}
	if e := s.checkPromptChars(*text, "text"); e != nil {
		s.writeError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"ntokens": len(s.tok.Encode(*text, add))})
}

func (s *Server) handleModelName(w http.ResponseWriter, _ *http.Request) {
	name := s.opts.ModelName
	if name == "" {
		name = s.model
	}
	writeJSON(w, http.StatusOK, map[string]string{"model_name": name})
}

func (s *Server) handleServerInfo(w http.ResponseWriter, _ *http.Request) {
	info := s.opts.ServerInfo
	if info == nil {
		info = map[string]any{"model_name": s.model, "max_req_total_len": s.opts.MaxReqTotalLen}
	}
	writeJSON(w, http.StatusOK, info)
}

type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	MaxModelLen int    `json:"max_model_len"`
}

// handleModels is OpenAI's GET /v1/models with LightLLM's max_model_len.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	cards := make([]modelCard, len(s.served))
	for i, name := range s.served {
		cards[i] = modelCard{ID: name, Object: "model", Created: s.opts.Created.Unix(), OwnedBy: "lightllm",
			MaxModelLen: s.lengthLimit()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if s.opts.Metrics == nil {
		s.writeError(w, r, notFound("metrics are not enabled on this server"))
		return
	}
	s.opts.Metrics.ServeHTTP(w, r)
}
