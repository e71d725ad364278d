package ipc

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"
)

// item is one received frame, decoded.
type item struct {
	m   Message
	err error
}

// Puller is the metric role's PULL end: it binds the socket, every role's
// OptionalPusher connects to it, and a restarted role simply connects
// again. zmq4's Recv reports io.EOF each time a peer disconnects; the
// Puller counts that and keeps receiving.
type Puller struct {
	endpoint string
	opts     Options
	sock     zmq4.Socket
	ch       chan item
	cancel   context.CancelFunc
	done     chan struct{}
	closing  sync.Once

	received, disconnects atomic.Uint64
}

// NewPuller binds endpoint, first removing a socket file left by a dead
// process (zmq4 cannot bind over it). It fails with ErrAddrInUse if a live
// process already listens there.
func NewPuller(endpoint string, opts Options) (*Puller, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := clearStaleSocket(path); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	sock := zmq4.NewPull(ctx, opts.zmqOptions()...)
	if err := sock.Listen(zmqEndpoint(endpoint)); err != nil {
		cancel()
		sock.Close()
		return nil, fmt.Errorf("ipc: listen %s: %w", endpoint, err)
	}
	p := &Puller{endpoint: endpoint, opts: opts, sock: sock, ch: make(chan item, opts.QueueLen),
		cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx)
	return p, nil
}

func (p *Puller) loop(ctx context.Context) {
	defer close(p.done)
	recvLoop(ctx, p.sock, p.ch, &p.received, &p.disconnects, p.opts)
}

// recvLoop moves frames from sock into ch until ctx ends. A receive error
// is a lost sender (zmq4 returns one per disconnect) and never ends the
// loop; a full ch blocks it (back-pressure to the senders).
func recvLoop(ctx context.Context, sock zmq4.Socket, ch chan item, received, disconnects *atomic.Uint64, o Options) {
	var lastErr time.Time
	for {
		msg, err := sock.Recv()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			disconnects.Add(1)
			o.Logger.Debug().Err(err).Msg("peer disconnected")
			// Errors come once per lost connection; never spin on them.
			if time.Since(lastErr) < time.Millisecond {
				time.Sleep(time.Millisecond)
			}
			lastErr = time.Now()
			continue
		}
		if msg.Type == zmq4.CmdMsg {
			continue
		}
		var items []item
		if len(msg.Frames) != 1 {
			items = []item{{err: fmt.Errorf("%d frames, want 1: %w", len(msg.Frames), ErrBadMessage)}}
		} else if ms, err := DecodeFrame(msg.Frames[0]); err != nil {
			items = []item{{err: err}}
		} else {
			items = make([]item, len(ms))
			for i, m := range ms {
				items[i].m = m
			}
		}
		for _, it := range items {
			received.Add(1)
			select {
			case ch <- it:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Recv returns the next message. A frame that does not decode is returned
// as an error wrapping ErrBadMessage; the Puller stays usable.
func (p *Puller) Recv(ctx context.Context) (Message, error) {
	return recvItem(ctx, p.ch, p.done)
}

// Close unbinds and removes the socket file.
func (p *Puller) Close() error {
	// Idempotent: a role closes the puller early to end its receiving
	// goroutine before unmapping shm, and again in a deferred cleanup.
	p.closing.Do(func() {
		p.cancel()
		closeQuietly(p.sock, p.opts, p.endpoint)
	})
	<-p.done
	return nil
}

// closeQuietly closes a zmq4 socket. Its error only reports connections
// that were already broken (the peer left first), which is normal here.
func closeQuietly(sock zmq4.Socket, o Options, endpoint string) {
	if err := sock.Close(); err != nil {
		o.Logger.Debug().Err(err).Str("endpoint", endpoint).Msg("close")
	}
}

func recvItem(ctx context.Context, ch chan item, done chan struct{}) (Message, error) {
	select {
	case it := <-ch:
		return it.m, it.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-done:
		select { // drain what arrived before the close
		case it := <-ch:
			return it.m, it.err
		default:
			return nil, ErrClosed
		}
	}
}
