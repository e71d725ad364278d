// Package cputime reads the CPU time of the calling OS thread, which
// measures work on a busy machine where wall clocks mostly measure waiting.
package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// Thread is the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID); with the goroutine locked to its thread,
// differences measure work done on one core however busy the machine is.
func Thread() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
