package shm

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// Bell is a doorbell in shared memory: a futex word that the ringer bumps and
// a count of sleepers so that ringing costs no syscall when nobody sleeps.
// In an instance directory a sleeper parks on the bell's FIFO through the
// netpoller rather than in FUTEX_WAIT (bellpipe_linux.go says why); the
// waiters word counts futex sleepers in its low 16 bits and pipe sleepers
// in its high 16, so Ring wakes each kind only when one sleeps.
//
// Waiters follow the usual pattern, which cannot miss a wake-up:
//
//	seen := bell.Seq()
//	if workAvailable() { ... }
//	bell.Wait(seen, timeout) // returns at once if a Ring happened after Seq
type Bell struct {
	seq, waiters *atomic.Uint32
	pipes        *bellPipes // the region's FIFOs; nil: the futex alone
}

// maxSleep bounds one futex sleep so that WaitFor notices ctx cancellation
// without needing a wake-up.
const maxSleep = 50 * time.Millisecond

// spinChecks is how many times WaitFor re-checks (yielding in between)
// before it sleeps in the kernel: enough to catch a reply already on its
// way, far too few to burn a core.
const spinChecks = 16

// Seq is the current ring count; pass it to Wait.
func (b Bell) Seq() uint32 { return b.seq.Load() }

// Ring wakes every waiter, in any process. Call it after publishing data.
func (b Bell) Ring() {
	b.seq.Add(1)
	// Seq-cst order: a waiter that registered after this load saw the new
	// seq in its FUTEX_WAIT comparison (or its re-check before parking on
	// the pipe), so skipping the wake is safe.
	w := b.waiters.Load()
	if w&(pipeWaiter-1) != 0 {
		futexWakeAll(b.seq)
	}
	if w >= pipeWaiter {
		b.pipes.ring(b.seq)
	}
}

// Wait sleeps until the bell is rung after seen was read, or d passes.
// It reports whether the bell's count differs from seen on return.
func (b Bell) Wait(seen uint32, d time.Duration) bool {
	if b.seq.Load() != seen {
		return true
	}
	if d <= 0 {
		return false
	}
	if rung, ok := b.pipes.wait(b, seen, d); ok {
		return rung
	}
	b.waiters.Add(1)
	futexSleep(b.seq, seen, d)
	b.waiters.Add(^uint32(0))
	return b.seq.Load() != seen
}

// WaitFor returns nil as soon as cond() is true, checking it each time the
// bell rings; it polls briefly, then sleeps on the futex. It returns
// ctx.Err() when ctx ends first. cond must be cheap and must only read
// shared state.
func (b Bell) WaitFor(ctx context.Context, cond func() bool) error {
	for {
		seen := b.seq.Load()
		if cond() {
			return nil
		}
		for i := 0; i < spinChecks && b.seq.Load() == seen; i++ {
			runtime.Gosched()
		}
		if b.seq.Load() != seen {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		d := maxSleep
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl))
		}
		b.Wait(seen, d)
	}
}
