package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/rs/zerolog"
)

// Endpoint is the ZeroMQ endpoint of a run-directory socket path
// (config.Config.SocketPath(name)).
func Endpoint(socketPath string) string { return "ipc://" + socketPath }

// Puller is the bound, receiving end of a pipe (a ZeroMQ PULL socket).
type Puller struct {
	sock   zmq4.Socket
	ctx    context.Context
	cancel context.CancelFunc
}

// Listen binds a PULL socket at endpoint, first removing a socket file that
// a killed predecessor left behind (zmq4 cannot bind over it).
func Listen(endpoint string) (*Puller, error) {
	if path, ok := strings.CutPrefix(endpoint, "ipc://"); ok {
		if err := removeStaleSocket(path); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewPull(ctx)
	if err := s.Listen(endpoint); err != nil {
		s.Close()
		cancel()
		return nil, fmt.Errorf("listen %s: %w", endpoint, err)
	}
	return &Puller{sock: s, ctx: ctx, cancel: cancel}, nil
}

// Recv returns the next message. A peer going away (zmq4 reports io.EOF for
// each disconnect) is not an error of this socket and is skipped; after
// Close, Recv returns net.ErrClosed.
func (p *Puller) Recv() ([]byte, error) {
	for {
		m, err := p.sock.Recv()
		if p.ctx.Err() != nil {
			return nil, net.ErrClosed
		}
		if err != nil || len(m.Frames) == 0 {
			continue
		}
		if len(m.Frames) == 1 {
			return m.Frames[0], nil
		}
		return m.Bytes(), nil
	}
}

// Close unbinds the socket.
func (p *Puller) Close() error {
	p.cancel()
	return p.sock.Close()
}

// removeStaleSocket deletes a unix socket file nobody listens on.
func removeStaleSocket(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("listen %s: another process is listening there", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("probe stale socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// PusherOptions configure NewPusher.
type PusherOptions struct {
	// Endpoint is the peer's PULL endpoint.
	Endpoint string
	// PeerEpoch returns the peer role's epoch in shm; when it changes the
	// peer has restarted and the socket is re-dialled before the next send
	// (zmq4 would otherwise keep "sending" into the dead connection). Nil:
	// re-dial only after send errors.
	PeerEpoch func() uint32
	// Queue bounds the messages waiting to be sent (default 4096); past it
	// the oldest are dropped, which the receivers' shm scans make up for.
	Queue int
	// SendTimeout bounds one send (default 1 s).
	SendTimeout time.Duration
	Log         zerolog.Logger
}

// Pusher is the dialling, sending end of a 1:1 pipe (a ZeroMQ PUSH socket;
// zmq4 duplicates a PUSH to several peers instead of balancing, so each
// pipe has one peer). Send never blocks: one goroutine drains a queue,
// dialling and re-dialling with backoff as long as it takes.
type Pusher struct {
	o      PusherOptions
	q      chan []byte
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	dropped uint64
}

// NewPusher starts a pusher; Close stops it.
func NewPusher(o PusherOptions) *Pusher {
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pusher{o: o, q: make(chan []byte, o.Queue), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go p.run()
	return p
}

// Send queues msg. When the queue is full the oldest message is dropped.
func (p *Pusher) Send(msg []byte) {
	for {
		select {
		case p.q <- msg:
			return
		default:
		}
		select {
		case <-p.q:
			p.mu.Lock()
			p.dropped++
			p.mu.Unlock()
		default:
		}
	}
}

// Dropped is the number of messages dropped for lack of queue room.
func (p *Pusher) Dropped() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops the pusher; queued messages are discarded.
func (p *Pusher) Close() {
	p.cancel()
	<-p.done
}

func (p *Pusher) run() {
	defer close(p.done)
	var (
		sock  zmq4.Socket
		epoch uint32
		fails int
	)
	closeSock := func() {
		if sock != nil {
			sock.Close()
			sock = nil
		}
	}
	defer closeSock()
	for {
		var msg []byte
		select {
		case <-p.ctx.Done():
			return
		case msg = <-p.q:
		}
		for {
			if sock != nil && p.o.PeerEpoch != nil && p.o.PeerEpoch() != epoch {
				closeSock() // the peer restarted: the old connection is dead
			}
			if sock == nil {
				if p.o.PeerEpoch != nil {
					epoch = p.o.PeerEpoch()
				}
				s, err := p.dial()
				if err == nil {
					sock = s
				} else if fails++; fails == 1 || fails%100 == 0 {
					p.o.Log.Debug().Err(err).Int("attempt", fails).Msg("dial")
				}
			}
			if sock != nil {
				err := sock.Send(zmq4.NewMsg(msg))
				if err == nil {
					fails = 0
					break
				}
				p.o.Log.Debug().Err(err).Str("endpoint", p.o.Endpoint).Msg("send failed; re-dialling")
				closeSock()
				fails++
			}
			d := min(time.Duration(fails)*20*time.Millisecond, time.Second)
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}
}

func (p *Pusher) dial() (zmq4.Socket, error) {
	s := zmq4.NewPush(p.ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithTimeout(p.o.SendTimeout),
		zmq4.WithDialerTimeout(p.o.SendTimeout))
	if err := s.Dial(p.o.Endpoint); err != nil {
		s.Close()
		return nil, fmt.Errorf("dial %s: %w", p.o.Endpoint, err)
	}
	return s, nil
}
