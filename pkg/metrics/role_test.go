package metrics

import (
	"context"
	"errors"
	"math"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// testConfig is a config whose sockets live in a temp dir.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.DefaultConfig()
	cfg.Instance = "mtest"
	cfg.RunDir = t.TempDir()
	cfg.ModelName = "stories"
	cfg.MaxReqTotalLen = 1000
	return &cfg
}

// startServer runs a metric role in-process on a real ipc socket; the
// returned stop cancels it and waits for Run to return.
func startServer(t *testing.T, cfg *config.Config, o Options) (*Server, func()) {
	t.Helper()
	if o.HTTP == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o.HTTP = ln
	}
	s, err := New(cfg, zerolog.Nop(), o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("metric role Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return s, stop
}

func TestMetricRoleEndToEnd(t *testing.T) {
	cfg := testConfig(t)
	s, _ := startServer(t, cfg, Options{})
	c := newTestClient(t, s.Endpoint(), config.RoleAPIServer)

	// What an apiserver reports for 5 requests: 4 succeed, 1 fails.
	ttft := []float64{0.010, 0.020, 0.030, 0.500}
	tpot := []float64{0.002, 0.003, 0.004, 0.005}
	for i := 0; i < 5; i++ {
		c.Counter(RequestCount, 1)
	}
	for i := range ttft {
		c.Counter(RequestSuccess, 1)
		c.Counter(PromptTokens, 10)
		c.Counter(GenerationTokens, 20)
		c.Observe(RequestFirstTokenDuration, ttft[i])
		c.Observe(RequestTimePerToken, tpot[i])
		c.Observe(RequestInputLength, 10)
	}
	c.Counter(RequestFailure, 1)
	c.Gauge(QueueSize, 3)
	c.Gauge(QueueSize, 2) // the last value wins
	c.CounterLabel(BatchInferenceCount, MethodDecode, 7)

	url := "http://" + s.Addr() + "/metrics"
	model := map[string]string{"model_name": "stories"}
	eventually(t, "all events applied", func() bool { // the last one sent arrives last
		m := series(scrape(t, url), "lightllm_batch_inference_count_total", model)
		return m != nil && m.GetCounter().GetValue() == 7
	})
	mfs := scrape(t, url)
	counters := map[string]float64{
		"lightllm_request_count_total":         5,
		"lightllm_request_success_total":       4,
		"lightllm_request_failure_total":       1,
		"lightllm_prompt_tokens_total":         40,
		"lightllm_generation_tokens_total":     80,
		"lightllm_batch_inference_count_total": 7,
	}
	for name, want := range counters {
		m := series(mfs, name, model)
		if m == nil || m.GetCounter().GetValue() != want {
			t.Errorf("%s = %v, want %v", name, m.GetCounter().GetValue(), want)
		}
	}
	if m := series(mfs, QueueSize, model); m == nil || m.GetGauge().GetValue() != 2 {
		t.Errorf("queue size %v, want 2", m)
	}
	checkHist := func(name string, obs []float64) {
		t.Helper()
		m := series(mfs, name, model)
		if m == nil {
			t.Fatalf("%s missing", name)
		}
		h := m.GetHistogram()
		sum := 0.0
		for _, v := range obs {
			sum += v
		}
		if h.GetSampleCount() != uint64(len(obs)) || math.Abs(h.GetSampleSum()-sum) > 1e-9 {
			t.Errorf("%s: count %d sum %v, want %d and %v", name, h.GetSampleCount(), h.GetSampleSum(), len(obs), sum)
		}
		for _, b := range h.GetBucket() {
			want := 0
			for _, v := range obs {
				if v <= b.GetUpperBound() {
					want++
				}
			}
			if b.GetCumulativeCount() != uint64(want) {
				t.Errorf("%s le=%v: %d, want %d", name, b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	}
	checkHist(RequestFirstTokenDuration, ttft)
	checkHist(RequestTimePerToken, tpot)
	if _, dropped := c.Stats(); dropped != 0 {
		t.Errorf("dropped %d events with the metric role up", dropped)
	}
}

func TestRestartCountsFromSupervisor(t *testing.T) {
	cfg := testConfig(t)
	status := func(context.Context) (*rolectl.Status, error) {
		return &rolectl.Status{Roles: []rolectl.RoleStatus{{Role: "infer", Restarts: 2}, {Role: "router"}}}, nil
	}
	s, _ := startServer(t, cfg, Options{Status: status})
	mfs := scrape(t, "http://"+s.Addr()+"/metrics")
	if m := series(mfs, "lightllm_role_restarts_total", map[string]string{"role": "infer", "model_name": "stories"}); m == nil || m.GetCounter().GetValue() != 2 {
		t.Fatalf("infer restarts %v, want 2", m)
	}
	if m := series(mfs, "lightllm_role_restarts_total", map[string]string{"role": "router"}); m == nil || m.GetCounter().GetValue() != 0 {
		t.Fatalf("router restarts %v, want 0", m)
	}
}

func TestRestartCollectorCachesAndKeepsLastGood(t *testing.T) {
	answers := []struct {
		restarts int
		err      error
	}{{1, nil}, {3, nil}, {0, errors.New("supervisor gone")}}
	calls := 0
	rc := newRestartCollector(func(context.Context) (*rolectl.Status, error) {
		a := answers[min(calls, len(answers)-1)]
		calls++
		if a.err != nil {
			return nil, a.err
		}
		return &rolectl.Status{Roles: []rolectl.RoleStatus{{Role: "infer", Restarts: a.restarts}}}, nil
	}, "m")
	rc.cacheFor = 50 * time.Millisecond
	if got := rc.counts()["infer"].restarts; got != 1 {
		t.Fatalf("first read %d", got)
	}
	if got := rc.counts()["infer"].restarts; got != 1 || calls != 1 {
		t.Fatalf("within cacheFor: %d after %d calls, want the cached 1 after 1 call", got, calls)
	}
	time.Sleep(60 * time.Millisecond)
	if got := rc.counts()["infer"].restarts; got != 3 {
		t.Fatalf("after cacheFor: %d, want 3", got)
	}
	time.Sleep(60 * time.Millisecond)
	if got := rc.counts()["infer"].restarts; got != 3 {
		t.Fatalf("supervisor failing: %d, want the last good 3", got)
	}
}
