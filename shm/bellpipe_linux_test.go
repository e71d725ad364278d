package shm

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// waitAsleep polls until the bell's waiters word is want.
func waitAsleep(t *testing.T, rs *RoleState, want uint32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for rs.BellWaiters.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("waiters word %#x, want %#x", rs.BellWaiters.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// ringWakes parks a Wait on b, rings once it sleeps on the pipe, and fails
// unless the Wait reports the ring well before its 10 s timeout.
func ringWakes(t *testing.T, b Bell, rs *RoleState) {
	t.Helper()
	seen := b.Seq()
	done := make(chan bool)
	go func() { done <- b.Wait(seen, 10*time.Second) }()
	waitAsleep(t, rs, pipeWaiter)
	start := time.Now()
	b.Ring()
	if !<-done {
		t.Fatal("Wait reported no ring")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("woken after %v", d)
	}
}

// TestBellPipe drives the pipe path of Bell.Wait in one process: the
// cross-process wake is TestCrossProcessFutexWake's.
func TestBellPipe(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, r *Region, rs *RoleState)
	}{
		{"a ring wakes the pipe sleeper long before its timeout", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			ringWakes(t, b, rs)
			fi, err := os.Lstat(filepath.Join(r.dir, "bell-"+hexOffset(r, &rs.BellSeq)))
			if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
				t.Fatalf("the bell's FIFO: %v, %v", fi, err)
			}
		}},
		{"no ring: false after the timeout, the sleeper unregistered", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			start := time.Now()
			if b.Wait(b.Seq(), 30*time.Millisecond) {
				t.Fatal("Wait reported a ring")
			}
			if d := time.Since(start); d < 30*time.Millisecond {
				t.Fatalf("returned after %v, before the timeout", d)
			}
		}},
		{"a byte left by a sleeper that never read it does not end the next wait", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			if rung, ok := b.pipes.wait(b, b.Seq()-1, time.Second); !ok || !rung {
				t.Fatalf("pipes.wait with a rung seq: rung %v ok %v", rung, ok) // opens the FIFO
			}
			rs.BellWaiters.Add(pipeWaiter) // a sleeper that returns without draining
			b.Ring()
			rs.BellWaiters.Add(^uint32(pipeWaiter - 1))
			start := time.Now()
			if b.Wait(b.Seq(), 50*time.Millisecond) {
				t.Fatal("the stale byte counted as a ring")
			}
			if d := time.Since(start); d < 50*time.Millisecond {
				t.Fatalf("returned after %v", d)
			}
		}},
		{"more stale bytes than one read takes are all drained before parking", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			if rung, ok := b.pipes.wait(b, b.Seq()-1, time.Second); !ok || !rung {
				t.Fatalf("pipes.wait with a rung seq: rung %v ok %v", rung, ok) // opens the FIFO
			}
			rs.BellWaiters.Add(pipeWaiter)
			for range 200 { // 64, 64, 64 and a short 8
				b.Ring()
			}
			rs.BellWaiters.Add(^uint32(pipeWaiter - 1))
			ringWakes(t, b, rs)
		}},
		{"every ring of a wait-and-ring sequence wakes its sleeper at once", func(t *testing.T, r *Region, rs *RoleState) {
			// Each wake-up reads one byte, a short read that ends the
			// drain: the next sleeper must still park on an empty pipe
			// and be woken by the next ring, not by its timeout.
			b := r.Bell(rs)
			for range 50 {
				ringWakes(t, b, rs)
			}
		}},
		{"a second sleeper in the process uses the futex; one ring wakes both", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			seen := b.Seq()
			var wg sync.WaitGroup
			woke := make(chan bool, 2)
			for range 2 {
				wg.Go(func() { woke <- b.Wait(seen, 10*time.Second) })
			}
			waitAsleep(t, rs, pipeWaiter+1)
			b.Ring()
			wg.Wait()
			if !<-woke || !<-woke {
				t.Fatal("a sleeper reported no ring")
			}
		}},
		{"Close unparks a sleeper and lets it unregister before unmapping", func(t *testing.T, r *Region, rs *RoleState) {
			b := r.Bell(rs)
			seen := b.Seq()
			done := make(chan bool)
			go func() { done <- b.Wait(seen, 10*time.Second) }()
			waitAsleep(t, rs, pipeWaiter)
			start := time.Now()
			if err := r.Close(); err != nil { // a sleeper touching the unmapped word would fault
				t.Fatal(err)
			}
			if rung := <-done; rung {
				t.Fatal("Wait reported a ring")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("Close and the sleeper took %v: not unparked", d)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegion(t, smallSizes)
			rs, _ := r.Role(RoleDetokenizer)
			c.run(t, r, rs)
			if r.closed.Load() {
				return // unmapped
			}
			if w := rs.BellWaiters.Load(); w != 0 {
				t.Fatalf("waiters word %#x after the waits", w)
			}
		})
	}
}

// hexOffset is the FIFO name's part for the word at p: its offset in r.
func hexOffset(r *Region, p *atomic.Uint32) string {
	return fmt.Sprintf("%x", uintptr(unsafe.Pointer(p))-uintptr(unsafe.Pointer(unsafe.SliceData(r.mem))))
}
