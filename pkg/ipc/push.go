package ipc

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// dialPush makes a PUSH socket connected to endpoint.
func dialPush(ctx context.Context, endpoint string, o Options) (zmq4.Socket, error) {
	return dialSock(ctx, endpoint, func() zmq4.Socket { return zmq4.NewPush(context.Background(), o.zmqOptions()...) })
}

// dialSock connects a new socket to endpoint. zmq4 completes the ZMTP
// handshake inside Dial with no deadline, so the dial runs aside and is
// abandoned (and its socket closed when it returns) if ctx ends first.
func dialSock(ctx context.Context, endpoint string, newSock func() zmq4.Socket) (zmq4.Socket, error) {
	type result struct {
		sock zmq4.Socket
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		sock := newSock()
		if err := sock.Dial(zmqEndpoint(endpoint)); err != nil {
			sock.Close()
			ch <- result{nil, err}
			return
		}
		ch <- result{sock, nil}
	}()
	select {
	case r := <-ch:
		return r.sock, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.sock != nil {
				r.sock.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// sendOrClose sends one frame; if ctx ends while the send is blocked (the
// peer is alive but not reading), the socket is closed to unblock it.
func sendOrClose(ctx context.Context, sock zmq4.Socket, data []byte) error {
	stop := context.AfterFunc(ctx, func() { sock.Close() })
	err := sock.Send(zmq4.NewMsg(data))
	if !stop() {
		return ctx.Err()
	}
	return err
}

// optionalLinger is how long an OptionalPusher holds messages after the
// first to write them together (cut short once its queue is half full).
const optionalLinger = 50 * time.Millisecond

// OptionalPusher is the PUSH end towards a peer the sender must never wait
// for (every role → metric). Send only queues; a background goroutine
// writes. While the peer is down, or not reading fast enough, messages are
// dropped and counted, and the connection is retried with backoff.
type OptionalPusher struct {
	endpoint string
	opts     Options
	ch       chan []byte
	linger   time.Duration // optionalLinger; tests lengthen it
	// kick ends the writer's linger early: Send posts it (without waiting)
	// once the queue is half full, so a burst is written before it
	// overflows the queue, however long the linger.
	kick   chan struct{}
	half   int
	cancel context.CancelFunc
	done   chan struct{}

	sent, dropped atomic.Uint64
}

// NewOptionalPusher starts the background sender for endpoint.
func NewOptionalPusher(endpoint string, opts Options) (*OptionalPusher, error) {
	return newOptionalPusher(endpoint, opts, optionalLinger)
}

func newOptionalPusher(endpoint string, opts Options, linger time.Duration) (*OptionalPusher, error) {
	if _, err := socketPath(endpoint); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	p := &OptionalPusher{
		endpoint: endpoint, opts: opts, cancel: cancel, linger: linger,
		ch: make(chan []byte, opts.QueueLen), kick: make(chan struct{}, 1),
		half: max(1, opts.QueueLen/2), done: make(chan struct{}),
	}
	go p.loop(ctx)
	return p, nil
}

// Send queues m without blocking; false means it was dropped because the
// queue is full (the peer is down or slow).
func (p *OptionalPusher) Send(m Message) bool {
	select {
	case p.ch <- Encode(m):
		// len of a buffered channel is one unlocked load: the writer is
		// woken only once the queue is half full, not per message.
		if len(p.ch) >= p.half {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
		return true
	default:
		p.dropped.Add(1)
		return false
	}
}

// Stats reports messages written and dropped so far.
func (p *OptionalPusher) Stats() (sent, dropped uint64) { return p.sent.Load(), p.dropped.Load() }

// Close stops the sender; queued messages are dropped, and counted so.
func (p *OptionalPusher) Close() error {
	p.cancel()
	<-p.done
	for {
		select {
		case <-p.ch:
			p.dropped.Add(1)
		default:
			return nil
		}
	}
}

func (p *OptionalPusher) loop(ctx context.Context) {
	defer close(p.done)
	var (
		sock     zmq4.Socket
		bo       = newBackoff(p.opts)
		nextDial = time.Time{}
		batch    [][]byte
		linger   = time.NewTimer(time.Hour)
		full     bool // the last frame was a full MaxBatch and more are queued
	)
	linger.Stop()
	defer func() {
		if sock != nil {
			sock.Close()
		}
	}()
	connect := func() bool {
		if time.Now().Before(nextDial) {
			return false
		}
		s, err := dialPush(ctx, p.endpoint, p.opts)
		if err != nil {
			nextDial = time.Now().Add(bo.cur)
			bo.cur = min(2*bo.cur, bo.hi)
			return false
		}
		sock = s
		bo.reset()
		return true
	}
	for {
		var data []byte
		select {
		case <-ctx.Done():
			return
		case data = <-p.ch:
		}
		// What arrives within the linger after the first message goes out
		// with it: a ZMQ write costs two syscalls here, and infer's
		// per-step metrics plus the apiserver's per-request ones would
		// otherwise cost a write (and a wake-up of the metric role) each.
		// Metrics are scraped every few seconds; 50 ms is invisible there.
		// The loop sleeps on the timer, not on the queue, so a Send during
		// the linger only fills the channel's buffer: waking this goroutine
		// per message cost infer a thread wake-up per engine step. The
		// queue is drained when the linger ends, MaxBatch messages a frame.
		// The linger is skipped after a full frame with more queued, and
		// cut short once the queue is half full (kick), so a burst cannot
		// overflow the queue while the writer sleeps.
		n := uint64(1)
		batch = append(batch[:0], data)
		select {
		case <-p.kick: // stale: posted while the last frame was written
		default:
		}
		if !full && len(p.ch)+1 < p.half {
			linger.Reset(p.linger)
			select {
			case <-linger.C:
			case <-p.kick:
				linger.Stop()
			case <-ctx.Done():
				p.dropped.Add(uint64(len(batch))) // Close: the batch in hand is dropped too
				return
			}
		}
	collect:
		for len(batch) < MaxBatch {
			select {
			case f := <-p.ch:
				batch = append(batch, f)
			default:
				break collect
			}
		}
		full = len(batch) == MaxBatch && len(p.ch) > 0
		if len(batch) > 1 {
			data, n = EncodeBatch(batch), uint64(len(batch))
		}
		if sock == nil && !connect() {
			p.dropped.Add(n)
			continue
		}
		err := sendOrClose(ctx, sock, data)
		if err != nil {
			sock.Close()
			sock = nil
			// One immediate re-dial: the peer may have just restarted.
			if ctx.Err() == nil && connect() {
				err = sendOrClose(ctx, sock, data)
			}
		}
		if err != nil {
			if sock != nil {
				sock.Close()
				sock = nil
			}
			p.dropped.Add(n)
			p.opts.Logger.Debug().Err(err).Str("endpoint", p.endpoint).Msg("optional peer down; dropping")
			continue
		}
		p.sent.Add(n)
	}
}
