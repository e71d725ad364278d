//go:build !linux

package shm

import (
	"sync/atomic"
	"time"
)

// Without futexes a waiter naps briefly and re-checks; wake-up latency is
// then the nap length, but the protocol stays correct.
func futexSleep(addr *atomic.Uint32, val uint32, d time.Duration) {
	const nap = 200 * time.Microsecond
	for deadline := time.Now().Add(d); addr.Load() == val && time.Now().Before(deadline); {
		time.Sleep(nap)
	}
}

func futexWakeAll(*atomic.Uint32) {}
