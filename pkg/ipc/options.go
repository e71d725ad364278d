package ipc

import (
	"io"
	"log"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"
)

// Options tune a socket; the zero value is usable.
type Options struct {
	// Logger receives reconnects and drops (and zmq4's own messages at
	// debug level). The zero Logger discards.
	Logger zerolog.Logger
	// MinBackoff and MaxBackoff bound the wait between reconnect attempts
	// (doubling from min to max). Defaults: 5 ms and 500 ms.
	MinBackoff, MaxBackoff time.Duration
	// QueueLen is the receive buffer of a Puller and the send
	// queue of an OptionalPusher, in messages. Default 1024.
	QueueLen int
}

func (o Options) withDefaults() Options {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 5 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(500*time.Millisecond, o.MinBackoff)
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 1024
	}
	return o
}

// zmqOptions are the options of every zmq4 socket made here. Dial retries
// are ours (zmq4's sleep between retries ignores cancellation), and
// WithAutomaticReconnect is never used: it re-dials from inside the
// connection reaper and deadlocks.
func (o Options) zmqOptions() []zmq4.Option {
	return []zmq4.Option{
		zmq4.WithDialerMaxRetries(0),
		zmq4.WithDialerTimeout(time.Second),
		zmq4.WithLogger(log.New(zlogWriter{o.Logger}, "", 0)),
	}
}

// zlogWriter feeds zmq4's *log.Logger output into zerolog at debug level.
type zlogWriter struct{ l zerolog.Logger }

func (w zlogWriter) Write(p []byte) (int, error) {
	w.l.Debug().Str("component", "zmq4").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = zlogWriter{}

// backoff spaces an OptionalPusher's dials while its peer is down,
// doubling from MinBackoff to MaxBackoff: a metric role that is off then
// costs a failed connect now and then, not one per message.
type backoff struct {
	cur, lo, hi time.Duration
}

func newBackoff(o Options) backoff {
	return backoff{cur: o.MinBackoff, lo: o.MinBackoff, hi: o.MaxBackoff}
}

func (b *backoff) reset() { b.cur = b.lo }
