package ipc

import (
	"context"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

// pushSock dials a bare PUSH socket to ep: the transport under an
// OptionalPusher, without its linger, so that ns/op is what zmq4 and the
// ipc:// socket cost.
func pushSock(b *testing.B, ctx context.Context, ep string) zmq4.Socket {
	b.Helper()
	sock, err := dialPush(ctx, ep, Options{}.withDefaults())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sock.Close() })
	return sock
}

// BenchmarkPushPullRoundTrip: a Metric over one PUSH→PULL pipe and one
// back over a second, as an echo server would; ns/op is one round trip
// through zmq4 over ipc:// sockets.
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pushThere := pushSock(b, ctx, there)
	pushBack := pushSock(b, ctx, back)
	echo := Encode(&Metric{Kind: GaugeSet, Name: "x"})
	go func() { // the echo side
		for {
			if _, err := pullThere.Recv(ctx); err != nil {
				return
			}
			if err := sendOrClose(ctx, pushBack, echo); err != nil {
				return
			}
		}
	}()
	msg := Encode(benchMetric)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sendOrClose(ctx, pushThere, msg); err != nil {
			b.Fatal(err)
		}
		if _, err := pullBack.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/roundtrip")
}

// BenchmarkPushPullThroughput: one PUSH socket streams Metrics, one frame
// each, to one Puller.
func BenchmarkPushPullThroughput(b *testing.B) {
	ep := endpoint(b, "tp.sock")
	pull, err := NewPuller(ep, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pull.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	push := pushSock(b, ctx, ep)
	msg := Encode(benchMetric)
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
		if err := sendOrClose(ctx, push, msg); err != nil {
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		push.Send(benchMetric)
	}
}

// benchMetric is a typical event: a per-request counter with the model
// label.
var benchMetric = &Metric{Kind: CounterAdd, Name: "lightllm_generation_tokens_total", Labels: []Label{{"model_name", "m"}}, Value: 1}

func BenchmarkEncodeDecode(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := Decode(Encode(benchMetric)); err != nil {
			b.Fatal(err)
		}
	}
}
