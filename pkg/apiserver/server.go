// Package apiserver is the HTTP front end of the server: LightLLM's native
// API (/generate, /generate_stream), the OpenAI-compatible API
// (/v1/completions, /v1/chat/completions, /v1/models) and the info and
// health endpoints, over a Backend that runs the requests. It validates,
// tokenizes (chat templates included), applies LightLLM's length rule,
// admits with a bounded number of requests in flight, streams Server-Sent
// Events, aborts the request of a client that goes away, and drains
// gracefully. docs/api.md describes the wire formats.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/chatout"
	"github.com/lightllm-go/lightllm/pkg/chattmpl"
	"github.com/lightllm-go/lightllm/pkg/rawconn"
)

// Tokenizer is what the server needs from pkg/tokenizer.
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int32
	Decode(ids []int32, skipSpecial bool) string
	VocabSize() int
	BOS() int32
	EOS() int32
	Token(id int32) string
	TokenBytes(id int32) []byte
	ChatTemplate() string
}

// Observer receives per-request statistics, e.g. for pkg/metrics; its
// methods must be cheap and must not block.
type Observer interface {
	// RequestDone reports a generation request that completed.
	RequestDone(RequestStats)
	// RequestFailed reports every error response (LightLLM's
	// lightllm_request_failure) but those for a request RequestDone
	// reports: a failed sequence is counted there, once.
	RequestFailed(path string, status int)
}

// AdmissionObserver is an Observer that also hears of every admitted
// generation request, before it runs: LightLLM counts lightllm_request_count
// at admission, so requests whose client goes away still count. Health
// probes are left out, as from every Observer method.
type AdmissionObserver interface {
	RequestAdmitted(path string)
}

// AbortObserver is an Observer that also hears of every generation request
// that ended unfinished because its client went away (disconnect, a
// failed write, a closed stream): lightllm_request_aborted. Health probes
// are left out.
type AbortObserver interface {
	RequestAborted(path string)
}

// RequestStats describes one completed group.
type RequestStats struct {
	Path             string
	PromptTokens     int
	CompletionTokens int // all sequences together
	PromptCacheLen   int
	MaxNewTokens     int
	FirstToken       time.Duration // arrival → first token
	Total            time.Duration
	Finish           []FinishReason
}

// Options configure a Server. Zero values get the defaults noted.
type Options struct {
	// ModelName is the served name (--model_name); "" or LightLLM's
	// "default_model_name" is replaced by the base name of ModelDir in
	// /v1/models and responses, as LightLLM does.
	ModelName string
	ModelDir  string
	// MaxReqTotalLen is --max_req_total_len (prompt + output tokens). Required.
	MaxReqTotalLen int
	// MaxInFlight bounds the sequences admitted at once by this server
	// (running_max_req_size + max_waiting_reqs); past it requests get 429.
	// 0: no bound here (the backend may still say ErrOverloaded).
	MaxInFlight int
	// MaxBodyBytes bounds a request body; larger bodies get 413 (default 16 MiB).
	MaxBodyBytes int64
	// RetryAfter is the Retry-After of 429/503 answers (default 1s).
	RetryAfter time.Duration
	// GracefulTimeout bounds the wait for in-flight requests in Run's
	// shutdown (default 60s, LightLLM's).
	GracefulTimeout time.Duration
	// Superseded, when set and true at Run's stop, says a newer apiserver
	// already serves the same listening socket (a zero-gap restart): Run
	// hands the clients over instead of draining (handover.go).
	Superseded func() bool
	// ChatTemplate replaces the tokenizer's chat template (--chat_template).
	ChatTemplate string
	// ToolCallParser is the tool call format (--tool_call_parser: hermes,
	// llama3_json, mistral); "" picks it from the chat template.
	ToolCallParser string
	// ReasoningParser splits thinking from the answer (--reasoning_parser:
	// qwen3, deepseek-r1, gpt-oss, or none); "" picks gpt-oss for templates
	// that render harmony channels, qwen3 for those that render thinking
	// blocks.
	ReasoningParser string
	// CheckConstraint compiles a constraint to see that it can be
	// enforced (an error names what cannot, e.g. a schema keyword); nil
	// refuses every constraint.
	CheckConstraint func(*Constraint) error
	// VocabSize bounds token ids in prompts (default: the tokenizer's).
	VocabSize int
	// GenerationDefaults from the model's generation_config.json.
	GenerationDefaults GenerationDefaults
	// SkipSpecialTokens is the native API's default (LightLLM's env
	// SKIP_SPECIAL_TOKENS); the OpenAI endpoints default to true.
	SkipSpecialTokens bool
	// InputPenalty is LightLLM's env INPUT_PENALTY default.
	InputPenalty bool
	// ServedModelNames (--served_model_name, vLLM's flag) are the names
	// the OpenAI API serves the model under: the first is the name
	// responses and /v1/models' first entry carry, replacing ModelName
	// there; a request naming another model gets 404 model_not_found.
	ServedModelNames []string
	// StrictModelName answers 404 model_not_found to OpenAI requests that
	// name another model (LightLLM ignores the name); implied by
	// ServedModelNames.
	StrictModelName bool
	// APIKeys, when set, are the bearer tokens every endpoint but the
	// probes (/health, /healthz, /liveness, /readiness) requires; 401
	// otherwise. MetricsNeedAPIKey puts /metrics behind them too.
	APIKeys           []string
	MetricsNeedAPIKey bool
	// AllowedOrigins enables CORS for these origins ("*": any) and
	// answers their preflight OPTIONS requests.
	AllowedOrigins []string
	// ModelDetails describe the model to ollama clients (/api/tags, /api/show).
	ModelDetails ModelDetails
	// Metrics serves /metrics (the metric role's text plus live gauges).
	Metrics http.Handler
	// ServerInfo is what /get_server_info returns (the resolved config).
	ServerInfo any
	// Observer gets per-request statistics; may be nil.
	Observer Observer
	// Created is the model's "created" time in /v1/models (default: New's time).
	Created time.Time
	// Now is the clock for response timestamps (tests pin it).
	Now func() time.Time
	// IdleTimeout is the keep-alive idle timeout (default 10s, hypercorn's).
	IdleTimeout time.Duration
	// Web feeds the built-in chat and status pages (webpage.go).
	Web WebOptions
	// Embeddings configures /v1/embeddings (embeddings.go); the zero value
	// answers it 400 naming why.
	Embeddings EmbeddingOptions
}

// Server is the HTTP front end.
type Server struct {
	opts    Options
	backend Backend
	tok     Tokenizer
	log     zerolog.Logger
	vocab   int
	model   string   // served model name
	served  []string // every served name, model first

	unknownFields fieldWarner // OpenAI fields ignored so far

	chat    *chattmpl.Template
	chatErr error // why chat is unavailable

	handler http.Handler
	http    *http.Server

	live *liveStats // what the status page shows of the traffic

	draining    atomic.Bool
	handingOver atomic.Bool  // handover.go
	conns       atomic.Int64 // open client connections (handover.go)
	active      atomic.Int64 // generation requests in flight
	seqs        atomic.Int64 // sequences admitted (MaxInFlight)
	mu          sync.Mutex   // guards http
}

// New builds a Server; it does not listen yet (see Serve and Run).
func New(opts Options, backend Backend, tok Tokenizer, log zerolog.Logger) (*Server, error) {
	if backend == nil || tok == nil {
		return nil, errors.New("apiserver: a backend and a tokenizer are required")
	}
	if opts.MaxReqTotalLen <= 0 {
		return nil, fmt.Errorf("apiserver: max_req_total_len must be > 0, got %d", opts.MaxReqTotalLen)
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 16 << 20
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.GracefulTimeout <= 0 {
		opts.GracefulTimeout = 60 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Created.IsZero() {
		opts.Created = opts.Now()
	}
	if n := opts.ToolCallParser; n != "" && !slices.Contains(chatout.ToolParsers(), n) {
		return nil, fmt.Errorf("apiserver: unknown tool call parser %q (have %s)", n, strings.Join(chatout.ToolParsers(), ", "))
	}
	if n := opts.ReasoningParser; n != "" && n != "none" && !slices.Contains(chatout.ReasoningParsers(), n) {
		return nil, fmt.Errorf("apiserver: unknown reasoning parser %q (have %s, none)", n, strings.Join(chatout.ReasoningParsers(), ", "))
	}
	s := &Server{opts: opts, backend: backend, tok: tok, log: log.With().Str("component", "apiserver").Logger(), live: newLiveStats()}
	s.vocab = opts.VocabSize
	if s.vocab <= 0 {
		s.vocab = tok.VocabSize()
	}
	s.model = opts.ModelName
	if (s.model == "" || s.model == "default_model_name") && opts.ModelDir != "" {
		s.model = filepath.Base(strings.TrimRight(opts.ModelDir, "/"))
	}
	if s.model == "" {
		s.model = "default_model_name"
	}
	s.served = []string{s.model}
	if len(opts.ServedModelNames) > 0 {
		s.model = opts.ServedModelNames[0]
		s.served = append([]string(nil), opts.ServedModelNames...)
	}
	src := opts.ChatTemplate
	if src == "" {
		src = tok.ChatTemplate()
	}
	if src == "" {
		s.chatErr = errors.New("this model has no chat template, so /v1/chat/completions cannot build a prompt; " +
			"use /v1/completions or /generate, or start the server with --chat_template FILE")
	} else if t, err := chattmpl.New(src); err != nil {
		s.chatErr = fmt.Errorf("the model's chat template cannot be used: %w", err)
		s.log.Warn().Err(err).Msg("chat template does not compile; chat completions are disabled")
	} else {
		s.chat = t
	}
	s.handler = s.routes()
	return s, nil
}

// Handler is the server's http.Handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.handler }

// ModelName is the served model name.
func (s *Server) ModelName() string { return s.model }

// Serve answers HTTP on l until Shutdown; it returns http.ErrServerClosed
// after a Shutdown.
func (s *Server) Serve(l net.Listener) error {
	srv := s.httpServer()
	// Raw socket reads and writes: each streamed token is one write, and
	// through net.Conn's syscalls they kept sysmon polling (pkg/rawconn).
	return srv.Serve(rawconn.Listener(l))
}

func (s *Server) httpServer() *http.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		s.http = &http.Server{
			Handler:           s.handler,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       s.opts.IdleTimeout,
			MaxHeaderBytes:    1 << 20,
			ErrorLog:          newStdLogger(s.log),
			ConnState:         s.countConn,
		}
	}
	return s.http
}

// Run serves on l until ctx is done, then drains (up to GracefulTimeout)
// and shuts down. It returns nil after a clean stop.
func (s *Server) Run(ctx context.Context, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	if s.opts.Superseded != nil && s.opts.Superseded() {
		return s.handOver(l, errc)
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.GracefulTimeout)
	defer cancel()
	err := s.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Drain stops admitting: new generation requests get 503 with Retry-After
// and /readiness and /health fail. It then waits until the requests in
// flight have finished or ctx is done; in that case it returns an error
// saying how many are left (they keep running).
func (s *Server) Drain(ctx context.Context) error {
	if !s.draining.Swap(true) {
		s.log.Info().Int64("in_flight", s.active.Load()).Msg("draining: no new requests")
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		n := s.active.Load()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain: %d requests still in flight: %w", n, ctx.Err())
		case <-t.C:
		}
	}
}

// Shutdown drains (bounded by ctx) and then closes the listeners and idle
// connections; requests still running when ctx ends are cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	derr := s.Drain(ctx)
	srv := s.httpServer()
	if derr != nil {
		cerr := srv.Close()
		return errors.Join(derr, cerr)
	}
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// Draining reports whether Drain has been called.
func (s *Server) Draining() bool { return s.draining.Load() }

// InFlight is the number of generation requests being served.
func (s *Server) InFlight() int { return int(s.active.Load()) }
