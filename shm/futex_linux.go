package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations without FUTEX_PRIVATE_FLAG: the word lives in a
// MAP_SHARED file mapping and the waker is usually another process, so the
// kernel must key the wait queue on the file page, not on this mm.
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexSleep blocks while *addr == val, for at most d. Spurious returns
// (EINTR, EAGAIN when the word already changed, ETIMEDOUT) are all fine:
// callers re-check their condition.
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every waiter on addr, in any process. FUTEX_WAKE
// never blocks, so it is a raw syscall, as the runtime's own futexwakeup:
// through Syscall6 the scheduler would see a syscall begin, which wakes a
// sleeping sysmon and resets it to polling every 20 µs, once per ring.
func futexWakeAll(addr *atomic.Uint32) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}
