package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Pusher is the sending half of the role → metric channel (a ZeroMQ PUSH
// socket). Send may block for at most the timeout the socket was dialled
// with; the Client calls it only from its own goroutine.
type Pusher interface {
	Send(msg []byte) error
	Close() error
}

// Puller is the metric role's receiving half (a ZeroMQ PULL socket). Recv
// returns net.ErrClosed once Close was called.
type Puller interface {
	Recv() ([]byte, error)
	Close() error
}

// DialFunc connects a Pusher to the metric role's endpoint.
type DialFunc func(endpoint string, timeout time.Duration) (Pusher, error)

// ListenFunc binds the metric role's Puller.
type ListenFunc func(endpoint string) (Puller, error)

// Endpoint is the metric role's ZeroMQ endpoint for a run directory socket
// path (config.Config.SocketPath("metric")).
func Endpoint(socketPath string) string { return "ipc://" + socketPath }

// The zmq4 adapters below carry the workarounds the role → metric channel
// needs (pkg/ipc is meant to own them; see the package doc):
//   - dial without zmq4's built-in retry loop (10 × 250 ms by default), so a
//     down metric role costs the client's goroutine one failed connect, and
//     the Client's own backoff decides when to try again;
//   - a send timeout, because a zmq4 PUSH with no peer blocks until it has one;
//   - PULL ignores the error a departing peer produces (EOF) instead of
//     treating it as the socket failing;
//   - a stale ipc socket file left by a killed metric role is removed before
//     listening, after checking nobody answers on it.

// DialZMQ dials a PUSH socket at endpoint; Send gives up after timeout.
func DialZMQ(endpoint string, timeout time.Duration) (Pusher, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewPush(ctx, zmq4.WithDialerMaxRetries(0), zmq4.WithTimeout(timeout), zmq4.WithDialerTimeout(timeout))
	if err := s.Dial(endpoint); err != nil {
		s.Close()
		cancel()
		return nil, fmt.Errorf("dial metric role %s: %w", endpoint, err)
	}
	return &zmqPush{sock: s, cancel: cancel}, nil
}

type zmqPush struct {
	sock   zmq4.Socket
	cancel context.CancelFunc
}

func (p *zmqPush) Send(msg []byte) error { return p.sock.Send(zmq4.NewMsg(msg)) }

func (p *zmqPush) Close() error {
	err := p.sock.Close()
	p.cancel()
	return err
}

// ListenZMQ binds a PULL socket at endpoint.
func ListenZMQ(endpoint string) (Puller, error) {
	if path, ok := strings.CutPrefix(endpoint, "ipc://"); ok {
		if err := RemoveStaleSocket(path); err != nil {
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
	return &zmqPull{sock: s, ctx: ctx, cancel: cancel}, nil
}

type zmqPull struct {
	sock   zmq4.Socket
	ctx    context.Context
	cancel context.CancelFunc
}

func (p *zmqPull) Recv() ([]byte, error) {
	for {
		m, err := p.sock.Recv()
		if p.ctx.Err() != nil {
			return nil, net.ErrClosed
		}
		if err != nil {
			// A PUSH peer went away (a role restarted): not our failure.
			continue
		}
		switch len(m.Frames) {
		case 0:
			continue
		case 1:
			return m.Frames[0], nil
		default:
			return m.Bytes(), nil
		}
	}
}

func (p *zmqPull) Close() error {
	p.cancel()
	return p.sock.Close()
}

// RemoveStaleSocket deletes a unix socket file nobody listens on (one a
// killed process left behind), and fails if a live process still listens.
func RemoveStaleSocket(path string) error {
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
