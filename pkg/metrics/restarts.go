package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// StatusFunc returns the supervisor's view of the instance (rolectl's
// Controller.Status).
type StatusFunc func(ctx context.Context) (*rolectl.Status, error)

// restartCollector exports lightllm_role_restarts_total{role} and
// lightllm_role_crash_looping{role} from the supervisor's status. Reading the supervisor instead of counting
// events keeps the count right across a restart of the metric role itself.
// The answer is cached for cacheFor so a fast scraper costs the supervisor
// at most one call per period, and a slow supervisor delays a scrape by at
// most timeout.
type restartCollector struct {
	status   StatusFunc
	model    string
	desc     *prometheus.Desc
	looping  *prometheus.Desc
	timeout  time.Duration
	cacheFor time.Duration

	mu   sync.Mutex
	at   time.Time
	last map[string]roleFacts
}

// roleFacts is what the collector exports about one role.
type roleFacts struct {
	restarts int
	looping  bool
}

func newRestartCollector(status StatusFunc, model string) *restartCollector {
	return &restartCollector{
		status: status, model: model,
		desc: prometheus.NewDesc(RoleRestarts+"_total",
			"Restarts of each role by the supervisor (crashes, wedges, restart requests)",
			[]string{"model_name", "role"}, nil),
		looping: prometheus.NewDesc(RoleCrashLooping,
			"1 while the supervisor reports the role crash-looping (failing again and again; retried at the longest backoff)",
			[]string{"model_name", "role"}, nil),
		timeout: 500 * time.Millisecond, cacheFor: time.Second,
	}
}

func (c *restartCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.looping }

func (c *restartCollector) Collect(ch chan<- prometheus.Metric) {
	for role, f := range c.counts() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(f.restarts), c.model, role)
		looping := 0.0
		if f.looping {
			looping = 1
		}
		ch <- prometheus.MustNewConstMetric(c.looping, prometheus.GaugeValue, looping, c.model, role)
	}
}

func (c *restartCollector) counts() map[string]roleFacts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.at) < c.cacheFor {
		return c.last
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.status(ctx)
	c.at = time.Now()
	if err != nil || st == nil {
		return c.last // keep the last known counts; counters must not vanish and reappear
	}
	m := make(map[string]roleFacts, len(st.Roles))
	for _, r := range st.Roles {
		m[r.Role] = roleFacts{restarts: r.Restarts, looping: r.CrashLooping}
	}
	c.last = m
	return m
}
