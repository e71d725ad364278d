//go:build !linux

package rawconn

import "net"

// Elsewhere connections stay as they are (rawconn_linux.go says why Linux
// gets raw reads and writes).

// Listener returns l.
func Listener(l net.Listener) net.Listener { return l }

// Conn returns c.
func Conn(c net.Conn) net.Conn { return c }
