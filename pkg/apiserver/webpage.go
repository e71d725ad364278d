package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver/webui"
	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// WebOptions feed the built-in pages: the chat playground at GET / and the
// status page at GET /dashboard, whose numbers come from GET
// /dashboard/status. Every field may be left zero; the page then says what
// it lacks.
type WebOptions struct {
	// Roles returns the supervisor's view of the roles (rolectl's
	// Controller.Status). An error (no supervisor: systemd, a test) is shown
	// on the page instead of the table.
	Roles func(ctx context.Context) (*rolectl.Status, error)
	// RestartRole asks the supervisor to restart a role on an operator's
	// behalf, as `lightllm restart ROLE` does.
	RestartRole func(ctx context.Context, role string) error
	// Load reads the live queue and KV numbers (shm's load counters).
	Load func() Load
}

// Load is the router's and infer's live load as the status page shows it.
type Load struct {
	Waiting    int64   `json:"waiting"`
	Running    int64   `json:"running"`
	KVUsage    float64 `json:"kv_usage"`     // 0..1
	KVCapacity int64   `json:"kv_capacity"`  // tokens
	KVUsed     int64   `json:"kv_used"`      // tokens held by requests
	KVCached   int64   `json:"kv_evictable"` // prompt-cache tokens nobody references
}

// Error codes of the status page's endpoints.
const (
	codeRestartDisabled = "restart_disabled"
	codeRestartFailed   = "restart_failed"
)

// webPageRequest reports a GET or HEAD of a page or an asset: answered
// without an API key (see keyFree), as is /dashboard/auth, which only
// says whether a key is needed. /dashboard/status and /dashboard/restart
// are not among them.
func webPageRequest(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/" || p == "/dashboard" || p == "/dashboard/auth" || strings.HasPrefix(p, "/ui/")
}

// rolesCacheFor bounds how often status polls (one per open page per
// second) reach the supervisor.
const rolesCacheFor = 500 * time.Millisecond

// addWebRoutes adds the pages, their assets and their JSON endpoints to
// the route table. The native POST / stays as it is; GET / is the chat.
func (s *Server) addWebRoutes(routes map[string]route) {
	page := func(name string) http.HandlerFunc {
		a := webui.Asset(name)
		return func(w http.ResponseWriter, r *http.Request) { serveAsset(w, r, a) }
	}
	if routes["/"] == nil {
		routes["/"] = route{}
	}
	routes["/"][http.MethodGet] = page("index.html")
	routes["/"][http.MethodHead] = page("index.html")
	routes["/dashboard"] = route{http.MethodGet: page("dashboard.html"), http.MethodHead: page("dashboard.html")}
	for _, name := range webui.Names() {
		h := page(name)
		routes["/ui/"+name] = route{http.MethodGet: h, http.MethodHead: h}
	}
	rc := &rolesCache{}
	routes["/dashboard/status"] = route{http.MethodGet: func(w http.ResponseWriter, r *http.Request) { s.handleWebStatus(w, r, rc) }}
	routes["/dashboard/restart"] = route{http.MethodPost: s.handleWebRestart}
	// Key-free: the pages ask it first, so that they prompt for the key
	// before a call fails with 401 (which the browser logs as an error).
	routes["/dashboard/auth"] = route{http.MethodGet: func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"api_key_required": len(s.opts.APIKeys) > 0})
	}}
}

// serveAsset answers one embedded file, with an ETag so that a reload
// costs a 304, and, for pages, a Content-Security-Policy that lets only
// the page's own scripts run: even a rendering bug could not make model
// text execute.
func serveAsset(w http.ResponseWriter, r *http.Request, a *webui.File) {
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.ETag)
	if strings.HasPrefix(a.ContentType, "text/html") {
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
	}
	if r.Header.Get("If-None-Match") == a.ETag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(a.Body)
}

// webRole is one role's row on the status page.
type webRole struct {
	Role          string    `json:"role"`
	Pid           int       `json:"pid"`
	State         string    `json:"state"`
	Ready         bool      `json:"ready"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	Restarts      int       `json:"restarts"`
	LastExit      string    `json:"last_exit"`
	// HeartbeatAge is the seconds since the supervisor last heard from it.
	HeartbeatAge *float64 `json:"heartbeat_age_seconds"`
}

type webSupervisor struct {
	Instance  string    `json:"instance"`
	Pid       int       `json:"pid"`
	Phase     string    `json:"phase"`
	StartedAt time.Time `json:"started_at"`
}

// webStatus is GET /dashboard/status.
type webStatus struct {
	Time           time.Time      `json:"time"`
	Model          string         `json:"model"`
	ModelDir       string         `json:"model_dir"`
	Chat           bool           `json:"chat"` // /v1/chat/completions can build prompts
	ChatError      string         `json:"chat_error,omitempty"`
	MaxReqTotalLen int            `json:"max_req_total_len"`
	Ready          bool           `json:"ready"`
	Healthy        bool           `json:"healthy"`
	Draining       bool           `json:"draining"`
	APIKey         bool           `json:"api_key_required"`
	RestartEnabled bool           `json:"restart_enabled"`
	Supervisor     *webSupervisor `json:"supervisor"`
	Roles          []webRole      `json:"roles"`
	RolesError     string         `json:"roles_error,omitempty"`
	Load           *Load          `json:"load"`
	InFlight       int            `json:"in_flight"` // HTTP generation requests being served here
	Traffic        TrafficStats   `json:"traffic"`
	Config         any            `json:"config"`
}

// rolesCache shares one supervisor answer between the polls of
// rolesCacheFor.
type rolesCache struct {
	mu  sync.Mutex
	at  time.Time
	st  *rolectl.Status
	err error
}

func (c *rolesCache) get(ctx context.Context, f func(context.Context) (*rolectl.Status, error)) (*rolectl.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < rolesCacheFor {
		return c.st, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c.st, c.err = f(ctx)
	c.at = time.Now()
	return c.st, c.err
}

func (s *Server) handleWebStatus(w http.ResponseWriter, r *http.Request, rc *rolesCache) {
	now := time.Now()
	wo := s.opts.Web
	out := webStatus{Time: now.UTC(), Model: s.model, ModelDir: s.opts.ModelDir, Chat: s.chat != nil,
		MaxReqTotalLen: s.opts.MaxReqTotalLen, Ready: s.backend.Ready(), Healthy: s.backend.Healthy(),
		Draining: s.draining.Load(), APIKey: len(s.opts.APIKeys) > 0, RestartEnabled: len(s.opts.APIKeys) > 0 && wo.RestartRole != nil,
		Roles: []webRole{}, InFlight: int(s.active.Load()), Traffic: s.live.snapshot(now), Config: s.opts.ServerInfo}
	if s.chatErr != nil {
		out.ChatError = s.chatErr.Error()
	}
	if out.Config == nil {
		out.Config = map[string]any{"model_name": s.model, "max_req_total_len": s.opts.MaxReqTotalLen}
	}
	if wo.Load != nil {
		l := wo.Load()
		out.Load = &l
	}
	switch {
	case wo.Roles == nil:
		out.RolesError = "this server was not given the supervisor's status"
	default:
		st, err := rc.get(r.Context(), wo.Roles)
		if err != nil {
			out.RolesError = err.Error()
			break
		}
		out.Supervisor = &webSupervisor{Instance: st.Instance, Pid: st.SupervisorPid, Phase: st.Phase, StartedAt: st.StartedAt}
		for _, ro := range st.Roles {
			row := webRole{Role: ro.Role, Pid: ro.Pid, State: ro.State, Ready: ro.Ready, StartedAt: ro.StartedAt,
				UptimeSeconds: ro.Uptime(now).Seconds(), Restarts: ro.Restarts, LastExit: ro.LastExit}
			if !ro.LastHeartbeat.IsZero() && ro.Pid != 0 {
				age := max(now.Sub(ro.LastHeartbeat).Seconds(), 0)
				row.HeartbeatAge = &age
			}
			out.Roles = append(out.Roles, row)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// handleWebRestart is POST /dashboard/restart {"role": NAME}: the status
// page's restart button. It needs --api_key: the guard has checked the
// bearer token by the time this runs; without any key configured, anyone
// who reaches the port could restart roles, so it is refused.
func (s *Server) handleWebRestart(w http.ResponseWriter, r *http.Request) {
	wo := s.opts.Web
	switch {
	case len(s.opts.APIKeys) == 0:
		s.writeError(w, r, &apiError{Status: http.StatusForbidden, Type: typeInvalidRequest, Code: codeRestartDisabled,
			Message: "restarting roles over HTTP is disabled: start the server with --api_key, or use `lightllm restart ROLE`"})
		return
	case wo.RestartRole == nil:
		s.writeError(w, r, unavailable(codeRestartFailed, "this server has no supervisor to restart roles", 0))
		return
	}
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
	o.rejectUnknown(setOf("role"))
	role := o.str("role")
	switch {
	case o.err != nil:
		s.writeError(w, r, o.err)
		return
	case role == nil:
		s.writeError(w, r, badRequest(codeMissing, "role", "'role' is required"))
		return
	case !config.IsRole(*role):
		s.writeError(w, r, invalidValue("role", "unknown role %q (roles: %s)", *role, strings.Join(config.AllRoles(), ", ")))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if err := wo.RestartRole(ctx, *role); err != nil {
		s.writeError(w, r, unavailable(codeRestartFailed, fmt.Sprintf("restart %s: %v", *role, err), 0))
		return
	}
	s.log.Warn().Str("target", *role).Str("remote", r.RemoteAddr).Msg("role restart requested from the status page")
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "role": *role})
}
