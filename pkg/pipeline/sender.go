package pipeline

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/ipc"
)

// Sender queues messages for one ipc.Pusher so that the caller never
// blocks: a goroutine hands them to the pusher in order, which dials and
// re-dials (a restarted peer) for as long as it takes. When the queue is
// full the oldest message is dropped; the receivers' slot-table scans make
// up for any message lost.
type Sender struct {
	p       *ipc.Pusher
	q       chan ipc.Message
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	dropped atomic.Uint64
	log     zerolog.Logger
}

// NewSender starts a sender to endpoint with room for queue messages.
func NewSender(endpoint string, queue int, log zerolog.Logger) (*Sender, error) {
	p, err := ipc.NewPusher(endpoint, ipc.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{p: p, q: make(chan ipc.Message, max(queue, 1)), ctx: ctx, cancel: cancel, done: make(chan struct{}), log: log}
	go s.run()
	return s, nil
}

// Send queues m.
func (s *Sender) Send(m ipc.Message) {
	for {
		select {
		case s.q <- m:
			return
		default:
		}
		select {
		case <-s.q:
			s.dropped.Add(1)
		default:
		}
	}
}

// Close stops the sender; queued messages are discarded.
func (s *Sender) Close() {
	s.cancel()
	<-s.done
	s.p.Close()
}

func (s *Sender) run() {
	defer close(s.done)
	for {
		select {
		case <-s.ctx.Done():
			return
		case m := <-s.q:
			if err := s.p.Send(s.ctx, m); err != nil && s.ctx.Err() == nil {
				s.log.Warn().Err(err).Msg("message not sent")
			}
		}
	}
}
