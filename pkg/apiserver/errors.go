package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Error types in the OpenAI vocabulary ({"error": {"type": ...}}).
const (
	typeInvalidRequest = "invalid_request_error"
	typeNotFound       = "not_found_error"
	typeRateLimit      = "rate_limit_error"
	typeUnavailable    = "service_unavailable_error"
	typeServer         = "server_error"
)

// Error codes ({"error": {"code": ...}}) clients can switch on.
const (
	codeInvalidJSON      = "invalid_json"
	codeInvalidEncoding  = "invalid_encoding"
	codeInvalidType      = "invalid_type"
	codeInvalidValue     = "invalid_value"
	codeMissing          = "missing_required_parameter"
	codeUnknownParam     = "unknown_parameter"
	codeUnsupported      = "unsupported_parameter"
	codeContextLength    = "context_length_exceeded"
	codeTooLarge         = "request_too_large"
	codeNotFound         = "not_found"
	codeModelNotFound    = "model_not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeOverloaded       = "overloaded"
	codeNotReady         = "not_ready"
	codeDraining         = "draining"
	codeNoChatTemplate   = "no_chat_template"
	codeInternal         = "internal_error"
	codeInvalidAPIKey    = "invalid_api_key"
	codeCORSDenied       = "cors_origin_not_allowed"
)

// apiError is an error with the HTTP answer it deserves.
type apiError struct {
	Status     int
	Message    string
	Type       string
	Param      string // "" → null
	Code       string // "" → null
	RetryAfter time.Duration
	// observed: the Observer hears of this failure through RequestDone
	// (a generation whose sequence failed), so writeError does not report
	// it a second time through RequestFailed.
	observed bool
}

func (e *apiError) Error() string { return e.Message }

// errorBody is the OpenAI error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	d := errorDetail{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		p := e.Param
		d.Param = &p
	}
	if e.Code != "" {
		c := e.Code
		d.Code = &c
	}
	return errorBody{Error: d}
}

func badRequest(code, param, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: code, Param: param,
		Message: fmt.Sprintf(format, a...)}
}

func invalidValue(param, format string, a ...any) *apiError {
	return badRequest(codeInvalidValue, param, format, a...)
}

func unsupported(param, format string, a ...any) *apiError {
	return badRequest(codeUnsupported, param, format, a...)
}

func notFound(msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: typeNotFound, Code: codeNotFound, Message: msg}
}

func unavailable(code, msg string, retry time.Duration) *apiError {
	return &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Code: code, Message: msg, RetryAfter: retry}
}

func overloaded(msg string, retry time.Duration) *apiError {
	return &apiError{Status: http.StatusTooManyRequests, Type: typeRateLimit, Code: codeOverloaded, Message: msg, RetryAfter: retry}
}

func internalError(msg string) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Type: typeServer, Code: codeInternal, Message: msg}
}

// generationFailed answers a collected generation whose sequence ended in
// error: the run's RequestDone (Finish holds FinishError) counts the
// failure, this response must not count it again.
func generationFailed(msg string) *apiError {
	e := internalError("generation failed: " + msg)
	e.observed = true
	return e
}

// asAPIError turns any error into the answer for it: backend sentinels get
// their status, anything unknown is a 500 (a bug, logged by the caller).
func (s *Server) asAPIError(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, ErrOverloaded):
		return overloaded("the server is overloaded, retry later: "+err.Error(), s.opts.RetryAfter)
	case errors.Is(err, ErrDraining):
		return unavailable(codeDraining, "the server is shutting down, retry on another replica", s.opts.RetryAfter)
	case errors.Is(err, ErrNotReady):
		return unavailable(codeNotReady, "the server is not ready yet: "+err.Error(), s.opts.RetryAfter)
	case errors.Is(err, ErrInvalidRequest):
		return invalidValue("", "%s", err.Error())
	}
	return internalError("internal error: " + err.Error())
}

// writeError sends e as the response. Retry-After is whole seconds, at
// least 1.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.RetryAfter > 0 {
		secs := int((e.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	if e.Status >= 500 && e.Status != http.StatusServiceUnavailable {
		s.log.Error().Str("path", r.URL.Path).Int("status", e.Status).Str("request_id", requestIDFrom(r.Context())).
			Msg(e.Message)
	} else {
		s.log.Debug().Str("path", r.URL.Path).Int("status", e.Status).Str("request_id", requestIDFrom(r.Context())).
			Msg(e.Message)
	}
	if s.opts.Observer != nil && !e.observed && !isHealthProbe(r.Context()) {
		s.opts.Observer.RequestFailed(r.URL.Path, e.Status)
	}
	if isOllamaPath(r.URL.Path) {
		writeJSON(w, e.Status, ollamaError{Error: e.Message})
		return
	}
	writeJSON(w, e.Status, e.body())
}
