package ipc

import "errors"

var (
	// ErrClosed is returned by every call on a closed socket.
	ErrClosed = errors.New("ipc: socket closed")
	// ErrAddrInUse: a live process already listens on the socket path.
	ErrAddrInUse = errors.New("ipc: another process is listening on this socket")
)
