package apiserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/apiserver/fakebackend"
)

// TestClientDisconnectAborts: a client that goes away, streaming or not,
// gets its group aborted, and the backend frees it.
func TestClientDisconnectAborts(t *testing.T) {
	cases := map[string]struct {
		path, body string
		stream     bool
	}{
		"native stream":      {"/generate_stream", `{"inputs":"Hi","parameters":{"ignore_eos":true}}`, true},
		"native":             {"/generate", `{"inputs":"Hi","parameters":{"ignore_eos":true}}`, false},
		"chat stream":        {"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"stream":true,"ignore_eos":true}`, true},
		"completions":        {"/v1/completions", `{"prompt":["Hi","Ho"],"ignore_eos":true}`, false},
		"completions stream": {"/v1/completions", `{"prompt":"Hi","stream":true,"ignore_eos":true}`, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{StepDelay: 2 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+tc.path, strings.NewReader(tc.body))
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					if tc.stream {
						buf := make([]byte, 64)
						_, err = resp.Body.Read(buf) // the first event arrived
						cancel()
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errc <- err
			}()
			if !tc.stream {
				waitFor(t, "submission", func() bool { return len(ts.be.Submitted()) > 0 })
				time.Sleep(10 * time.Millisecond)
				cancel()
			}
			<-errc
			waitFor(t, "abort", func() bool { return len(ts.be.Aborted()) > 0 })
			waitFor(t, "backend to free the groups", func() bool { return ts.be.Running() == 0 })
			waitFor(t, "in-flight count to drop", func() bool { return ts.srv.InFlight() == 0 })
		})
	}
}

func TestOverloadAndNotReady(t *testing.T) {
	t.Run("max in flight", func(t *testing.T) {
		ts := startServer(t, apiserver.Options{MaxInFlight: 2, RetryAfter: 3 * time.Second}, fakebackend.Options{})
		ts.be.Pause()
		done := make(chan response, 1)
		go func() {
			done <- ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"n":2,"best_of":2,"max_new_tokens":3}}`)
		}()
		waitFor(t, "first request admitted", func() bool { return len(ts.be.Submitted()) == 1 })
		r := ts.post(t, "/v1/completions", `{"prompt":"Hi","max_tokens":2}`)
		if e := decode[errResp](t, r.body); r.status != 429 || r.header.Get("Retry-After") != "3" || *e.Error.Code != "overloaded" {
			t.Fatalf("status %d retry-after %q: %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		ts.be.Resume()
		if r := <-done; r.status != 200 {
			t.Fatalf("admitted request: %d %s", r.status, r.body)
		}
		if r := ts.post(t, "/v1/completions", `{"prompt":"Hi","max_tokens":2}`); r.status != 200 {
			t.Fatalf("slot not released: %d %s", r.status, r.body)
		}
	})
	for name, tc := range map[string]struct {
		err    error
		status int
		code   string
	}{
		"backend overloaded": {apiserver.ErrOverloaded, 429, "overloaded"},
		"backend not ready":  {apiserver.ErrNotReady, 503, "not_ready"},
		"backend draining":   {apiserver.ErrDraining, 503, "draining"},
		"backend invalid":    {errors.Join(apiserver.ErrInvalidRequest, errors.New("prompt too long for the KV cache")), 400, "invalid_value"},
		"backend bug":        {errors.New("shm slot table corrupt"), 500, "internal_error"},
	} {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
			ts.be.FailSubmit(tc.err)
			r := ts.post(t, "/generate", `{"inputs":"Hi"}`)
			e := decode[errResp](t, r.body)
			if r.status != tc.status || *e.Error.Code != tc.code {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if (tc.status == 429 || tc.status == 503) && r.header.Get("Retry-After") != "1" {
				t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
			}
		})
	}
	t.Run("not ready", func(t *testing.T) {
		ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
		ts.be.SetReady(false)
		for _, path := range []string{"/generate", "/readiness", "/health"} {
			body := `{"inputs":"Hi"}`
			if path != "/generate" {
				body = ""
			}
			r := ts.do(t, map[bool]string{true: http.MethodPost, false: http.MethodGet}[path == "/generate"], path, []byte(body))
			if r.status != 503 {
				t.Errorf("%s: status %d %s", path, r.status, r.body)
			}
		}
		if r := ts.get(t, "/liveness"); r.status != 200 {
			t.Errorf("liveness %d", r.status)
		}
	})
}

// TestDrain: new requests 503 with Retry-After, readiness and health fail
// at once, in-flight requests finish, Drain returns when they have.
func TestDrain(t *testing.T) {
	ts := startServer(t, apiserver.Options{ChatTemplate: chatML}, fakebackend.Options{})
	ts.be.Pause()
	inflight := make(chan response, 1)
	go func() {
		inflight <- ts.post(t, "/generate_stream", `{"inputs":"Hi","parameters":{"max_new_tokens":4}}`)
	}()
	waitFor(t, "admission", func() bool { return len(ts.be.Submitted()) == 1 })
	drained := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		drained <- ts.srv.Drain(ctx)
	}()
	waitFor(t, "draining", ts.srv.Draining)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/generate", `{"inputs":"Hi"}`},
		{http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`},
		{http.MethodGet, "/readiness", ""},
		{http.MethodGet, "/health", ""},
		{http.MethodHead, "/health", ""},
	} {
		r := ts.do(t, tc.method, tc.path, []byte(tc.body))
		if r.status != 503 || !r.close {
			t.Errorf("%s %s while draining: %d close=%v %s", tc.method, tc.path, r.status, r.close, r.body)
		}
		if tc.path != "/health" && r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", tc.path)
		}
	}
	if r := ts.get(t, "/liveness"); r.status != 200 {
		t.Errorf("liveness while draining: %d", r.status)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with a request in flight", err)
	case <-time.After(20 * time.Millisecond):
	}
	ts.be.Resume()
	if r := <-inflight; r.status != 200 || !strings.Contains(string(r.body), `"finished":true`) {
		t.Fatalf("in-flight request: %d %s", r.status, r.body)
	}
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

func TestDrainDeadline(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	ts.be.Pause()
	defer ts.be.Resume()
	go ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2}}`)
	waitFor(t, "admission", func() bool { return len(ts.be.Submitted()) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := ts.srv.Drain(ctx); err == nil || !strings.Contains(err.Error(), "1 requests still in flight") {
		t.Fatalf("Drain past its deadline: %v", err)
	}
}

func TestHealthEndpoints(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	for _, path := range []string{"/health", "/healthz"} {
		if r := ts.get(t, path); r.status != 200 || string(r.body) != `{"message":"Ok"}` {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	if r := ts.do(t, http.MethodHead, "/health", nil); r.status != 200 || len(r.body) != 0 {
		t.Errorf("HEAD /health: %d %q", r.status, r.body)
	}
	ts.be.SetHealthy(false)
	if r := ts.get(t, "/health"); r.status != 503 || string(r.body) != `{"message":"Error"}` {
		t.Errorf("unhealthy: %d %s", r.status, r.body)
	}
	// Unhealthy (a request-path role down or stalled, issue 21): a load
	// balancer must stop sending, so readiness fails too; liveness holds.
	if r := ts.get(t, "/readiness"); r.status != 503 || string(r.body) != `{"status":"unavailable"}` {
		t.Errorf("readiness while unhealthy: %d %s", r.status, r.body)
	}
	ts.be.SetHealthy(true)
	if r := ts.get(t, "/readiness"); r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Errorf("readiness: %d %s", r.status, r.body)
	}
	if r := ts.post(t, "/liveness", ""); r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Errorf("liveness: %d %s", r.status, r.body)
	}
}

type metricsHandler struct{}

func (metricsHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = io.WriteString(w, "lightllm_num_requests_running 0\n")
}

func TestInfoEndpoints(t *testing.T) {
	ts := startServer(t, apiserver.Options{Metrics: metricsHandler{}, ServerInfo: map[string]any{"port": 8000, "tp": 1}},
		fakebackend.Options{MaxTotalTokens: 1000})
	cases := map[string]struct {
		method, path, body string
		want               string
	}{
		"token_load idle":    {http.MethodGet, "/token_load", "", `{"current_load":0,"dynamic_max_load":0,"logical_max_load":0}`},
		"tokens":             {http.MethodPost, "/tokens", `{"text":"Once upon a time"}`, `{"ntokens":5}`},
		"tokens GET":         {http.MethodGet, "/tokens", `{"text":"Once upon a time","parameters":{"add_special_tokens":false}}`, `{"ntokens":4}`},
		"model name default": {http.MethodGet, "/get_model_name", "", `{"model_name":"stories260K"}`},
		"server info":        {http.MethodPost, "/get_server_info", "", `{"port":8000,"tp":1}`},
		"metrics":            {http.MethodGet, "/metrics", "", "lightllm_num_requests_running 0\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, tc.method, tc.path, []byte(tc.body))
			if r.status != 200 || string(r.body) != tc.want {
				t.Errorf("%d %s, want %s", r.status, r.body, tc.want)
			}
		})
	}
	ts.be.Pause()
	defer ts.be.Resume()
	go ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":97}}`)
	waitFor(t, "admission", func() bool { return len(ts.be.Submitted()) == 1 })
	var load struct {
		Current float64 `json:"current_load"`
	}
	load = decode[struct {
		Current float64 `json:"current_load"`
	}](t, ts.get(t, "/token_load").body)
	if load.Current != 0.1 { // (3 prompt + 97 new) / 1000
		t.Errorf("current_load %v, want 0.1", load.Current)
	}
	noMetrics := startServer(t, apiserver.Options{}, fakebackend.Options{})
	if r := noMetrics.get(t, "/metrics"); r.status != 404 {
		t.Errorf("/metrics without a handler: %d", r.status)
	}
}

func TestRequestID(t *testing.T) {
	ts := startServer(t, apiserver.Options{}, fakebackend.Options{})
	r := ts.post(t, "/v1/completions", `{"prompt":"Hi","max_tokens":1}`, "X-Request-Id", "trace-42")
	if r.header.Get("X-Request-Id") != "trace-42" || !strings.Contains(string(r.body), `"id":"cmpl-trace-42"`) {
		t.Errorf("x-request-id not honoured: %q %s", r.header.Get("X-Request-Id"), r.body)
	}
	if ts.be.Submitted()[0].RequestID != "trace-42" {
		t.Errorf("group request id %q", ts.be.Submitted()[0].RequestID)
	}
	r = ts.post(t, "/v1/completions", `{"prompt":"Hi","max_tokens":1}`, "X-Request-Id", "bad id\twith spaces")
	if id := r.header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \t") {
		t.Errorf("unsafe x-request-id echoed: %q", id)
	}
	if r := ts.get(t, "/nowhere"); len(r.header.Get("X-Request-Id")) != 32 {
		t.Errorf("no generated id on a 404: %q", r.header.Get("X-Request-Id"))
	}
}

// panicBackend is a test double whose Submit panics.
type panicBackend struct{ *fakebackend.Backend }

func (panicBackend) Submit(context.Context, *apiserver.Group) (*apiserver.Stream, error) {
	panic("backend bug")
}

func TestPanicBecomes500(t *testing.T) {
	tok := storiesTokenizer(t)
	ts := startWith(t, apiserver.Options{}, panicBackend{fakebackend.New(tok, fakebackend.Options{})}, tok)
	r := ts.post(t, "/generate", `{"inputs":"Hi"}`)
	if e := decode[errResp](t, r.body); r.status != 500 || *e.Error.Code != "internal_error" {
		t.Fatalf("panic: %d %s", r.status, r.body)
	}
	if r := ts.get(t, "/health"); r.status != 200 {
		t.Fatalf("server down after a panic: %d", r.status)
	}
}

// observer is a test double for apiserver.Observer.
type observer struct {
	mu     sync.Mutex
	done   []apiserver.RequestStats
	failed []int
}

func (o *observer) RequestDone(s apiserver.RequestStats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, s)
}

func (o *observer) RequestFailed(_ string, status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed = append(o.failed, status)
}

func TestObserver(t *testing.T) {
	obs := &observer{}
	ts := startServer(t, apiserver.Options{Observer: obs}, fakebackend.Options{})
	ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":3,"n":2,"best_of":2}}`)
	ts.post(t, "/generate", `{"inputs":5}`)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.done) != 1 || obs.done[0].CompletionTokens != 6 || obs.done[0].PromptTokens != 3 || obs.done[0].FirstToken <= 0 ||
		!slices.Equal(obs.done[0].Finish, []apiserver.FinishReason{"length", "length"}) {
		t.Errorf("done %+v", obs.done)
	}
	if !slices.Equal(obs.failed, []int{400}) {
		t.Errorf("failed %v", obs.failed)
	}
}

// Health probes are served but kept out of request metrics, successes and
// failures alike; "0" or another value is an ordinary request.
func TestObserverSkipsHealthProbes(t *testing.T) {
	obs := &observer{}
	ts := startServer(t, apiserver.Options{Observer: obs}, fakebackend.Options{})
	probe := []string{apiserver.HealthProbeHeader, "1"}
	if r := ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":1}}`, probe...); r.status != 200 {
		t.Fatalf("probe: %d %s", r.status, r.body)
	}
	if r := ts.post(t, "/generate", `{"inputs":5}`, probe...); r.status != 400 {
		t.Fatalf("bad probe: %d %s", r.status, r.body)
	}
	ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2}}`, apiserver.HealthProbeHeader, "0")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.done) != 1 || obs.done[0].CompletionTokens != 2 || len(obs.failed) != 0 {
		t.Errorf("done %+v failed %v: want only the non-probe request", obs.done, obs.failed)
	}
}

// admissionObserver is a test double that also counts admissions.
type admissionObserver struct {
	observer
	admitted []string
}

func (o *admissionObserver) RequestAdmitted(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.admitted = append(o.admitted, path)
}

// Admission is reported for each admitted request (an OpenAI prompt list is
// one per prompt), not for rejected ones or health probes.
func TestObserverAdmissions(t *testing.T) {
	obs := &admissionObserver{}
	ts := startServer(t, apiserver.Options{Observer: obs}, fakebackend.Options{})
	ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":2}}`)
	ts.post(t, "/v1/completions", `{"prompt":["Hi","Ho"],"max_tokens":2}`)
	ts.post(t, "/generate", `{"inputs":5}`)
	ts.post(t, "/generate", `{"inputs":"Hi","parameters":{"max_new_tokens":1}}`, apiserver.HealthProbeHeader, "1")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if want := []string{"/generate", "/v1/completions", "/v1/completions"}; !slices.Equal(obs.admitted, want) {
		t.Errorf("admitted %q, want %q", obs.admitted, want)
	}
}

func TestRunStopsOnContext(t *testing.T) {
	tok := storiesTokenizer(t)
	srv, err := apiserver.New(apiserver.Options{MaxReqTotalLen: 64, GracefulTimeout: time.Second}, fakebackend.New(tok, fakebackend.Options{}), tok, nopLogger())
	if err != nil {
		t.Fatal(err)
	}
	l := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Run(ctx, l) }()
	url := "http://" + l.Addr().String()
	waitFor(t, "serving", func() bool {
		resp, err := http.Get(url + "/liveness")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// truncatingBackend is a test double whose streams end after one token
// without finishing (a backend failure the server must report, not hide).
type truncatingBackend struct{ *fakebackend.Backend }

func (truncatingBackend) Submit(_ context.Context, g *apiserver.Group) (*apiserver.Stream, error) {
	ch := make(chan apiserver.Event, 1)
	ch <- apiserver.Event{Seq: 0, TokenID: 5, Text: "a", CountOutputTokens: 1}
	close(ch)
	return &apiserver.Stream{ID: 8, Events: ch}, nil
}

func TestBackendLosesStream(t *testing.T) {
	tok := storiesTokenizer(t)
	ts := startWith(t, apiserver.Options{ChatTemplate: chatML}, truncatingBackend{fakebackend.New(tok, fakebackend.Options{})}, tok)
	chat := `{"messages":[{"role":"user","content":"Hi"}]`
	cases := map[string]struct {
		path, body string
		status     int
		want       string
	}{
		"native":        {"/generate", `{"inputs":"Hi"}`, 200, `"finish_reason":"error"`},
		"chat":          {"/v1/chat/completions", chat + `}`, 500, `"code":"internal_error"`},
		"completions":   {"/v1/completions", `{"prompt":"Hi"}`, 500, `"code":"internal_error"`},
		"chat stream":   {"/v1/chat/completions", chat + `,"stream":true}`, 200, "data: {\"error\":{\"message\":\"the backend ended the stream"},
		"native stream": {"/generate_stream", `{"inputs":"Hi"}`, 200, `"finished":true,"finish_reason":"error"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.post(t, tc.path, tc.body)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if strings.Contains(tc.path, "/v1/") && strings.Contains(tc.body, "stream") && !strings.HasSuffix(string(r.body), "data: [DONE]\n\n") {
				t.Errorf("stream did not end with [DONE]: %q", r.body)
			}
		})
	}
}
