package shmbackend

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/shm"
)

// TestRequestPathDown: a stalled role (alive, loop not turning) makes
// /health false at once and new requests wait, bounded, then fail as not
// ready; a role whose process is gone does the same and, once gone for
// UnavailableTimeout, ends the requests in flight with an explicit error;
// when it is back everything serves again.
func TestRequestPathDown(t *testing.T) {
	h := newHarness(t, 4)
	b, err := New(Options{Region: h.region, MaxTotalTokens: 1000, Log: zerolog.Nop(),
		StallTimeout: 300 * time.Millisecond, UnavailableTimeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var roles [3]*shm.RoleState
	for i, r := range []shm.Role{shm.RoleRouter, shm.RoleInfer, shm.RoleDetokenizer} {
		if _, err := h.region.BeginEpoch(r); err != nil {
			t.Fatal(err)
		}
		roles[i], _ = h.region.Role(r)
	}
	h.region.Load().MaxTotalTokenNum.Store(1000)
	// The roles beat like their loops do, but for the one under test.
	var frozen sync.Map
	stop := make(chan struct{})
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		for {
			for i, rs := range roles {
				if _, ok := frozen.Load(i); !ok {
					rs.Beat()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-beating }()
	if !b.Healthy() {
		t.Fatal("not healthy with every role beating")
	}

	// Router stalled (SIGSTOP): unhealthy within the stall timeout; a new
	// request waits the unavailable timeout, then is refused as not ready.
	frozen.Store(0, true)
	waitHealthy(t, b, false, 2*time.Second)
	start := time.Now()
	_, err = b.Submit(context.Background(), &apiserver.Group{N: 1, Prompt: []int32{1, 2}, Params: greedy(4)})
	if !errors.Is(err, apiserver.ErrNotReady) || !strings.Contains(err.Error(), "router") || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("submit while the router is stalled: %v after %v", err, time.Since(start))
	}
	frozen.Delete(0)
	waitHealthy(t, b, true, 2*time.Second)

	// A request in flight, then infer's process goes away for good.
	st := submit(t, b, 1, greedy(4))
	h.recv()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	roles[1].Pid.Store(uint32(dead.Process.Pid))
	if b.Healthy() {
		t.Fatal("healthy right after infer's process is gone")
	}
	evs := collect(t, st)
	last := evs[len(evs)-1]
	if last.Reason != apiserver.FinishError || !strings.Contains(last.Err, "infer role is down") {
		t.Fatalf("in-flight request ended with %+v, want an error naming infer", last)
	}
	if _, err := b.Submit(context.Background(), &apiserver.Group{N: 1, Prompt: []int32{1, 2}, Params: greedy(4)}); !errors.Is(err, apiserver.ErrNotReady) {
		t.Fatalf("submit while infer is down: %v", err)
	}

	// Infer is back (a restarted process took the role): serving again.
	roles[1].Pid.Store(uint32(os.Getpid()))
	waitHealthy(t, b, true, 2*time.Second)
	submit(t, b, 1, greedy(4))
	h.recv()
}

func waitHealthy(t *testing.T, b *Backend, want bool, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); b.Healthy() != want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Healthy() still %v after %v", !want, within)
		}
	}
}
