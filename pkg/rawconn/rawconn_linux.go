// Package rawconn wraps TCP and unix stream connections so that their reads and writes
// are raw syscalls on the non-blocking socket, waiting for readiness in
// Go's netpoller exactly as net.Conn does.
//
// Why: an SSE stream costs one write per token on the server and one read
// on the client. Through net.Conn each is a syscall the scheduler is told
// about (entersyscall), and the first one after the process went idle
// wakes the runtime's sysmon thread, which then polls every 20 µs for as
// long as the process is busy: on the two-core host the project is
// measured on that polling was a sixth of the apiserver's and the
// benchmark client's CPU per token. A read or write on a non-blocking
// socket never blocks, so it needs no such bookkeeping (the runtime's own
// netpoller uses raw calls too); EAGAIN parks the goroutine in the
// netpoller through syscall.RawConn, which also applies the connection's
// deadlines.
package rawconn

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Listener returns l whose accepted TCP connections are wrapped by Conn.
func Listener(l net.Listener) net.Listener { return listener{l} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Conn(c), nil
}

// Conn returns c with raw reads and writes when it is a *net.TCPConn or a
// *net.UnixConn (stream), else c itself. Everything but Read and Write
// (deadlines, Close, CloseWrite, ReadFrom, ...) is the connection's own.
func Conn(c net.Conn) net.Conn {
	switch x := c.(type) {
	case *net.TCPConn:
		if rc, err := x.SyscallConn(); err == nil {
			return &conn{TCPConn: x, raw: raw{rc: rc, network: "tcp", laddr: x.LocalAddr(), raddr: x.RemoteAddr()}}
		}
	case *net.UnixConn:
		if rc, err := x.SyscallConn(); err == nil {
			return &unixConn{UnixConn: x, raw: raw{rc: rc, network: "unix", laddr: x.LocalAddr(), raddr: x.RemoteAddr()}}
		}
	}
	return c
}

type conn struct {
	*net.TCPConn
	raw
}

func (c *conn) Read(b []byte) (int, error)  { return c.raw.read(b) }
func (c *conn) Write(b []byte) (int, error) { return c.raw.write(b) }

type unixConn struct {
	*net.UnixConn
	raw
}

func (c *unixConn) Read(b []byte) (int, error)  { return c.raw.read(b) }
func (c *unixConn) Write(b []byte) (int, error) { return c.raw.write(b) }

// raw is the reading and writing of a stream socket.
type raw struct {
	rc           syscall.RawConn
	network      string // for errors, as net's
	laddr, raddr net.Addr
}

// read reads as net.Conn does: at most len(b) bytes, io.EOF at the end.
func (c *raw) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n    int
		serr error
	)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			m, e := sysRead(fd, b)
			switch e {
			case 0:
				n = m
				if n == 0 {
					serr = io.EOF
				}
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // park until readable (or the deadline)
			}
			serr = os.NewSyscallError("read", e)
			return true
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil && err != io.EOF {
		err = &net.OpError{Op: "read", Net: c.network, Source: c.laddr, Addr: c.raddr, Err: err}
	}
	return n, err
}

// write writes all of b, as net.Conn does, unless an error comes first.
func (c *raw) write(b []byte) (int, error) {
	var (
		n    int
		serr error
	)
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, e := sysWrite(fd, b[n:])
			switch e {
			case 0:
				n += m
				continue
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // park until writable (or the deadline)
			}
			serr = os.NewSyscallError("write", e)
			return true
		}
		return true
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		err = &net.OpError{Op: "write", Net: c.network, Source: c.laddr, Addr: c.raddr, Err: err}
	}
	return n, err
}
