package ipc

import (
	"context"
	"net"
	"strings"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/transport"

	"github.com/lightllm-go/lightllm/pkg/rawconn"
)

// zmq4 reaches our ipc:// endpoints through the "rawipc" transport: the
// same unix stream sockets as zmq4's own ipc transport, with raw reads and
// writes (pkg/rawconn says why). Only this process's side of a connection
// changes: the endpoint in the run directory, the socket and the ZMTP
// bytes are the same, so the roles need not agree on it.
const rawScheme = "rawipc"

func init() {
	if err := zmq4.RegisterTransport(rawScheme, rawIPC{}); err != nil {
		panic(err) // a second registration: a programming error
	}
}

// zmqEndpoint is endpoint (ipc://PATH) as handed to zmq4.
func zmqEndpoint(endpoint string) string {
	if path, ok := strings.CutPrefix(endpoint, "ipc://"); ok {
		return rawScheme + "://" + path
	}
	return endpoint
}

type rawIPC struct{}

func (rawIPC) Dial(ctx context.Context, d transport.Dialer, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return nil, err
	}
	return rawconn.Conn(c), nil
}

func (rawIPC) Listen(_ context.Context, addr string) (net.Listener, error) {
	l, err := net.Listen("unix", addr)
	if err != nil {
		return nil, err
	}
	return rawconn.Listener(l), nil
}

func (rawIPC) Addr(ep string) (string, error) { return ep, nil }
