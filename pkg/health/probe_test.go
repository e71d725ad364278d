package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

func TestHTTPProbe(t *testing.T) {
	reply := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Inputs     string `json:"inputs"`
				Parameters struct {
					MaxNewTokens int `json:"max_new_tokens"`
				} `json:"parameters"`
			}
			b, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(b, &req); err != nil || req.Parameters.MaxNewTokens != 1 || req.Inputs == "" ||
				r.Header.Get(ProbeHeader) != "1" || r.Method != http.MethodPost || r.URL.Path != "/generate" {
				w.WriteHeader(http.StatusTeapot)
				return
			}
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	// An engine that accepted the request and never answers. The body must
	// be read for the server to notice the client hanging up.
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	tests := map[string]struct {
		h      http.Handler
		target string // "" = success
		status Status
	}{
		"ok":            {reply(200, `{"generated_text":["!"],"finish_reason":"length","count_output_tokens":1}`), "", Healthy},
		"not generate":  {reply(200, `{"message":"Ok"}`), config.RoleAPIServer, Unhealthy},
		"finish error":  {reply(200, `{"generated_text":[""],"finish_reason":"error"}`), config.RoleInfer, Unhealthy},
		"draining":      {reply(503, `{"error":{}}`), config.RoleAPIServer, Degraded},
		"overloaded":    {reply(429, ``), config.RoleAPIServer, Degraded},
		"server error":  {reply(500, `boom`), config.RoleInfer, Unhealthy},
		"417 exception": {reply(417, `{"error":{}}`), config.RoleInfer, Unhealthy},
		"bad request":   {reply(400, `{"error":{}}`), config.RoleAPIServer, Unhealthy},
		"engine wedged": {hang, config.RoleInfer, Unhealthy},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tc.h)
			defer srv.Close()
			p := &HTTPProbe{URL: srv.URL + "/generate", Client: srv.Client()}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := p.Probe(ctx)
			checkProbeErr(t, err, tc.target, tc.status)
		})
	}
}

func TestHTTPProbeRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p := &HTTPProbe{URL: url + "/generate"}
	checkProbeErr(t, p.Probe(context.Background()), config.RoleAPIServer, Unhealthy)
}

func checkProbeErr(t *testing.T, err error, target string, status Status) {
	t.Helper()
	if target == "" {
		if err != nil {
			t.Fatalf("probe failed: %v", err)
		}
		return
	}
	var pe *ProbeError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v (%T), want a *ProbeError", err, err)
	}
	if pe.Target != target || pe.Status != status {
		t.Fatalf("probe error %v: target %s status %v, want %s %v", err, pe.Target, pe.Status, target, status)
	}
}

// TestHTTPProbeNewConnection: every probe of NewHTTPProbe dials anew, so
// none is sent on a keep-alive connection the apiserver is closing for
// idleness (the probe's interval and the idle timeout are both 10 s).
func TestHTTPProbeNewConnection(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"generated_text":["!"],"finish_reason":"length"}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := config.DefaultConfig()
	cfg.Host = "127.0.0.1"
	cfg.Port = srv.Listener.Addr().(*net.TCPAddr).Port
	p := NewHTTPProbe(&cfg)
	for i := range 3 {
		if err := p.Probe(context.Background()); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
	}
	if n := dials.Load(); n != 3 {
		t.Fatalf("3 probes used %d connections, want 3", n)
	}
}

func TestNewHTTPProbeURL(t *testing.T) {
	tests := map[string]string{
		"127.0.0.1": "http://127.0.0.1:8123/generate",
		"0.0.0.0":   "http://127.0.0.1:8123/generate",
		"::":        "http://[::1]:8123/generate",
		"10.1.2.3":  "http://10.1.2.3:8123/generate",
	}
	for host, want := range tests {
		cfg := config.DefaultConfig()
		cfg.Host, cfg.Port = host, 8123
		if got := NewHTTPProbe(&cfg).URL; got != want {
			t.Errorf("host %s: %s, want %s", host, got, want)
		}
	}
}
