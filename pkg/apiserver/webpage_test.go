package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func TestWebRoutes(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	cases := map[string]struct {
		method, path string
		status       int
		ctype        string
		csp          bool
	}{
		"chat page":           {"GET", "/", 200, "text/html", true},
		"chat page head":      {"HEAD", "/", 200, "text/html", true},
		"status page":         {"GET", "/dashboard", 200, "text/html", true},
		"script":              {"GET", "/ui/chat.js", 200, "text/javascript", false},
		"style":               {"GET", "/ui/style.css", 200, "text/css", false},
		"unknown asset":       {"GET", "/ui/nope.js", 404, "application/json", false},
		"status json":         {"GET", "/dashboard/status", 200, "application/json", false},
		"restart needs POST":  {"GET", "/dashboard/restart", 405, "application/json", false},
		"status is read only": {"POST", "/dashboard/status", 405, "application/json", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, tc.method, tc.path, nil)
			if r.status != tc.status || !strings.HasPrefix(r.header.Get("Content-Type"), tc.ctype) {
				t.Fatalf("%s %s: %d %q, want %d %q: %s", tc.method, tc.path, r.status, r.header.Get("Content-Type"), tc.status, tc.ctype, r.body)
			}
			if csp := r.header.Get("Content-Security-Policy"); tc.csp != (csp != "") || tc.csp && !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy = %q", csp)
			}
		})
	}
	t.Run("etag revalidates", func(t *testing.T) {
		first := ts.get(t, "/ui/common.js")
		etag := first.header.Get("ETag")
		r := ts.do(t, "GET", "/ui/common.js", nil, "If-None-Match", etag)
		if etag == "" || r.status != http.StatusNotModified || len(r.body) != 0 {
			t.Fatalf("ETag %q, revalidation answered %d with %d bytes", etag, r.status, len(r.body))
		}
	})
	t.Run("native POST / unchanged", func(t *testing.T) {
		r := ts.post(t, "/", `{"inputs":"Once upon a time","parameters":{},"stream":false}`)
		got := decode[nativeResp](t, r.body)
		if r.status != 200 || len(got.GeneratedText) != 1 {
			t.Fatalf("POST / = %d %s", r.status, r.body)
		}
	})
}

// webStatus is the part of /dashboard/status these tests read.
type webStatus struct {
	Model          string `json:"model"`
	Chat           bool   `json:"chat"`
	APIKey         bool   `json:"api_key_required"`
	RestartEnabled bool   `json:"restart_enabled"`
	Supervisor     *struct {
		Instance string `json:"instance"`
	} `json:"supervisor"`
	Roles []struct {
		Role     string  `json:"role"`
		Pid      int     `json:"pid"`
		State    string  `json:"state"`
		Uptime   float64 `json:"uptime_seconds"`
		Restarts int     `json:"restarts"`
		LastExit string  `json:"last_exit"`
	} `json:"roles"`
	RolesError string                 `json:"roles_error"`
	Load       *apiserver.Load        `json:"load"`
	Traffic    apiserver.TrafficStats `json:"traffic"`
}

func TestWebStatus(t *testing.T) {
	started := time.Now().Add(-time.Minute)
	roles := func(context.Context) (*rolectl.Status, error) {
		return &rolectl.Status{Instance: "8000", SupervisorPid: 10, Phase: rolectl.PhaseRunning, Roles: []rolectl.RoleStatus{
			{Role: "detokenizer", Pid: 42, State: rolectl.StateReady, Ready: true, StartedAt: started, Restarts: 2, LastExit: "killed by SIGKILL"},
			{Role: "infer", State: rolectl.StateBackoff, Restarts: 1, LastExit: "exit status 1"},
		}}, nil
	}
	load := func() apiserver.Load {
		return apiserver.Load{Waiting: 3, Running: 2, KVUsage: 0.25, KVCapacity: 400, KVUsed: 100}
	}
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML, Web: apiserver.WebOptions{Roles: roles, Load: load}}, fakebackend.Options{})
	script := ts.tok.Encode(fakebackend.GreedyReply, false)

	if r := ts.post(t, "/generate", `{"inputs":"Once upon a time","parameters":{"do_sample":false}}`); r.status != 200 {
		t.Fatalf("generate: %d %s", r.status, r.body)
	}
	time.Sleep(1100 * time.Millisecond) // the tokens/s series ends at the last whole second
	st := decode[webStatus](t, ts.get(t, "/dashboard/status").body)
	if !st.Chat || st.APIKey || st.RestartEnabled || st.Supervisor == nil || st.Supervisor.Instance != "8000" {
		t.Errorf("status header: %+v", st)
	}
	if len(st.Roles) != 2 || st.Roles[0].Pid != 42 || st.Roles[0].Restarts != 2 || st.Roles[0].Uptime < 59 ||
		st.Roles[0].LastExit != "killed by SIGKILL" || st.Roles[1].State != "backoff" || st.Roles[1].Uptime != 0 {
		t.Errorf("roles: %+v", st.Roles)
	}
	if st.Load == nil || *st.Load != load() {
		t.Errorf("load = %+v, want %+v", st.Load, load())
	}
	tr := st.Traffic
	var tokens int64
	for _, n := range tr.TokensPerSecond {
		tokens += n
	}
	// The fake backend's reply, plus its EOS token.
	if tokens != int64(len(script)+1) || tr.Admitted != 1 || tr.Finished != 1 || tr.Cancelled != 0 || tr.TTFT.Count != 1 ||
		tr.ITL.Count != len(script) || len(tr.TokensPerSecond) != tr.WindowSeconds {
		t.Errorf("traffic: %d tokens (want %d), %+v", tokens, len(script)+1, tr)
	}
	if tr.PromptCacheHitRate == nil || *tr.PromptCacheHitRate != 0 || tr.PromptTokens == 0 {
		t.Errorf("prompt cache: %v of %d", tr.PromptCacheHitRate, tr.PromptTokens)
	}

	t.Run("no supervisor", func(t *testing.T) {
		ts := startServer(t, apiserver.Options{Web: apiserver.WebOptions{Roles: func(context.Context) (*rolectl.Status, error) {
			return nil, rolectl.ErrNotRunning
		}}}, fakebackend.Options{})
		st := decode[webStatus](t, ts.get(t, "/dashboard/status").body)
		if !strings.Contains(st.RolesError, "supervisor not running") || len(st.Roles) != 0 || st.Load != nil || st.Chat {
			t.Errorf("without a supervisor: %+v", st)
		}
	})
}

func TestWebStatusCountsCancelled(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{StepDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/generate_stream",
		strings.NewReader(`{"inputs":"Once upon a time","parameters":{"do_sample":false}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	_, _ = resp.Body.Read(buf) // the stream has started
	cancel()
	resp.Body.Close()
	waitFor(t, "the cancelled request to be counted", func() bool {
		st := decode[webStatus](t, ts.get(t, "/dashboard/status").body)
		return st.Traffic.Cancelled == 1 && st.Traffic.Finished == 0 && st.Traffic.Admitted == 1
	})
}

func TestWebRestart(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	restart := func(_ context.Context, role string) error {
		mu.Lock()
		defer mu.Unlock()
		if role == "infer" {
			return errors.New("instance is launching; try again when it is running")
		}
		asked = append(asked, role)
		return nil
	}
	keyed := startServer(t, apiserver.Options{APIKeys: []string{"sekret"}, Web: apiserver.WebOptions{RestartRole: restart}}, fakebackend.Options{})
	open := startServer(t, apiserver.Options{Web: apiserver.WebOptions{RestartRole: restart}}, fakebackend.Options{})
	cases := map[string]struct {
		ts     *testServer
		body   string
		auth   string
		status int
		code   string
	}{
		"no api key configured: refused": {open, `{"role":"router"}`, "Bearer sekret", 403, "restart_disabled"},
		"no credentials":                 {keyed, `{"role":"router"}`, "", 401, "invalid_api_key"},
		"wrong key":                      {keyed, `{"role":"router"}`, "Bearer nope", 401, "invalid_api_key"},
		"not a bearer token":             {keyed, `{"role":"router"}`, "sekret", 401, "invalid_api_key"},
		"unknown role":                   {keyed, `{"role":"gpu"}`, "Bearer sekret", 400, "invalid_value"},
		"missing role":                   {keyed, `{}`, "Bearer sekret", 400, "missing_required_parameter"},
		"unknown field":                  {keyed, `{"role":"router","now":true}`, "Bearer sekret", 400, "unknown_parameter"},
		"bad json":                       {keyed, `{"role":`, "Bearer sekret", 400, "invalid_json"},
		"supervisor refuses":             {keyed, `{"role":"infer"}`, "Bearer sekret", 503, "restart_failed"},
		"restarted":                      {keyed, `{"role":"detokenizer"}`, "Bearer sekret", 200, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			r := tc.ts.post(t, "/dashboard/restart", tc.body, hdr...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != "" {
				e := decode[errResp](t, r.body)
				if e.Error.Code == nil || *e.Error.Code != tc.code {
					t.Errorf("code %v, want %s: %s", e.Error.Code, tc.code, r.body)
				}
			}
		})
	}
	if len(asked) != 1 || asked[0] != "detokenizer" {
		t.Errorf("restarts asked of the supervisor: %v, want [detokenizer]", asked)
	}
	st := decode[webStatus](t, keyed.do(t, "GET", "/dashboard/status", nil, "Authorization", "Bearer sekret").body)
	if !st.APIKey || !st.RestartEnabled {
		t.Errorf("with a key the page offers restarts: %+v", st)
	}
}

// TestWebPagesWithAPIKey: with --api_key the pages still load (they hold
// no data and must ask for the key), while their data and every API call
// need it.
func TestWebPagesWithAPIKey(t *testing.T) {
	ts := startServer(t, apiserver.Options{APIKeys: []string{"sekret"}}, fakebackend.Options{})
	cases := map[string]struct {
		method, path, auth string
		status             int
	}{
		"chat page":              {"GET", "/", "", 200},
		"status page":            {"GET", "/dashboard", "", 200},
		"asset":                  {"HEAD", "/ui/dashboard.js", "", 200},
		"status json":            {"GET", "/dashboard/status", "", 401},
		"status json with key":   {"GET", "/dashboard/status", "Bearer sekret", 200},
		"native POST /":          {"POST", "/", "", 401},
		"restart without a key":  {"POST", "/dashboard/restart", "", 401},
		"restart, no supervisor": {"POST", "/dashboard/restart", "Bearer sekret", 503},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			body := []byte(nil)
			if tc.method == "POST" {
				body = []byte(`{"role":"router"}`)
			}
			if r := ts.do(t, tc.method, tc.path, body, hdr...); r.status != tc.status {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, r.status, tc.status, r.body)
			}
		})
	}
}
