package shm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Cross-process tests re-run this test binary as a child that attaches to
// the parent's region and plays another role. The child's part lives in
// TestChildProcess, which does nothing unless the environment names a mode.
const (
	envChildMode = "LIGHTLLM_SHM_CHILD"
	envChildPath = "LIGHTLLM_SHM_PATH"
	envChildN    = "LIGHTLLM_SHM_N"
	// envChildNoPipe: the child's bells sleep on the futex alone.
	envChildNoPipe = "LIGHTLLM_SHM_NOPIPE"
)

func startChild(t *testing.T, mode, path string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildMode+"="+mode, envChildPath+"="+path, envChildN+"="+strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", mode, err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

func waitChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not finish in 20s")
	}
}

// TestChildProcess is the child side; it exits the process with its result.
func TestChildProcess(t *testing.T) {
	mode := os.Getenv(envChildMode)
	if mode == "" {
		t.Skip("helper for the cross-process tests; runs only as their child")
	}
	n, _ := strconv.Atoi(os.Getenv(envChildN))
	r, err := AttachFile(os.Getenv(envChildPath))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child attach:", err)
		os.Exit(2)
	}
	if os.Getenv(envChildNoPipe) != "" {
		r.futexOnly()
	}
	os.Exit(childMain(mode, r, n))
}

func childMain(mode string, r *Region, n int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	switch mode {
	case "atomics": // races the parent on one counter
		r.Load().Running.Store(1) // attached
		for r.Load().Waiting.Load() == 0 {
			if ctx.Err() != nil {
				return 7
			}
		}
		for range n {
			r.Load().NextRequestID.Add(1)
		}
	case "producer": // the router's side of the ring
		q := r.Commands()
		for i := range n {
			if _, err := q.PushWait(ctx, Command{Op: OpNew, Slot: uint32(i % r.NumSlots()), Gen: uint32(i), Arg: uint32(i)}); err != nil {
				fmt.Fprintln(os.Stderr, "child push:", err)
				return 3
			}
		}
	case "announcer": // an apiserver beside others: the intake ring's producer number 3
		for i := range n {
			if err := announceRetry(r.Intake(), testGroup(3, i, r.NumSlots()), 10*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "child announce:", err)
				return 10
			}
		}
	case "sleeper": // sleeps on the detokenizer bell until the parent rings
		rs, _ := r.Role(RoleDetokenizer)
		bell := r.Bell(rs)
		seen := bell.Seq()
		start := time.Now()
		if !bell.Wait(seen, 10*time.Second) {
			fmt.Fprintln(os.Stderr, "child: not woken within 10s")
			return 4
		}
		r.Load().Waiting.Store(time.Since(start).Microseconds())
	case "ringer": // rings the apiserver bell once the parent sleeps on it
		rs, _ := r.Role(RoleAPIServer)
		for rs.BellWaiters.Load() == 0 {
			if ctx.Err() != nil {
				return 5
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // let the parent settle in the kernel
		r.Bell(rs).Ring()
	case "echo": // infer's side of a round trip: pop a command, ring the router
		if _, err := r.BeginEpoch(RoleInfer); err != nil {
			return 8
		}
		rs, _ := r.Role(RoleRouter)
		for {
			c, err := r.Commands().PopWait(context.Background())
			if err != nil {
				return 9
			}
			if c.Arg == echoStop {
				return 0
			}
			r.Bell(rs).Ring()
		}
	case "die-mid-write": // an apiserver killed while filling a slot
		s, gen, err := r.Alloc(uint32(n))
		if err != nil {
			return 6
		}
		s.Fill(gen, Request{RequestID: 1, Prompt: []int32{1, 2, 3}, Params: sampler.Params{MaxNewTokens: 4}})
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode", mode)
		return 1
	}
	return 0
}

// echoStop in a command's Arg ends the "echo" child.
const echoStop = ^uint32(0)

// BenchmarkCrossProcessRoundTrip is the real router→infer→router path: a
// command through the shm ring to another process, which rings a doorbell
// back; both sides poll briefly, then sleep on futexes.
func BenchmarkCrossProcessRoundTrip(b *testing.B) {
	r := newTestRegion(b, smallSizes)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChildMode+"=echo", envChildPath+"="+r.Path(), envChildN+"=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	infer, _ := r.Role(RoleInfer)
	for deadline := time.Now().Add(10 * time.Second); infer.Epoch.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			b.Fatal("echo child did not start")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, _ := r.Role(RoleRouter)
	reply, q := r.Bell(rs), r.Commands()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seen := reply.Seq()
		if _, err := q.PushWait(ctx, Command{Op: OpNew, Slot: 1}); err != nil {
			b.Fatal(err)
		}
		if err := reply.WaitFor(ctx, func() bool { return reply.Seq() != seen }); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "µs/roundtrip")
	q.PushWait(ctx, Command{Op: OpNew, Slot: 0, Arg: echoStop})
}

// TestCrossProcessAtomics: increments from two processes on one shared
// counter are never lost.
func TestCrossProcessAtomics(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	const n = 200000
	child := startChild(t, "atomics", r.Path(), n)
	for deadline := time.Now().Add(10 * time.Second); r.Load().Running.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("child did not attach")
		}
	}
	r.Load().Waiting.Store(1) // start together so that the adds interleave
	for range n {
		r.Load().NextRequestID.Add(1)
	}
	waitChild(t, child)
	if got := r.Load().NextRequestID.Load(); got != 2*n {
		t.Fatalf("counter %d, want %d", got, 2*n)
	}
}

// TestCrossProcessRing: a child producer pushes many more commands than the
// ring holds; the parent consumes with PopWait. Both sides sleep on futexes
// (data and space bells) across processes, and every command arrives once,
// in order.
func TestCrossProcessRing(t *testing.T) {
	r := newTestRegion(t, smallSizes) // 8 entries
	const n = 5000
	child := startChild(t, "producer", r.Path(), n)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	q := r.Commands()
	for i := range n {
		c, err := q.PopWait(ctx)
		if err != nil {
			t.Fatalf("pop %d: %v", i, err)
		}
		if c.Seq != uint64(i) || c.Arg != uint32(i) || c.Slot != uint32(i%r.NumSlots()) {
			t.Fatalf("pop %d got %+v", i, c)
		}
		if i%1000 == 0 {
			time.Sleep(5 * time.Millisecond) // let the ring fill so the producer sleeps
		}
	}
	waitChild(t, child)
	if _, ok, _ := q.Pop(); ok {
		t.Fatal("extra command after the last one")
	}
}

// TestCrossProcessFutexWake: a waiter in one process, asleep on the
// bell's FIFO through the netpoller (or, with pipes off, in FUTEX_WAIT), is
// woken by a Ring in another, in both directions, long before its timeout;
// the waiters word says which way it slept.
func TestCrossProcessFutexWake(t *testing.T) {
	for _, mech := range []struct {
		name    string
		noPipe  bool
		waiters uint32 // the sleeper's share of the waiters word
	}{
		{"pipe", false, pipeWaiter},
		{"futex", true, 1},
	} {
		newRegion := func(t *testing.T) *Region {
			r := newTestRegion(t, smallSizes)
			if mech.noPipe {
				r.futexOnly()
			}
			return r
		}
		start := func(t *testing.T, mode, path string) *exec.Cmd {
			if mech.noPipe {
				t.Setenv(envChildNoPipe, "1")
			}
			return startChild(t, mode, path, 0)
		}
		t.Run(mech.name+"/parent wakes child", func(t *testing.T) {
			r := newRegion(t)
			child := start(t, "sleeper", r.Path())
			rs, _ := r.Role(RoleDetokenizer)
			deadline := time.Now().Add(10 * time.Second)
			for rs.BellWaiters.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("child never went to sleep on the bell")
				}
				time.Sleep(time.Millisecond)
			}
			if w := rs.BellWaiters.Load(); w != mech.waiters {
				t.Fatalf("waiters word %#x while the child sleeps, want %#x", w, mech.waiters)
			}
			time.Sleep(20 * time.Millisecond)
			r.Bell(rs).Ring()
			waitChild(t, child)
			slept := time.Duration(r.Load().Waiting.Load()) * time.Microsecond
			if slept > 5*time.Second {
				t.Fatalf("child slept %v: woken by its timeout, not the ring", slept)
			}
			t.Logf("child slept %v before the cross-process wake", slept)
		})
		t.Run(mech.name+"/child wakes parent", func(t *testing.T) {
			r := newRegion(t)
			rs, _ := r.Role(RoleAPIServer)
			bell := r.Bell(rs)
			seen := bell.Seq()
			child := start(t, "ringer", r.Path())
			begin := time.Now()
			if !bell.Wait(seen, 10*time.Second) {
				t.Fatal("not woken within 10s")
			}
			if d := time.Since(begin); d > 5*time.Second {
				t.Fatalf("woke after %v", d)
			}
			waitChild(t, child)
		})
	}
}

// TestCrossProcessTornSlot: an apiserver SIGKILLed while filling a slot
// leaves it Allocated; the next apiserver's recovery returns it to the pool.
func TestCrossProcessTornSlot(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	oldEpoch, _ := r.BeginEpoch(RoleAPIServer)
	child := startChild(t, "die-mid-write", r.Path(), int(oldEpoch))
	err := child.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child should have been SIGKILLed, got %v", err)
	}
	torn := -1
	for i := range r.NumSlots() {
		s, _ := r.Slot(i)
		if st, _ := s.Load(); st == StateAllocated {
			torn = i
		}
	}
	if torn < 0 {
		t.Fatal("the child left no allocated slot")
	}
	newEpoch, _ := r.BeginEpoch(RoleAPIServer)
	rec := r.RecoverSlots(newEpoch)
	if len(rec) != 1 || rec[0].Slot != torn || rec[0].Action != ActionReclaimed {
		t.Fatalf("recovery %+v, want slot %d reclaimed", rec, torn)
	}
	s, _ := r.Slot(torn)
	if st, _ := s.Load(); st != StateFree {
		t.Fatalf("slot %d is %v after recovery", torn, st)
	}
}
