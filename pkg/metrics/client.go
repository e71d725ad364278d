package metrics

import (
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Role is the sending role's name: the role label of EventsDropped.
	Role string
	// Endpoint is the metric role's PULL endpoint (see EndpointFor).
	Endpoint string
	// QueueLen bounds the events waiting to be sent; past it events are
	// dropped and counted. Default 4096, as LightLLM's MetricClient.
	QueueLen int
	// ReportEvery is how often the client reports its drop count to the
	// metric role (default 5 s).
	ReportEvery time.Duration
	Log         zerolog.Logger
}

// Client sends metric events to the metric role over an ipc.OptionalPusher.
// Its methods never block and never fail: an event is queued, or dropped
// and counted when the queue is full (the metric role is down or slow), so
// losing the metric role never slows serving. A nil *Client is valid and
// does nothing, so code can be written for "metrics off" without branches.
type Client struct {
	role   string
	p      *ipc.OptionalPusher
	labels map[string]string // metric name → its extra label's name
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// EndpointFor is the metric role's endpoint in cfg's run directory.
func EndpointFor(cfg *config.Config) (string, error) {
	return ipc.Endpoint(cfg.RunDir, ipc.SockMetric)
}

// NewClientFor returns the client a role of cfg's instance uses.
func NewClientFor(cfg *config.Config, role string, log zerolog.Logger) (*Client, error) {
	ep, err := EndpointFor(cfg)
	if err != nil {
		return nil, err
	}
	return NewClient(ClientOptions{Role: role, Endpoint: ep, Log: log})
}

// NewClient starts a client; Close stops it.
func NewClient(o ClientOptions) (*Client, error) {
	if o.QueueLen <= 0 {
		o.QueueLen = 4096
	}
	if o.ReportEvery <= 0 {
		o.ReportEvery = 5 * time.Second
	}
	p, err := ipc.NewOptionalPusher(o.Endpoint, ipc.Options{Logger: o.Log, QueueLen: o.QueueLen})
	if err != nil {
		return nil, err
	}
	c := &Client{role: o.Role, p: p, labels: map[string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, d := range defs() {
		if d.label != "" {
			c.labels[d.name] = d.label
		}
	}
	go c.reportDrops(o.ReportEvery)
	return c, nil
}

// Counter adds v (≥ 0) to a counter.
func (c *Client) Counter(name string, v float64) { c.send(ipc.CounterAdd, name, "", v) }

// CounterLabel adds v to a counter that has an extra label (method, role),
// whose value is label.
func (c *Client) CounterLabel(name, label string, v float64) { c.send(ipc.CounterAdd, name, label, v) }

// Gauge sets a gauge.
func (c *Client) Gauge(name string, v float64) { c.send(ipc.GaugeSet, name, "", v) }

// Observe records one histogram observation.
func (c *Client) Observe(name string, v float64) { c.send(ipc.HistogramObserve, name, "", v) }

// ObserveLabel records one observation of a histogram with an extra label.
func (c *Client) ObserveLabel(name, label string, v float64) {
	c.send(ipc.HistogramObserve, name, label, v)
}

// ObserveDuration records d in seconds, the unit of every duration histogram.
func (c *Client) ObserveDuration(name string, d time.Duration) { c.Observe(name, d.Seconds()) }

// Stats reports the events queued for sending and those dropped so far.
func (c *Client) Stats() (sent, dropped uint64) {
	if c == nil {
		return 0, 0
	}
	return c.p.Stats()
}

func (c *Client) send(kind ipc.MetricKind, name, label string, v float64) {
	if c == nil {
		return
	}
	m := &ipc.Metric{Kind: kind, Name: name, Value: v}
	if label != "" {
		ln := c.labels[name]
		if ln == "" {
			ln = "label" // the metric has no extra label: the metric role rejects and counts it
		}
		m.Labels = []ipc.Label{{Name: ln, Value: label}}
	}
	c.p.Send(m)
}

// reportDrops sends this process's drop count as a gauge. A gauge, not a
// counter increment, so that a report that is itself dropped is corrected
// by the next one, and a restarted metric role learns the count again.
func (c *Client) reportDrops(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if _, dropped := c.p.Stats(); dropped > 0 && c.role != "" {
			c.p.Send(&ipc.Metric{Kind: ipc.GaugeSet, Name: EventsDropped,
				Labels: []ipc.Label{{Name: "role", Value: c.role}}, Value: float64(dropped)})
		}
	}
}

// Close stops the client; events still queued are dropped.
func (c *Client) Close() {
	if c == nil {
		return
	}
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.p.Close()
	})
}
