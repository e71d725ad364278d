package apiserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
)

// openPaths answer without an API key: the probes of load balancers,
// Kubernetes and the health role's own readiness checks.
var openPaths = map[string]bool{"/health": true, "/healthz": true, "/liveness": true, "/readiness": true}

// corsMaxAge is how long a browser may cache a preflight answer (seconds).
const corsMaxAge = "600"

// guard is the middleware between the request-id wrapper and the router:
// CORS (Options.AllowedOrigins), the OPTIONS preflight, and the API key
// check (Options.APIKeys). A preflight is answered before the key check:
// browsers never send credentials on it.
func (s *Server) guard(next http.Handler) http.Handler {
	keys := make([][32]byte, len(s.opts.APIKeys))
	for i, k := range s.opts.APIKeys {
		keys[i] = sha256.Sum256([]byte(k))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := s.corsHeaders(w, r)
		if r.Method == http.MethodOptions {
			s.handleOptions(w, r, next, allowed)
			return
		}
		if len(keys) > 0 && !s.keyFree(r) && !validKey(r, keys) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lightllm"`)
			s.writeError(w, r, &apiError{Status: http.StatusUnauthorized, Type: typeInvalidRequest, Code: codeInvalidAPIKey,
				Message: "Incorrect or missing API key: send it as the header `Authorization: Bearer KEY`"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// keyFree reports whether r is answered without a key: the probes, and
// the built-in pages themselves (static files holding no data: they must
// load to ask the user for the key that their API calls then send).
func (s *Server) keyFree(r *http.Request) bool {
	path := r.URL.Path
	return openPaths[path] || (path == "/metrics" && !s.opts.MetricsNeedAPIKey) || webPageRequest(r)
}

// validKey compares the bearer token with every key in constant time (over
// their hashes, so the length of a key does not leak either).
func validKey(r *http.Request, keys [][32]byte) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "bearer ")
	}
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	match := 0
	for i := range keys {
		match |= subtle.ConstantTimeCompare(sum[:], keys[i][:])
	}
	return match == 1
}

// corsHeaders adds the CORS response headers when the request's Origin is
// allowed, and reports whether it is.
func (s *Server) corsHeaders(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.opts.AllowedOrigins) == 0 {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	switch {
	case slices.Contains(s.opts.AllowedOrigins, origin):
		h.Set("Access-Control-Allow-Origin", origin)
	case slices.Contains(s.opts.AllowedOrigins, "*"):
		h.Set("Access-Control-Allow-Origin", "*")
	default:
		return false
	}
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
	return true
}

// handleOptions answers OPTIONS on a known path: 204 with Allow, plus the
// preflight headers for an allowed origin; a preflight from another origin
// gets 403 (the browser would refuse the answer anyway; this says why).
func (s *Server) handleOptions(w http.ResponseWriter, r *http.Request, next http.Handler, allowed bool) {
	rt, ok := next.(*router)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	methods, ok := rt.routes[r.URL.Path]
	if !ok {
		rt.ServeHTTP(w, r) // the router's 404
		return
	}
	allow := []string{http.MethodOptions}
	for m := range methods {
		allow = append(allow, m)
	}
	slices.Sort(allow)
	h := w.Header()
	h.Set("Allow", strings.Join(allow, ", "))
	if reqMethod := r.Header.Get("Access-Control-Request-Method"); reqMethod != "" && r.Header.Get("Origin") != "" {
		if !allowed {
			s.writeError(w, r, &apiError{Status: http.StatusForbidden, Type: typeInvalidRequest, Code: codeCORSDenied,
				Message: "origin " + r.Header.Get("Origin") + " is not allowed (the server's --allowed_origins)"})
			return
		}
		h.Set("Access-Control-Allow-Methods", strings.Join(allow, ", "))
		reqHeaders := r.Header.Get("Access-Control-Request-Headers")
		if reqHeaders == "" {
			reqHeaders = "Authorization, Content-Type, X-Request-Id"
		}
		h.Set("Access-Control-Allow-Headers", reqHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
}
