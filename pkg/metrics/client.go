package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Role is the sending role's name, the role label of EventsDropped.
	Role string
	// Endpoint is the metric role's PULL endpoint, Endpoint(cfg.SocketPath("metric")).
	Endpoint string
	// QueueSize bounds the events waiting to be sent; past it events are
	// dropped and counted. Default 4096, as LightLLM's MetricClient.
	QueueSize int
	// SendTimeout bounds one send (default 250 ms).
	SendTimeout time.Duration
	// RetryMin and RetryMax bound the reconnect backoff (defaults 100 ms, 5 s).
	RetryMin, RetryMax time.Duration
	// Dial connects to the metric role; default DialZMQ. Tests swap it.
	Dial DialFunc
	Log  zerolog.Logger
}

// Client sends metric events to the metric role. Its methods never block
// and never fail: an event is queued, or dropped and counted when the queue
// is full (the metric role is down or slow). A nil *Client is valid and
// does nothing, so code can be written for "metrics off" without branches.
// One goroutine per Client drains the queue, batching everything queued
// into one message.
type Client struct {
	o       ClientOptions
	ch      chan Event
	stop    chan struct{}
	done    chan struct{}
	closing sync.Once
	closed  atomic.Bool

	sent       atomic.Uint64 // events handed to a successful Send
	dropped    atomic.Uint64 // events never sent (queue full, send failed)
	unreported atomic.Uint64 // dropped events not yet reported to the metric role
}

// NewClient starts a client; Close stops it.
func NewClient(o ClientOptions) *Client {
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = 250 * time.Millisecond
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(5*time.Second, o.RetryMin)
	}
	if o.Dial == nil {
		o.Dial = DialZMQ
	}
	c := &Client{o: o, ch: make(chan Event, o.QueueSize), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// Counter adds v (≥ 0) to a counter.
func (c *Client) Counter(name string, v float64) { c.send(Event{KindCounter, name, "", v}) }

// CounterLabel adds v to a counter with an extra label (method, role).
func (c *Client) CounterLabel(name, label string, v float64) {
	c.send(Event{KindCounter, name, label, v})
}

// Gauge sets a gauge.
func (c *Client) Gauge(name string, v float64) { c.send(Event{KindGauge, name, "", v}) }

// Observe records one histogram observation.
func (c *Client) Observe(name string, v float64) { c.send(Event{KindHistogram, name, "", v}) }

// ObserveLabel records one observation of a histogram with an extra label.
func (c *Client) ObserveLabel(name, label string, v float64) {
	c.send(Event{KindHistogram, name, label, v})
}

// ObserveDuration records d in seconds, the unit of every duration histogram.
func (c *Client) ObserveDuration(name string, d time.Duration) { c.Observe(name, d.Seconds()) }

// Sent is the number of events sent so far.
func (c *Client) Sent() uint64 {
	if c == nil {
		return 0
	}
	return c.sent.Load()
}

// Dropped is the number of events dropped so far.
func (c *Client) Dropped() uint64 {
	if c == nil {
		return 0
	}
	return c.dropped.Load()
}

func (c *Client) send(e Event) {
	if c == nil {
		return
	}
	if c.closed.Load() {
		c.drop(1)
		return
	}
	select {
	case c.ch <- e:
	default:
		c.drop(1)
	}
}

func (c *Client) drop(n int) {
	c.dropped.Add(uint64(n))
	c.unreported.Add(uint64(n))
}

// Close stops the client. Events still queued are sent if the metric role
// answers within SendTimeout, and dropped otherwise; events sent after
// Close are dropped.
func (c *Client) Close() {
	if c == nil {
		return
	}
	c.closing.Do(func() {
		c.closed.Store(true)
		close(c.stop)
	})
	<-c.done
}

// loop owns the connection: it batches queued events, sends them, and
// reconnects with backoff after a failure. While the metric role is down
// every batch is dropped (after at most one SendTimeout), so the queue keeps
// draining and producers never wait.
func (c *Client) loop() {
	defer close(c.done)
	var (
		conn     Pusher
		nextDial time.Time
		backoff  = c.o.RetryMin
		batch    = make([]Event, 0, MaxBatch)
		buf      []byte
		lastWarn time.Time
	)
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	fail := func(err error, n int) {
		c.drop(n)
		if conn != nil {
			conn.Close()
			conn = nil
		}
		nextDial = time.Now().Add(backoff)
		backoff = min(2*backoff, c.o.RetryMax)
		if time.Since(lastWarn) > time.Minute {
			lastWarn = time.Now()
			c.o.Log.Warn().Err(err).Str("endpoint", c.o.Endpoint).Uint64("dropped", c.dropped.Load()).
				Msg("metric role unreachable; dropping metric events")
		}
	}
	var flushBy time.Time // set once stopping: the end of the final flush
	for {
		batch = batch[:0]
		if flushBy.IsZero() {
			select {
			case e := <-c.ch:
				batch = append(batch, e)
			case <-c.stop:
				flushBy = time.Now().Add(c.o.SendTimeout)
			}
		}
	drain:
		for len(batch) < MaxBatch-1 { // room for the dropped-count event
			select {
			case e := <-c.ch:
				batch = append(batch, e)
			default:
				break drain
			}
		}
		if !flushBy.IsZero() && (len(batch) == 0 || time.Now().After(flushBy)) {
			c.drop(len(batch))
			for len(c.ch) > 0 {
				<-c.ch
				c.drop(1)
			}
			return
		}
		if len(batch) > 0 {
			if conn == nil && !time.Now().Before(nextDial) {
				var err error
				if conn, err = c.o.Dial(c.o.Endpoint, c.o.SendTimeout); err != nil {
					conn = nil
					fail(err, 0)
				}
			}
			if conn == nil {
				c.drop(len(batch))
			} else {
				n := len(batch)
				report := c.unreported.Load()
				if report > 0 {
					batch = append(batch, Event{KindCounter, EventsDropped, c.o.Role, float64(report)})
				}
				var err error
				if buf, err = AppendBatch(buf[:0], batch); err != nil {
					// A bad name from the caller: drop this batch, keep the connection.
					c.drop(n)
					c.o.Log.Error().Err(err).Msg("metric event")
				} else if err = conn.Send(buf); err != nil {
					fail(err, n)
				} else {
					c.sent.Add(uint64(n))
					c.unreported.Add(^(report - 1)) // subtract what was reported
					backoff = c.o.RetryMin
				}
			}
		}
	}
}
