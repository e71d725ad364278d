package ipc

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runDir returns a short directory: unix socket paths are limited to 107
// bytes, and t.TempDir() paths embed the (long) test name.
func runDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func endpoint(t testing.TB, name string) string {
	t.Helper()
	ep, err := Endpoint(runDir(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var fastRetry = Options{MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}

func TestEndpoint(t *testing.T) {
	if _, err := Endpoint("/tmp/"+strings.Repeat("d", 120), "router.sock"); err == nil {
		t.Error("accepted a socket path longer than sun_path")
	}
	if _, err := Endpoint("/tmp", "a/b"); err == nil {
		t.Error("accepted a name with a slash")
	}
	ep, err := Endpoint("/tmp/run", SockMetric)
	if err != nil || ep != "ipc:///tmp/run/metric.sock" {
		t.Errorf("Endpoint = %q, %v", ep, err)
	}
	if _, err := NewPuller("tcp://127.0.0.1:1", Options{}); err == nil {
		t.Error("NewPuller accepted a non-ipc endpoint")
	}
}

// TestPullerEOF: peers connecting and leaving make zmq4's Recv return
// io.EOF; the Puller keeps serving the next peers (each role's
// OptionalPusher comes and goes with its role).
func TestPullerEOF(t *testing.T) {
	ep := endpoint(t, "eof.sock")
	pull, err := NewPuller(ep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	ctx := testCtx(t)
	for i := range 5 {
		push, err := newOptionalPusher(ep, fastRetry, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		push.Send(&Metric{Kind: GaugeSet, Name: "peer", Value: float64(i)})
		m, err := pull.Recv(ctx)
		if err != nil {
			t.Fatalf("peer %d: %v", i, err)
		}
		if mm, ok := m.(*Metric); !ok || mm.Value != float64(i) {
			t.Fatalf("peer %d: got %#v", i, m)
		}
		push.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, d := pull.Stats(); d < 4; _, d = pull.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("saw %d disconnects, want at least 4", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOptionalPusherCloseWhileDialing: a peer that accepts connections
// but never completes the ZMTP handshake (a hung metric role) holds zmq4's
// Dial without a deadline; Close must still return at once and count the
// message in hand as dropped.
func TestOptionalPusherCloseWhileDialing(t *testing.T) {
	dir := runDir(t)
	path := filepath.Join(dir, "hung.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The connection is accepted and never answered: its arrival says the
	// writer is in Dial, waiting for a greeting that never comes.
	dialing := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			dialing <- c
		}
	}()
	push, err := newOptionalPusher("ipc://"+path, fastRetry, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	push.Send(&Metric{Kind: CounterAdd, Name: "c", Value: 1})
	select {
	case c := <-dialing:
		defer c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never connected")
	}
	start := time.Now()
	push.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a dial hung", d)
	}
	if sent, dropped := push.Stats(); sent != 0 || dropped != 1 {
		t.Fatalf("sent %d dropped %d, want 0 and 1", sent, dropped)
	}
}

func TestStaleSocket(t *testing.T) {
	dir := runDir(t)
	path := filepath.Join(dir, "stale.sock")
	// A socket file whose listener died (as after SIGKILL).
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not left behind: %v", err)
	}
	pull, err := NewPuller("ipc://"+path, Options{})
	if err != nil {
		t.Fatalf("bind over a stale socket: %v", err)
	}
	// A live listener is not stolen.
	if _, err := NewPuller("ipc://"+path, Options{}); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("second bind: %v, want ErrAddrInUse", err)
	}
	pull.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("Close left the socket file: %v", err)
	}
	// A regular file is never removed.
	file := filepath.Join(dir, "file.sock")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := NewPuller("ipc://"+file, Options{}); err == nil {
		t.Fatal("bound over a regular file")
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("regular file removed: %v", err)
	}
}

// TestOptionalPusher: with the peer down, Send never blocks and counts the
// drops; once the peer is up, messages flow; a peer restart costs at most
// the messages sent while it was down.
func TestOptionalPusher(t *testing.T) {
	ep := endpoint(t, "metric.sock")
	opts := fastRetry
	opts.QueueLen = 8
	push, err := NewOptionalPusher(ep, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close()
	start := time.Now()
	for range 1000 {
		push.Send(&Metric{Kind: CounterAdd, Name: "c", Value: 1})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 sends to a dead peer took %v", d)
	}
	// Every message to a dead peer ends up dropped and counted: at Send when
	// the queue is full, or by the writer once its batch (up to MaxBatch
	// taken off the queue within optionalLinger) finds no peer. How many
	// were still in its hands when the loop ended depends on scheduling
	// (CI under -race saw 179), so wait for the count rather than sample it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		sent, dropped := push.Stats()
		if sent != 0 {
			t.Fatalf("%d messages sent to a dead peer", sent)
		}
		if dropped == 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dropped %d of 1000 sent to a dead peer, 10 s after the sends", dropped)
		}
	}
	ctx := testCtx(t)
	for round := range 2 {
		pull, err := NewPuller(ep, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Keep sending until a "g" arrives: the pusher redials on its
		// backoff schedule (and may first deliver what was still queued).
		got := make(chan Message, 1)
		go func() {
			for {
				m, err := pull.Recv(ctx)
				if mm, ok := m.(*Metric); err != nil || ok && mm.Name == "g" {
					got <- m
					return
				}
			}
		}()
		deadline := time.After(5 * time.Second)
	wait:
		for {
			push.Send(&Metric{Kind: GaugeSet, Name: "g", Value: float64(round)})
			select {
			case m := <-got:
				if mm, ok := m.(*Metric); !ok || mm.Name != "g" {
					t.Fatalf("round %d got %#v", round, m)
				}
				break wait
			case <-deadline:
				t.Fatalf("round %d: nothing arrived", round)
			case <-time.After(5 * time.Millisecond):
			}
		}
		pull.Close()
	}
	// The writer counts a frame sent once its write returns, which can be
	// after the puller has it (CI under -race saw 1 of 2): wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		sent, _ := push.Stats()
		if sent >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent %d, want >= 2 (both rounds arrived)", sent)
		}
	}
}

func TestBadFrameKeepsPuller(t *testing.T) {
	ep := endpoint(t, "bad.sock")
	pull, err := NewPuller(ep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	ctx := testCtx(t)
	sock, err := dialPush(ctx, ep, Options{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	if err := sendOrClose(ctx, sock, []byte{0xee, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := sendOrClose(ctx, sock, Encode(&Metric{Kind: GaugeSet, Name: "after", Value: 9})); err != nil {
		t.Fatal(err)
	}
	if _, err := pull.Recv(ctx); !errors.Is(err, ErrBadMessage) {
		t.Fatalf("bad frame: %v", err)
	}
	if m, err := pull.Recv(ctx); err != nil || m.(*Metric).Value != 9 {
		t.Fatalf("after a bad frame: %#v %v", m, err)
	}
	pull.Close()
	if _, err := pull.Recv(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after Close: %v", err)
	}
}

// TestOptionalPusherBatches: messages sent together reach the puller one by
// one, in order, and all are counted as sent, whether the pusher frames
// them singly or in batches.
func TestOptionalPusherBatches(t *testing.T) {
	ep := endpoint(t, "metric.sock")
	pull, err := NewPuller(ep, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	push, err := NewOptionalPusher(ep, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close()
	ctx := testCtx(t)
	const n = 600 // more than MaxBatch: at least three frames
	for i := range n {
		push.Send(&Metric{Kind: CounterAdd, Name: "c", Value: float64(i)})
	}
	for i := range n {
		m, err := pull.Recv(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if mm, ok := m.(*Metric); !ok || mm.Value != float64(i) {
			t.Fatalf("message %d: %#v", i, m)
		}
	}
	if m, ok, err := pull.TryRecv(); ok || err != nil {
		t.Fatalf("TryRecv on an empty queue: %v %v %v", m, ok, err)
	}
	// The sender counts a frame as sent after its write returns, which
	// may be after the puller has read it.
	deadline := time.Now().Add(10 * time.Second)
	sent, dropped := push.Stats()
	for sent < n && dropped == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		sent, dropped = push.Stats()
	}
	if sent != n || dropped != 0 {
		t.Fatalf("sent %d dropped %d, want %d and 0", sent, dropped, n)
	}
}
