package apiserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// bodyReadTimeout bounds reading one request body (slow senders).
const bodyReadTimeout = 60 * time.Second

// drainCap bounds how much of an oversized body is read and discarded so
// that the client, still sending, reads our 413 instead of a reset.
const drainCap = 64 << 20

type ctxKey int

const (
	requestIDKey ctxKey = iota
	healthProbeKey
	accessKey
)

// access is what the access log line reports beyond the HTTP exchange:
// the tokens of the generation the request ran (filled by run.close).
type access struct {
	mu                 sync.Mutex
	prompt, completion int
}

func (a *access) add(prompt, completion int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prompt += prompt
	a.completion += completion
}

// quietPaths are logged at debug level: probes and scrapes every few
// seconds would drown the requests.
var quietPaths = map[string]bool{"/health": true, "/healthz": true, "/liveness": true, "/readiness": true, "/metrics": true}

// HealthProbeHeader marks the health role's probe requests (pkg/health
// sends it with the value "1"). They are served as any request but kept
// out of the Observer's request metrics, as LightLLM keeps its probe (a
// negative request id) out of them, so that request counts are what
// clients sent.
const HealthProbeHeader = "X-Lightllm-Health-Probe"

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// isHealthProbe reports whether ctx is a health probe's request.
func isHealthProbe(ctx context.Context) bool {
	probe, _ := ctx.Value(healthProbeKey).(bool)
	return probe
}

// validRequestID accepts client ids that are safe to echo and log.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:/+=@", c) >= 0) {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// statusWriter remembers whether the header went out (a panic after that
// cannot become a 500) and the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack is passed through for completeness (no endpoint hijacks).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	return h.Hijack()
}

// wrap is the outermost middleware: request id, panic recovery, Connection:
// close while draining, and the access log.
func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		if s.draining.Load() || s.handingOver.Load() {
			w.Header().Set("Connection", "close")
		}
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		probe := r.Header.Get(HealthProbeHeader) == "1"
		if probe {
			ctx = context.WithValue(ctx, healthProbeKey, true)
		}
		acc := &access{}
		ctx = context.WithValue(ctx, accessKey, acc)
		r = r.WithContext(ctx)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
					panic(v)
				}
				s.log.Error().Str("request_id", id).Str("path", r.URL.Path).Interface("panic", v).
					Str("stack", string(debug.Stack())).Msg("handler panic")
				if sw.status != 0 {
					// Headers are out (a stream): cut the connection so the
					// client sees a broken response, not a truncated success.
					panic(http.ErrAbortHandler)
				}
				s.writeError(sw, r, internalError("internal error while handling the request"))
			}
			// The access log: one line per request.
			lvl := zerolog.InfoLevel
			if probe || quietPaths[r.URL.Path] {
				lvl = zerolog.DebugLevel
			}
			acc.mu.Lock()
			pt, ct := acc.prompt, acc.completion
			acc.mu.Unlock()
			s.log.WithLevel(lvl).Str("request_id", id).Str("method", r.Method).Str("path", r.URL.Path).
				Int("status", sw.status).Stringer("took", time.Since(start)).
				Int("prompt_tokens", pt).Int("completion_tokens", ct).Str("remote", r.RemoteAddr).Msg("request")
		}()
		next.ServeHTTP(sw, r)
	})
}

// route is one path's handlers by method.
type route map[string]http.HandlerFunc

// router dispatches on the exact path, answering 404 and 405 with JSON.
type router struct {
	s      *Server
	routes map[string]route
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	methods, ok := rt.routes[r.URL.Path]
	if !ok {
		rt.s.writeError(w, r, notFound(fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)))
		return
	}
	h, ok := methods[r.Method]
	if !ok {
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		sort.Strings(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		rt.s.writeError(w, r, &apiError{Status: http.StatusMethodNotAllowed, Type: typeInvalidRequest,
			Code: codeMethodNotAllowed, Message: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)",
				r.Method, r.URL.Path, strings.Join(allow, ", "))})
		return
	}
	h(w, r)
}

// generation wraps a handler that admits work: refused while draining, and
// counted so that Drain can wait for it.
func (s *Server) generation(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Count first, then check: Drain sets the flag and then waits for
		// the count, so no request slips in between.
		s.active.Add(1)
		defer s.active.Add(-1)
		if s.draining.Load() {
			s.writeError(w, r, unavailable(codeDraining, "the server is shutting down, retry on another replica", s.opts.RetryAfter))
			return
		}
		h(w, r)
	}
}

// readBody reads the whole body within MaxBodyBytes; a larger body is
// drained (up to a cap) and answered 413.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	limit := s.opts.MaxBodyBytes
	tooLarge := func() *apiError {
		w.Header().Set("Connection", "close")
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalidRequest, Code: codeTooLarge,
			Message: fmt.Sprintf("the request body exceeds the %d-byte limit", limit)}
	}
	if r.ContentLength > limit {
		if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") && r.ContentLength <= drainCap {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, drainCap))
		}
		return nil, tooLarge()
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout)) // unsupported writers just skip it
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest(codeInvalidJSON, "", "reading the request body failed: %v", err)
	}
	if int64(len(body)) > limit {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, drainCap))
		return nil, tooLarge()
	}
	return body, nil
}

// writeJSON sends v with status; HTML characters are not escaped (Python's
// json.dumps(ensure_ascii=False) leaves them, and so do clients' parsers).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// marshal is json.Marshal without HTML escaping and without the newline.
func marshal(v any) ([]byte, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(sb.String(), "\n")), nil
}

// newStdLogger routes net/http's own messages (TLS, accept errors) to zerolog.
func newStdLogger(log zerolog.Logger) *stdlog.Logger {
	l := log.Level(zerolog.WarnLevel)
	return stdlog.New(l, "", 0)
}
