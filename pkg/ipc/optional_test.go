package ipc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOptionalPusherLinger: the writer holds messages for its linger (it
// sleeps on the timer, not on the queue), writes early once the queue is
// half full, delivers a burst of several MaxBatch frames whole and in
// order, and Close during a linger drops and counts what it held.
//
// With a linger no test waits out, what must arrive is what a half-full
// queue forces out: all but at most half a queue (the message in the
// writer's hand and fewer than half queued behind it).
func TestOptionalPusherLinger(t *testing.T) {
	const hour = time.Hour
	type round struct {
		send int  // messages sent back to back
		want int  // messages (all rounds) that must have arrived after it
		held bool // none of its messages may arrive within 300 ms
	}
	for _, tc := range []struct {
		name     string
		queueLen int
		linger   time.Duration
		rounds   []round
		// after Close: sent + dropped is every message sent; at least these
		sent, dropped uint64
	}{
		{"below half a queue waits for the linger; Close drops and counts it",
			64, hour, []round{{send: 20, held: true}}, 0, 20},
		{"a half-full queue ends the linger", 64, hour, []round{{send: 33, want: 32}}, 32, 0},
		{"half-full queues in turn each end the linger", 64, hour,
			[]round{{send: 33, want: 32}, {send: 40, want: 73 - 32}, {send: 33, want: 106 - 32}}, 106 - 32, 0},
		{"a burst of several frames arrives whole and in order", 1024, optionalLinger,
			[]round{{send: 3*MaxBatch + 7, want: 3*MaxBatch + 7}}, 3*MaxBatch + 7, 0},
		{"a burst, then a few held until Close", 64, hour,
			[]round{{send: 33, want: 32}, {send: 5, held: true}}, 32, 5},
		{"the default linger delivers a lone message", 0, optionalLinger, []round{{send: 1, want: 1}}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := endpoint(t, "metric.sock")
			pull, err := NewPuller(ep, Options{QueueLen: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer pull.Close()
			opts := fastRetry
			opts.QueueLen = tc.queueLen
			push, err := newOptionalPusher(ep, opts, tc.linger)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			sent, got := 0, 0
			// recv takes the next message, in order; false: none within ctx.
			recv := func(ctx context.Context) bool {
				t.Helper()
				m, err := pull.Recv(ctx)
				if errors.Is(err, context.DeadlineExceeded) {
					return false
				}
				if err != nil {
					t.Fatalf("message %d: %v", got, err)
				}
				if mm, ok := m.(*Metric); !ok || mm.Value != float64(got) {
					t.Fatalf("message %d: %#v", got, m)
				}
				got++
				return true
			}
			for r, rd := range tc.rounds {
				first := sent
				for range rd.send {
					if !push.Send(&Metric{Kind: CounterAdd, Name: "c", Value: float64(sent)}) {
						t.Fatalf("round %d: message %d dropped at Send", r, sent)
					}
					sent++
				}
				for got < rd.want {
					if !recv(ctx) {
						t.Fatalf("round %d: %d of the %d messages that must arrive did", r, got, rd.want)
					}
				}
				if rd.held {
					// An earlier round's tail may still arrive; this one's not.
					hctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					for recv(hctx) {
						if got > first {
							t.Fatalf("round %d: message %d arrived during the linger", r, got-1)
						}
					}
					cancel()
				}
			}
			// The writer counts a frame sent once its write returns, which
			// can be after the puller has it (and a Close meanwhile makes it
			// a drop): wait for the count first.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if s, _ := push.Stats(); s >= uint64(got) {
					break
				}
			}
			start := time.Now()
			push.Close()
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Close took %v: it waited for the linger", d)
			}
			s, d := push.Stats()
			if s+d != uint64(sent) || s < tc.sent || d < tc.dropped {
				t.Fatalf("after Close: sent %d dropped %d of %d, want at least %d and %d", s, d, sent, tc.sent, tc.dropped)
			}
			// Frames written before Close still arrive, nothing else does.
			for got < int(s) {
				if !recv(ctx) {
					t.Fatalf("%d of the %d messages sent arrived", got, s)
				}
			}
			time.Sleep(20 * time.Millisecond)
			if m, ok, _ := pull.TryRecv(); ok {
				t.Errorf("a message beyond the %d sent arrived: %#v", s, m)
			}
		})
	}
}
