//go:build race

package rawconn

import (
	"errors"
	"syscall"
)

// Under the race detector the reads and writes go through package
// syscall, whose annotations are the detector's happens-before edge from a
// write on one end of a connection to the read on the other: without them
// a client and a server in one test process (httptest) look racy. The
// netpoller path around them is the same as without the detector.

func sysRead(fd uintptr, b []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), b)
	return max(n, 0), errno(err)
}

func sysWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), b)
	return max(n, 0), errno(err)
}

func errno(err error) syscall.Errno {
	var e syscall.Errno
	if err != nil && !errors.As(err, &e) {
		return syscall.EIO
	}
	return e
}
