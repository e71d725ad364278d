package ipc

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPushPullRoundTrip: a NewGroup over one PUSH→PULL pipe and a Metric
// back over a second one, as an echo server would; ns/op is one round
// trip through zmq4 over ipc:// sockets.
func BenchmarkPushPullRoundTrip(b *testing.B) {
	dir := runDir(b)
	there, _ := Endpoint(dir, "there.sock")
	back, _ := Endpoint(dir, "back.sock")
	pullThere, err := NewPuller(there, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pullThere.Close()
	pullBack, err := NewPuller(back, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pullBack.Close()
	pushThere, _ := NewPusher(there, Options{})
	defer pushThere.Close()
	pushBack, _ := NewPusher(back, Options{})
	defer pushBack.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() { // the echo side
		for {
			if _, err := pullThere.Recv(ctx); err != nil {
				return
			}
			if err := pushBack.Send(ctx, &Metric{Kind: GaugeSet, Name: "x"}); err != nil {
				return
			}
		}
	}()
	msg := &NewGroup{GroupID: 8, Arrival: time.Now(), Slots: []SlotRef{{Index: 3, Gen: 1}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := pushThere.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := pullBack.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/roundtrip")
}

// BenchmarkPushPullThroughput: one Pusher streams NewGroups to one Puller.
func BenchmarkPushPullThroughput(b *testing.B) {
	ep := endpoint(b, "tp.sock")
	pull, err := NewPuller(ep, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pull.Close()
	push, _ := NewPusher(ep, Options{})
	defer push.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	msg := &NewGroup{GroupID: 8, Arrival: time.Now(), Slots: []SlotRef{{Index: 3, Gen: 1}}}
	done := make(chan error, 1)
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			if _, err := pull.Recv(ctx); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if err := push.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkOptionalPusherSend: the cost a role pays per metric event (a
// non-blocking enqueue) while the metric peer is up.
func BenchmarkOptionalPusherSend(b *testing.B) {
	ep := endpoint(b, "m.sock")
	pull, err := NewPuller(ep, Options{QueueLen: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer pull.Close()
	push, _ := NewOptionalPusher(ep, Options{QueueLen: 1 << 16})
	defer push.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := pull.Recv(ctx); err != nil {
				return
			}
		}
	}()
	m := &Metric{Kind: CounterAdd, Name: "lightllm_generation_tokens_total", Labels: []Label{{"model_name", "m"}}, Value: 1}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		push.Send(m)
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	m := &NewGroup{GroupID: 8, Arrival: time.Now(), Slots: []SlotRef{{Index: 3, Gen: 1}, {Index: 4, Gen: 9}}}
	for i := 0; i < b.N; i++ {
		if _, err := Decode(Encode(m)); err != nil {
			b.Fatal(err)
		}
	}
}
