package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// fakeGateway is a test double of a Pushgateway that records each push.
type fakeGateway struct {
	mu     sync.Mutex
	pushes []string // "METHOD PATH user"
	bodies []string
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	user, _, _ := r.BasicAuth()
	g.mu.Lock()
	g.pushes = append(g.pushes, r.Method+" "+r.URL.Path+" "+user)
	g.bodies = append(g.bodies, string(body))
	g.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (g *fakeGateway) snapshot() ([]string, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.pushes...), append([]string(nil), g.bodies...)
}

func TestPushGateway(t *testing.T) {
	gw := &fakeGateway{}
	srv := httptest.NewServer(gw)
	defer srv.Close()
	cfg := testConfig(t)
	cfg.MetricGateway = strings.Replace(srv.URL, "http://", "http://ops:secret@", 1)
	cfg.PushInterval = config.Duration(30 * time.Millisecond)
	s, stop := startServer(t, cfg, Options{})
	if err := s.Registry().Apply(&ipc.Metric{Kind: ipc.CounterAdd, Name: RequestCount, Value: 6}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two pushes", func() bool { p, _ := gw.snapshot(); return len(p) >= 2 })
	stop()
	pushes, bodies := gw.snapshot()
	for _, p := range pushes {
		if p != "PUT /metrics/job/lightllm/instance/mtest ops" {
			t.Errorf("push %q", p)
		}
	}
	if len(bodies[len(bodies)-1]) == 0 {
		t.Error("final push has no body")
	}
}

func TestPushConfigErrors(t *testing.T) {
	tests := map[string]struct {
		job      string
		interval time.Duration
	}{
		"no job":        {"", time.Second},
		"zero interval": {"j", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := NewRegistry("m", 10)
			if _, err := newPusher("http://127.0.0.1:1", tc.job, "i", tc.interval, r.Prometheus(), zerolog.Nop()); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestPushGatewayDownDoesNotStopRole(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r, _ := NewRegistry("m", 10)
	p, err := newPusher(url, "j", "i", 10*time.Millisecond, r.Prometheus(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() { p.run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("push loop did not stop")
	}
}
