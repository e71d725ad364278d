//go:build !race

package rawconn

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sysRead and sysWrite are one raw read(2) and write(2) of a non-empty b.
func sysRead(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}

func sysWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}
