package router

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/pkg/sched"
	"github.com/lightllm-go/lightllm/shm"
)

func roleConfig(t *testing.T, policy string) *config.Config {
	t.Helper()
	c := config.DefaultConfig()
	base := t.TempDir()
	c.Instance, c.RunDir, c.ShmDir = "t", filepath.Join(base, "run"), filepath.Join(base, "lightllm-t")
	c.MaxTotalTokenNum, c.MaxReqTotalLen, c.RunningMaxReqSize, c.MaxWaitingReqs = 4096, 256, 4, 4
	c.BatchMaxTokens, c.ChunkedPrefillSize = 1024, 512
	c.RouterPolicy = policy
	return &c
}

func newTestRole(t *testing.T, cfg *config.Config) *role {
	t.Helper()
	rr, err := newRole(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.close)
	return rr
}

// queue plays the apiserver: a filled, Queued slot.
func queue(t *testing.T, r *shm.Region, group uint64, prompt int, maxNew uint32) (*shm.Slot, uint32) {
	t.Helper()
	s, gen, err := r.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, prompt)
	p := sampler.Params{MaxNewTokens: int(maxNew), TopK: 1, Temperature: 1, TopP: 1, RepetitionPenalty: 1}
	if err := s.Fill(gen, shm.Request{RequestID: group, GroupID: group, Arrival: time.Now(), Prompt: ids, Params: p}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transition(gen, shm.StateAllocated, shm.StateQueued); err != nil {
		t.Fatal(err)
	}
	return s, gen
}

// group is an announced group, as the intake ring hands it over.
func group(refs ...[2]uint32) []shm.SlotGen {
	g := make([]shm.SlotGen, len(refs))
	for i, r := range refs {
		g[i] = shm.SlotGen{Slot: r[0], Gen: r[1]}
	}
	return g
}

// announce plays the apiserver's announcement of one group on the intake.
func announce(t *testing.T, r *shm.Region, refs ...[2]uint32) {
	t.Helper()
	g := make([]shm.SlotGen, len(refs))
	for i, ref := range refs {
		g[i] = shm.SlotGen{Slot: ref[0], Gen: ref[1]}
	}
	if err := r.Intake().Announce(g); err != nil {
		t.Fatal(err)
	}
}

// commands pops everything on the ring.
func commands(t *testing.T, r *shm.Region) []shm.Command {
	t.Helper()
	var out []shm.Command
	for {
		c, ok, err := r.Commands().Pop()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, shm.Command{Op: c.Op, Slot: c.Slot, Gen: c.Gen, Arg: c.Arg})
	}
}

func step(t *testing.T, rr *role) {
	t.Helper()
	if err := rr.step(); err != nil {
		t.Fatal(err)
	}
}

func TestRoleAdmitsAndReleases(t *testing.T) {
	rr := newTestRole(t, roleConfig(t, sched.PolicyPastFuture))
	r := rr.region
	s, gen := queue(t, r, 8, 10, 16)
	rr.onGroup(group([2]uint32{uint32(s.Index), gen}))
	step(t, rr)
	want := []shm.Command{{Op: shm.OpNew, Slot: uint32(s.Index), Gen: gen}}
	if got := commands(t, r); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("commands %v, want %v", got, want)
	}
	if st, _ := s.Load(); st != shm.StateRunning || s.RouterMarks.Load()&shm.MarkNewSent == 0 {
		t.Fatalf("slot %v marks %b after admission", st, s.RouterMarks.Load())
	}
	if r.Load().Running.Load() != 1 || r.Load().EstimatedPeak.Load() <= 0 {
		t.Errorf("load running %d peak %d", r.Load().Running.Load(), r.Load().EstimatedPeak.Load())
	}
	// infer finishes it
	s.Publish(5, shm.FinishLength)
	if err := s.MarkInferReleased(gen, shm.StateRunning, shm.FinishLength); err != nil {
		t.Fatal(err)
	}
	step(t, rr)
	if len(rr.entries) != 0 || rr.sched.Stats().Finished != 1 || rr.sched.Stats().EMA == 2048 {
		t.Errorf("after release: %d entries, stats %+v", len(rr.entries), rr.sched.Stats())
	}
	if r.Load().Running.Load() != 0 {
		t.Errorf("load running %d after release", r.Load().Running.Load())
	}
	// a repeated message for the finished slot changes nothing
	rr.onGroup(group([2]uint32{uint32(s.Index), gen}))
	step(t, rr)
	if got := commands(t, r); len(got) != 0 {
		t.Errorf("commands %v for a finished slot", got)
	}
}

// TestRoleRecover: a restarted router rebuilds its queues from the slot
// table and never admits a request twice.
func TestRoleRecover(t *testing.T) {
	cfg := roleConfig(t, sched.PolicyPastFuture)
	first := newTestRole(t, cfg)
	r := first.region
	queued, qgen := queue(t, r, 8, 10, 16)
	sent, sgen := queue(t, r, 16, 10, 16)
	unsent, ugen := queue(t, r, 24, 10, 16)
	done, dgen := queue(t, r, 32, 10, 16)
	for _, x := range []struct {
		s    *shm.Slot
		gen  uint32
		mark uint32
	}{{sent, sgen, shm.MarkNewSent}, {unsent, ugen, 0}, {done, dgen, shm.MarkNewSent}} {
		x.s.Transition(x.gen, shm.StateQueued, shm.StateRunning)
		x.s.RouterMarks.Store(x.mark)
	}
	done.MarkInferReleased(dgen, shm.StateRunning, shm.FinishLength)

	rr := newTestRole(t, cfg) // the restarted router
	if err := rr.recover(); err != nil {
		t.Fatal(err)
	}
	got := commands(t, r)
	if len(got) != 1 || got[0] != (shm.Command{Op: shm.OpNew, Slot: uint32(unsent.Index), Gen: ugen}) {
		t.Fatalf("after recovery: commands %v, want only NEW for the unsent slot %d", got, unsent.Index)
	}
	step(t, rr)
	got = commands(t, r)
	if len(got) != 1 || got[0] != (shm.Command{Op: shm.OpNew, Slot: uint32(queued.Index), Gen: qgen}) {
		t.Fatalf("first step: commands %v, want NEW for the queued slot %d", got, queued.Index)
	}
	if st := rr.sched.Stats(); st.Running != 3 || st.Waiting != 0 {
		t.Errorf("running %d waiting %d, want 3 and 0", st.Running, st.Waiting)
	}
	rr.onGroup(group([2]uint32{uint32(queued.Index), qgen})) // the late message
	step(t, rr)
	if got := commands(t, r); len(got) != 0 {
		t.Errorf("a late message caused commands %v", got)
	}
}

func TestRoleAborts(t *testing.T) {
	rr := newTestRole(t, roleConfig(t, sched.PolicyConservative))
	r := rr.region
	run, rgen := queue(t, r, 8, 10, 16)
	rr.onGroup(group([2]uint32{uint32(run.Index), rgen}))
	step(t, rr)
	commands(t, r)
	wait, wgen := queue(t, r, 16, 10, 16)
	wait.Abort.Store(1)
	rr.onGroup(group([2]uint32{uint32(wait.Index), wgen}))
	run.Abort.Store(1)
	step(t, rr)
	step(t, rr)
	// Infer reads the running request's abort flag itself: no command.
	if got := commands(t, r); len(got) != 0 {
		t.Errorf("commands %v, want none", got)
	}
	if st, _ := wait.Load(); st != shm.StateAborted || wait.InferReleased.Load() != 1 ||
		shm.FinishStatus(wait.FinishStatus.Load()) != shm.FinishAborted {
		t.Errorf("aborted waiting request: state %v released %d finish %v", st, wait.InferReleased.Load(), wait.FinishStatus.Load())
	}
	if st, _ := run.Load(); st != shm.StateRunning || run.InferReleased.Load() != 0 {
		t.Errorf("aborted running request: state %v released %d, want it left to infer", st, run.InferReleased.Load())
	}
}

func TestRoleStopMatched(t *testing.T) {
	rr := newTestRole(t, roleConfig(t, sched.PolicyPastFuture))
	r := rr.region
	s, gen := queue(t, r, 8, 10, 16)
	rr.onGroup(group([2]uint32{uint32(s.Index), gen}))
	step(t, rr)
	commands(t, r)
	s.StopMatchedIndex.Store(3)
	s.StopMatched.Store(1)
	step(t, rr)
	step(t, rr)
	// Infer reads the stop-matched flag itself: the router sends nothing
	// and leaves the request running until infer releases it.
	if got := commands(t, r); len(got) != 0 {
		t.Errorf("commands %v, want none", got)
	}
	if st, g := s.Load(); st != shm.StateRunning || g != gen {
		t.Errorf("state %v gen %d, want running %d", st, g, gen)
	}
}

// TestRoleReconcile: a queued slot whose message was lost is adopted from
// the slot table on the second scan that finds it.
func TestRoleReconcile(t *testing.T) {
	rr := newTestRole(t, roleConfig(t, sched.PolicyPastFuture))
	r := rr.region
	s, gen := queue(t, r, 8, 10, 16)
	rr.reconcile()
	if len(rr.entries) != 0 {
		t.Fatal("adopted on the first scan: the message may still be on its way")
	}
	rr.reconcile()
	step(t, rr)
	if got := commands(t, r); len(got) != 1 || got[0].Slot != uint32(s.Index) || got[0].Gen != gen {
		t.Errorf("commands %v after reconcile", got)
	}
}

// TestRoleGroups: groups announced on the intake ring are taken in order,
// and the members of one group are admitted together.
func TestRoleGroups(t *testing.T) {
	cfg := roleConfig(t, sched.PolicyConservative)
	cfg.RunningMaxReqSize = 3
	rr := newTestRole(t, cfg)
	r := rr.region
	a, ag := queue(t, r, 8, 10, 16)
	announce(t, r, [2]uint32{uint32(a.Index), ag})
	var refs [][2]uint32
	for range 3 {
		s, g := queue(t, r, 16, 10, 16)
		refs = append(refs, [2]uint32{uint32(s.Index), g})
	}
	announce(t, r, refs...)
	step(t, rr)
	if got := commands(t, r); len(got) != 1 || got[0].Slot != uint32(a.Index) {
		t.Errorf("commands %v; want the first group's alone: the 3-member group must wait for room for all of it", got)
	}
	if len(rr.entries) != 4 {
		t.Errorf("%d requests tracked after one step, want all 4 announced", len(rr.entries))
	}
	for _, e := range rr.entries {
		if want := map[bool]uint64{true: 8, false: 16}[e.slot == a]; e.group != want {
			t.Errorf("slot %d: group %d, want %d", e.slot.Index, e.group, want)
		}
	}
}

func TestRoleRejectsOracle(t *testing.T) {
	_, err := newRole(context.Background(), roleConfig(t, sched.PolicyOracle), zerolog.Nop())
	if err == nil {
		t.Fatal("the oracle policy was accepted by the router role")
	}
	_, err = newRole(context.Background(), roleConfig(t, "fifo"), zerolog.Nop())
	if !errors.Is(err, sched.ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
}

// TestRunStopsCleanlyUnderTraffic starts and stops the router role many
// times while another mapping of the region rings its bell and queues
// requests: every goroutine touching shm must be joined before Run unmaps
// the region (a goroutine left sleeping on the bell faulted at shm/bell.go).
func TestRunStopsCleanlyUnderTraffic(t *testing.T) {
	cfg := roleConfig(t, sched.PolicyPastFuture)
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		t.Fatal(err)
	}
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	var peer *shm.Region
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		ctl := rolectl.NewStandalone(config.RoleRouter, zerolog.Nop())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg, zerolog.Nop(), ctl) }()
		select {
		case <-ctl.ReadyC():
		case err := <-done:
			cancel()
			t.Fatalf("round %d: router ended before ready: %v", i, err)
		}
		if peer == nil {
			r, err := shm.AttachFile(cfg.ShmPath(shm.StateFile))
			if err != nil {
				cancel()
				t.Fatal(err)
			}
			peer = r
			t.Cleanup(func() { peer.Close() })
		}
		rs, err := peer.Role(shm.RoleRouter)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		switch i % 50 {
		case 0:
			queue(t, peer, uint64(i+1), 8, 4) // the scan adopts it: admissions and commands mid-stop
		case 25:
			s, gen := queue(t, peer, uint64(i+1), 8, 4)
			announce(t, peer, [2]uint32{uint32(s.Index), gen})
		}
		stopAt := time.Duration(i%5) * time.Millisecond
		ringing := make(chan struct{})
		go func() {
			defer close(ringing)
			for end := time.Now().Add(stopAt + 2*time.Millisecond); time.Now().Before(end); {
				peer.Bell(rs).Ring()
			}
		}()
		time.Sleep(stopAt)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: %v", i, err)
		}
		<-ringing
	}
}
