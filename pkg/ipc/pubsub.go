package ipc

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/go-zeromq/zmq4"
)

// Publisher is the PUB end of a wake-up channel (detokenizer → apiserver).
// Publish never blocks: zmq4 queues the message and writes it to every
// subscriber in the background, dropping it past QueueLen queued
// messages. PUB/SUB is lossy by design (a subscriber that is connecting or
// slow misses messages), so receivers must also poll the shm state they
// are woken for.
type Publisher struct {
	endpoint string
	opts     Options
	sock     zmq4.Socket
	closed   atomic.Bool
}

// NewPublisher binds endpoint, removing a stale socket file first.
func NewPublisher(endpoint string, opts Options) (*Publisher, error) {
	path, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if err := clearStaleSocket(path); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	sock := zmq4.NewPub(context.Background(), opts.zmqOptions()...)
	if err := sock.SetOption(zmq4.OptionHWM, opts.QueueLen); err != nil {
		sock.Close()
		return nil, fmt.Errorf("ipc: set high-water mark on %s: %w", endpoint, err)
	}
	if err := sock.Listen(endpoint); err != nil {
		sock.Close()
		return nil, fmt.Errorf("ipc: listen %s: %w", endpoint, err)
	}
	return &Publisher{endpoint: endpoint, opts: opts, sock: sock}, nil
}

// Publish queues m for every current subscriber.
func (p *Publisher) Publish(m Message) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if err := p.sock.Send(zmq4.NewMsg(Encode(m))); err != nil {
		return fmt.Errorf("ipc: publish on %s: %w", p.endpoint, err)
	}
	return nil
}

// Close unbinds and removes the socket file.
func (p *Publisher) Close() error {
	if p.closed.CompareAndSwap(false, true) {
		closeQuietly(p.sock, p.opts, p.endpoint)
	}
	return nil
}

// Subscriber is the SUB end of a wake-up channel. It dials the publisher
// in the background and, because zmq4 never reconnects a SUB, re-creates
// its socket and re-dials (with backoff, forever) whenever the publisher
// goes away, e.g. when the detokenizer restarts. Messages arriving while
// the receive queue is full are dropped, as PUB/SUB does.
type Subscriber struct {
	endpoint string
	opts     Options
	ch       chan item
	cancel   context.CancelFunc
	done     chan struct{}

	received, disconnects, connects atomic.Uint64
}

// NewSubscriber starts subscribing to everything published on endpoint;
// the publisher may start later.
func NewSubscriber(endpoint string, opts Options) (*Subscriber, error) {
	if _, err := socketPath(endpoint); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Subscriber{endpoint: endpoint, opts: opts, ch: make(chan item, opts.QueueLen),
		cancel: cancel, done: make(chan struct{})}
	go s.loop(ctx)
	return s, nil
}

func (s *Subscriber) loop(ctx context.Context) {
	defer close(s.done)
	bo := newBackoff(s.opts)
	for ctx.Err() == nil {
		sock, err := dialSock(ctx, s.endpoint, func() zmq4.Socket {
			sub := zmq4.NewSub(context.Background(), s.opts.zmqOptions()...)
			// Set before Dial: zmq4 sends the subscription when the
			// connection is added.
			sub.SetOption(zmq4.OptionSubscribe, "")
			return sub
		})
		if err != nil {
			bo.wait(ctx)
			continue
		}
		bo.reset()
		if s.connects.Add(1) > 1 {
			s.opts.Logger.Info().Str("endpoint", s.endpoint).Msg("re-subscribed after the publisher restarted")
		}
		stop := context.AfterFunc(ctx, func() { sock.Close() })
		recvLoop(ctx, sock, s.ch, &s.received, &s.disconnects, s.opts, false)
		stop()
		closeQuietly(sock, s.opts, s.endpoint)
	}
}

// Recv returns the next message (see Puller.Recv).
func (s *Subscriber) Recv(ctx context.Context) (Message, error) { return recvItem(ctx, s.ch, s.done) }

// TryRecv is Recv without waiting.
func (s *Subscriber) TryRecv() (Message, bool, error) { return tryRecvItem(s.ch, s.done) }

// Connected reports whether the subscriber holds a connection now. The
// publisher may still be processing the subscription, so a message
// published right after this turns true can be missed.
func (s *Subscriber) Connected() bool { return s.connects.Load() > s.disconnects.Load() }

// Stats reports messages received, publisher losses seen and (re)connects.
func (s *Subscriber) Stats() (received, disconnects, connects uint64) {
	return s.received.Load(), s.disconnects.Load(), s.connects.Load()
}

// Close stops subscribing.
func (s *Subscriber) Close() error {
	s.cancel()
	<-s.done
	return nil
}
