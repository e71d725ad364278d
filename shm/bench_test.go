package shm

import (
	"context"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// BenchmarkRingRoundTrip: the router→infer path and back. One goroutine
// pushes a command and waits on a doorbell; the other pops it (PopWait:
// brief poll, then futex) and rings the doorbell. ns/op is a full round
// trip.
func BenchmarkRingRoundTrip(b *testing.B) {
	r := newTestRegion(b, Sizes{Slots: 4, MaxReqTotalLen: 16, TextQueueBytes: 64, RingEntries: 64})
	q := r.Commands()
	rs, _ := r.Role(RoleRouter)
	reply := r.Bell(rs)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	defer func() { cancel(); <-exited }() // before the region is unmapped
	go func() {
		defer close(exited)
		for {
			if _, err := q.PopWait(ctx); err != nil {
				return
			}
			reply.Ring()
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seen := reply.Seq()
		if _, err := q.PushWait(ctx, Command{Op: OpNew, Slot: 1}); err != nil {
			b.Fatal(err)
		}
		if err := reply.WaitFor(ctx, func() bool { return reply.Seq() != seen }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/roundtrip")
}

// BenchmarkRingThroughput: one producer streams commands through a
// 64-entry ring to one consumer; both wait on futexes when full/empty.
func BenchmarkRingThroughput(b *testing.B) {
	r := newTestRegion(b, Sizes{Slots: 4, MaxReqTotalLen: 16, TextQueueBytes: 64, RingEntries: 64})
	q := r.Commands()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			if _, err := q.PopWait(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if _, err := q.PushWait(ctx, Command{Op: OpNew, Slot: uint32(i % 4), Arg: uint32(i)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkFutexPingPong: the bare futex wake-up, with no polling: each
// side sleeps in FUTEX_WAIT until the other rings. ns/op is two wake-ups.
func BenchmarkFutexPingPong(b *testing.B) {
	r := newTestRegion(b, smallSizes)
	ra, _ := r.Role(RoleInfer)
	rb, _ := r.Role(RoleDetokenizer)
	ping, pong := r.Bell(ra), r.Bell(rb)
	stop, exited := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-exited }()
	seen0 := ping.Seq() // before the first Ring below can happen
	go func() {
		defer close(exited)
		seen := seen0
		for {
			for !ping.Wait(seen, 20*time.Millisecond) {
				select {
				case <-stop:
					return
				default:
				}
			}
			seen = ping.Seq()
			pong.Ring()
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seen := pong.Seq()
		ping.Ring()
		for !pong.Wait(seen, time.Second) {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2e3, "µs/wake")
}

// BenchmarkTextQueue: detokenizer→apiserver pieces through one slot's
// queue, pushed and drained by one goroutine (the copy cost alone).
func BenchmarkTextQueue(b *testing.B) {
	r := newTestRegion(b, Sizes{Slots: 1, MaxReqTotalLen: 16, TextQueueBytes: 4096, RingEntries: 4})
	s, gen, _ := r.Alloc(1)
	s.Fill(gen, Request{Prompt: []int32{1}, Params: sampler.Params{MaxNewTokens: 1}})
	piece := TextPiece{Text: []byte(" hello")}
	buf := make([]byte, 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.PushText(piece); err != nil {
			b.Fatal(err)
		}
		if _, ok, err := s.PopText(buf); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
