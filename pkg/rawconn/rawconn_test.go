package rawconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// pair is a loopback TCP or unix stream connection whose both ends are
// wrapped.
func pair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s.sock")
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rl := Listener(l)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := rl.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	c, err := net.Dial(network, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	client = Conn(c)
	for _, x := range []net.Conn{client, s} {
		_, tcp := x.(*conn)
		_, unix := x.(*unixConn)
		if !tcp && !unix && runtime.GOOS == "linux" {
			t.Fatalf("%T not wrapped", x)
		}
	}
	t.Cleanup(func() { client.Close(); s.Close() })
	return client, s
}

func TestConn(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, c, s net.Conn)
	}{
		{"bytes written arrive in order, past the socket buffers (partial writes, EAGAIN)", func(t *testing.T, c, s net.Conn) {
			want := make([]byte, 8<<20)
			for i := range want {
				want[i] = byte(i * 7)
			}
			werr := make(chan error, 1)
			go func() {
				n, err := s.Write(want)
				if err == nil && n != len(want) {
					err = io.ErrShortWrite
				}
				s.(interface{ CloseWrite() error }).CloseWrite()
				werr <- err
			}()
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
			}
		}},
		{"the peer's close is io.EOF, with no bytes", func(t *testing.T, c, s net.Conn) {
			s.Close()
			n, err := c.Read(make([]byte, 16))
			if n != 0 || err != io.EOF {
				t.Fatalf("read %d, %v; want 0, io.EOF", n, err)
			}
		}},
		{"an empty read returns at once", func(t *testing.T, c, s net.Conn) {
			if n, err := c.Read(nil); n != 0 || err != nil {
				t.Fatalf("read %d, %v", n, err)
			}
		}},
		{"a read deadline ends a parked read with a timeout", func(t *testing.T, c, s net.Conn) {
			// The deadline is counted from start: a pause between the two
			// calls must not make the timeout look early.
			start := time.Now()
			c.SetReadDeadline(start.Add(30 * time.Millisecond))
			_, err := c.Read(make([]byte, 16))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read error %v, want a timeout", err)
			}
			if d := time.Since(start); d < 30*time.Millisecond {
				t.Fatalf("timed out after %v", d)
			}
		}},
		{"a write deadline ends a write the peer does not read", func(t *testing.T, c, s net.Conn) {
			s.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := s.Write(make([]byte, 64<<20))
			if !errors.Is(err, os.ErrDeadlineExceeded) || n >= 64<<20 {
				t.Fatalf("wrote %d, %v; want part, and a timeout", n, err)
			}
		}},
		{"Close unparks a read with net.ErrClosed", func(t *testing.T, c, s net.Conn) {
			errc := make(chan error, 1)
			go func() {
				_, err := c.Read(make([]byte, 16))
				errc <- err
			}()
			time.Sleep(20 * time.Millisecond)
			c.Close()
			if err := <-errc; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read error %v, want net.ErrClosed", err)
			}
		}},
		{"writing to a reset connection fails with a net.OpError", func(t *testing.T, c, s net.Conn) {
			if tc, ok := c.(*conn); ok {
				tc.SetLinger(0) // close sends RST; a unix peer's close is EPIPE
			}
			c.Close()
			var err error
			for i := 0; i < 100 && err == nil; i++ {
				_, err = s.Write([]byte("data: x\n\n"))
				time.Sleep(time.Millisecond)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "write" {
				t.Fatalf("write error %v, want a write net.OpError", err)
			}
		}},
	}
	for _, network := range []string{"tcp", "unix"} {
		for _, tc := range cases {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				c, s := pair(t, network)
				tc.run(t, c, s)
			})
		}
	}
}

// TestConnNotTCP: other connections are returned as they are.
func TestConnNotTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Conn(a) != a {
		t.Fatal("a net.Pipe was wrapped")
	}
}
