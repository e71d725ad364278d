// Package rolestop holds one test: every role's Run is started and stopped
// many times in-process while traffic reaches it, so that a goroutine left
// touching shm (or a socket) after Run unmaps the region crashes the test
// binary (issue 21: the router's bell waiter faulted at shm/bell.go on ~1%
// of stops).
package rolestop

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver/shmbackend"
	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/detok"
	"github.com/lightllm-go/lightllm/pkg/health"
	"github.com/lightllm-go/lightllm/pkg/infer"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/router"
	"github.com/lightllm-go/lightllm/shm"
)

// TestEveryRoleStops200TimesUnderTraffic: for each role, 200 rounds
// (LIGHTLLM_ROLE_STOPS; 40 by default) of Run
// until ready, traffic for 0-4 ms (every bell of the region rung, groups
// pushed to the router and the detokenizer, a request queued and admitted
// now and then, metric events), then cancel; Run must return (nil or
// context.Canceled) and the process must not crash.
func TestEveryRoleStops200TimesUnderTraffic(t *testing.T) {
	// 200 rounds of all six take ~90 s on the shared 2-core machine, too
	// long for every CI run: CI does 40, LIGHTLLM_ROLE_STOPS=200 the full.
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	if v := os.Getenv("LIGHTLLM_ROLE_STOPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("LIGHTLLM_ROLE_STOPS=%q: want a count", v)
		}
		rounds = n
	}
	roles := []struct {
		name string
		run  rolectl.RunFunc
	}{
		{config.RoleRouter, router.Run},
		{config.RoleDetokenizer, detok.Run},
		{config.RoleInfer, infer.Run},
		{config.RoleMetric, metrics.Run},
		{config.RoleHealth, health.Run},
		{config.RoleAPIServer, shmbackend.Run},
	}
	for _, role := range roles {
		t.Run(role.name, func(t *testing.T) {
			c := config.DefaultConfig()
			base := t.TempDir()
			c.Instance, c.RunDir, c.ShmDir = "t", filepath.Join(base, "run"), filepath.Join(base, "lightllm-t")
			c.ModelDir = "builtin:tiny-random"
			c.MaxTotalTokenNum, c.MaxReqTotalLen, c.RunningMaxReqSize, c.MaxWaitingReqs = 4096, 256, 4, 4
			c.BatchMaxTokens, c.ChunkedPrefillSize = 256, 256
			c.Host, c.Port, c.MetricPort = "127.0.0.1", 0, 0
			c.HealthInterval = config.Duration(time.Millisecond)
			if err := os.MkdirAll(c.RunDir, 0o755); err != nil {
				t.Fatal(err)
			}
			peer, err := pipeline.OpenRegion(context.Background(), &c, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { peer.Close() })
			start := time.Now()
			for i := 0; i < rounds; i++ {
				round(t, &c, peer, role.run, role.name, i)
			}
			t.Logf("%s: %d stops under traffic in %s", role.name, rounds, time.Since(start).Round(time.Millisecond))
		})
	}
}

func round(t *testing.T, c *config.Config, peer *shm.Region, run rolectl.RunFunc, role string, i int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctl := rolectl.NewStandalone(role, zerolog.Nop())
	done := make(chan error, 1)
	go func() { done <- run(ctx, c, zerolog.Nop(), ctl) }()
	select {
	case <-ctl.ReadyC():
	case err := <-done:
		t.Fatalf("round %d: %s ended before ready: %v", i, role, err)
	}
	stopAt := time.Duration(i%5) * time.Millisecond
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		send(peer, c, i, stopAt+2*time.Millisecond)
	}()
	time.Sleep(stopAt)
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %s: %v", i, role, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("round %d: %s did not stop within 30 s of its cancel", i, role)
	}
	<-traffic
}

// send is the traffic: every bell, announcements on both intake rings,
// a queued request now and then (admitted and run if a router and infer are up), metric events.
func send(peer *shm.Region, c *config.Config, i int, d time.Duration) {
	var bells []shm.Bell
	for _, r := range []shm.Role{shm.RoleAPIServer, shm.RoleRouter, shm.RoleInfer, shm.RoleDetokenizer} {
		if rs, err := peer.Role(r); err == nil {
			bells = append(bells, peer.Bell(rs))
		}
	}
	mc, err := metrics.NewClientFor(c, "rolestop", zerolog.Nop())
	if err == nil {
		defer mc.Close()
	}
	var announce []shm.SlotGen
	if i%10 == 0 {
		if s, gen, err := peer.Alloc(1); err == nil {
			req := shm.Request{RequestID: uint64(i + 1), Prompt: []int32{1, 2, 3, 4}, Arrival: time.Now()}
			req.Params.MaxNewTokens, req.Params.TopK, req.Params.Temperature, req.Params.TopP, req.Params.RepetitionPenalty = 4, 1, 1, 1, 1
			if s.Fill(gen, req) == nil && s.Transition(gen, shm.StateAllocated, shm.StateQueued) == nil {
				announce = append(announce, shm.SlotGen{Slot: uint32(s.Index), Gen: gen})
			}
		}
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		for _, b := range bells {
			b.Ring()
		}
		// Full while their consumer is down: its scan finds the slot.
		_ = peer.DetokIntake().Announce(announce)
		_ = peer.Intake().Announce(announce)
		if mc != nil {
			mc.Counter("lightllm_request_count", 1)
		}
	}
}
