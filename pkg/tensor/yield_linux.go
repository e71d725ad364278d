//go:build linux

package tensor

import "golang.org/x/sys/unix"

// osYield offers this thread's CPU to any other runnable thread on it
// (another process's: the server's pipeline roles beside infer); it
// returns at once when there is none. Raw: the thread keeps its P, as
// when the OS pre-empts it.
func osYield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
