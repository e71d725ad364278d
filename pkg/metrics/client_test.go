package metrics

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// sendLoop calls Counter n times and returns the total and the slowest call.
func sendLoop(c *Client, n int) (total, slowest time.Duration) {
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		c.Counter(RequestCount, 1)
		if d := time.Since(t0); d > slowest {
			slowest = d
		}
	}
	return time.Since(start), slowest
}

// Losing the metric role must not slow the caller, and metrics must flow
// again once it is back (issue 6).
func TestClientSurvivesMetricRoleRestart(t *testing.T) {
	cfg := testConfig(t)
	s1, stop1 := startServer(t, cfg, Options{})
	c := NewClient(ClientOptions{Role: config.RoleAPIServer, Endpoint: s1.Endpoint(), QueueSize: 1024,
		RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, Log: zerolog.Nop()})
	defer c.Close()
	model := map[string]string{"model_name": "stories"}

	c.Counter(RequestCount, 1)
	eventually(t, "first event", func() bool {
		m := series(scrape(t, "http://"+s1.Addr()+"/metrics"), "lightllm_request_count_total", model)
		return m != nil && m.GetCounter().GetValue() == 1
	})
	stop1()

	const n = 200000
	total, slowest := sendLoop(c, n)
	t.Logf("metric role down: %d sends in %v (%.0f ns each), slowest %v, dropped %d", n, total, float64(total.Nanoseconds())/n, slowest, c.Dropped())
	if per := total / n; per > 20*time.Microsecond {
		t.Errorf("a send costs %v with the metric role down", per)
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("slowest send took %v with the metric role down", slowest)
	}
	if c.Dropped() == 0 {
		t.Error("nothing was dropped although the metric role was down")
	}

	s2, _ := startServer(t, cfg, Options{})
	url := "http://" + s2.Addr() + "/metrics"
	eventually(t, "events flowing after the restart", func() bool {
		c.Counter(RequestCount, 1)
		mfs := scrape(t, url)
		got := series(mfs, "lightllm_request_count_total", model)
		drops := series(mfs, "lightllm_metric_events_dropped_total", map[string]string{"role": "apiserver"})
		return got != nil && got.GetCounter().GetValue() > 0 && drops != nil && drops.GetCounter().GetValue() > 0
	})
}

// A client whose metric role never existed costs nothing either, and Close
// returns promptly.
func TestClientWithoutMetricRole(t *testing.T) {
	c := NewClient(ClientOptions{Role: "router", Endpoint: Endpoint(t.TempDir() + "/metric.sock"), Log: zerolog.Nop()})
	total, slowest := sendLoop(c, 100000)
	if total > time.Second || slowest > 100*time.Millisecond {
		t.Errorf("sends with no metric role: total %v, slowest %v", total, slowest)
	}
	t0 := time.Now()
	c.Close()
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if c.Sent() != 0 || c.Dropped() != 100000 {
		t.Errorf("sent %d dropped %d, want 0 and 100000", c.Sent(), c.Dropped())
	}
	c.Close() // idempotent
}

// blockingPusher is a test double whose Send blocks until released: a
// metric role that accepted the connection and then stopped reading.
type blockingPusher struct {
	release chan struct{}
	once    sync.Once
}

func (p *blockingPusher) Send([]byte) error { <-p.release; return errors.New("released") }
func (p *blockingPusher) Close() error      { p.once.Do(func() { close(p.release) }); return nil }

func TestClientWedgedTransportNeverBlocksCaller(t *testing.T) {
	p := &blockingPusher{release: make(chan struct{})}
	c := NewClient(ClientOptions{Role: "infer", QueueSize: 16, Log: zerolog.Nop(),
		Dial: func(string, time.Duration) (Pusher, error) { return p, nil }})
	total, slowest := sendLoop(c, 10000)
	if total > time.Second || slowest > 100*time.Millisecond {
		t.Errorf("sends with a wedged transport: total %v, slowest %v", total, slowest)
	}
	if c.Dropped() < 10000-16-MaxBatch {
		t.Errorf("dropped %d, want nearly all", c.Dropped())
	}
	p.Close()
	c.Close()
}

func TestNilClient(t *testing.T) {
	var c *Client
	c.Counter(RequestCount, 1)
	c.Gauge(QueueSize, 1)
	c.Observe(RequestFirstTokenDuration, 1)
	c.ObserveDuration(RequestFirstTokenDuration, time.Second)
	c.Close()
	if c.Sent() != 0 || c.Dropped() != 0 {
		t.Fatal("a nil client counts nothing")
	}
}
