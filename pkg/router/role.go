package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/sched"
	"github.com/lightllm-go/lightllm/shm"
)

// Router role timing.
const (
	// reconcileEvery is how often the slot table is scanned for queued
	// slots whose announcement never arrived (an apiserver killed between
	// queueing a slot and announcing it, an intake ring that was full while
	// this role was down).
	reconcileEvery = 200 * time.Millisecond
	// stallLimit is how long one loop iteration may take before the
	// heartbeat is withheld (the supervisor then restarts the router).
	stallLimit = 10 * time.Second
)

// Run is the router role's body: `func main() { os.Exit(rolectl.Main(config.RoleRouter, router.Run)) }`.
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	rr, err := newRole(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer rr.close()
	if rr.mc, err = metrics.NewClientFor(cfg, config.RoleRouter, log); err != nil {
		return err
	}
	defer rr.mc.Close()
	if err := rr.recover(); err != nil {
		return err
	}
	ctl.SetProgressCheck(rr.progress)
	if err := ctl.Ready(ctx); err != nil {
		return err
	}
	return rr.loop(ctx)
}

// role is the router process's state; everything but lastLoop belongs to the
// loop goroutine.
type role struct {
	cfg    *config.Config
	log    zerolog.Logger
	region *shm.Region
	sched  *sched.Scheduler
	start  time.Time

	// announced is the intake's groups of this step (kept for its room).
	announced [][]shm.SlotGen

	entries     map[uint64]*tracked // by sched.Request.ID (slot index<<32 | generation)
	pendingCmds []pendingCmd        // commands waiting for ring room, in order
	// unknownQueued remembers queued slots a reconcile scan found with no
	// entry; the next scan adopts those still unknown.
	unknownQueued map[uint64]bool
	lastScan      time.Time

	lastLoop atomic.Int64 // unix nanos of the last completed iteration

	mc         *metrics.Client // nil: no metrics
	lastReport time.Time
	paused     int // running requests infer holds paused, this step
}

// tracked is one request the router tracks.
type tracked struct {
	slot  *shm.Slot
	gen   uint32
	req   *sched.Request
	group uint64 // shm GroupID
}

func requestID(index int, gen uint32) uint64 { return uint64(index)<<32 | uint64(gen) }

func newRole(ctx context.Context, cfg *config.Config, log zerolog.Logger) (*role, error) {
	if cfg.RouterPolicy == sched.PolicyOracle {
		return nil, fmt.Errorf("--router_policy %s needs the true output lengths, which only `lightllm sim` knows; use one of %s, %s, %s, %s",
			sched.PolicyOracle, sched.PolicyPastFuture, sched.PolicyPastFutureEMA, sched.PolicyConservative, sched.PolicyAggressive)
	}
	pol, err := sched.NewPolicy(cfg.RouterPolicy, sched.PolicyOptions{Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		return nil, fmt.Errorf("--router_policy: %w", err)
	}
	rc := sched.DefaultConfig(cfg.MaxTotalTokenNum)
	rc.RunningMaxReqSize = cfg.RunningMaxReqSize
	rc.BatchMaxTokens = cfg.BatchMaxTokens
	rc.ChunkedPrefillSize = cfg.ChunkedPrefillSize
	rc.RouterMaxWaitTokens = cfg.RouterMaxWaitTokens
	rc.RouterTokenRatio = cfg.RouterTokenRatio
	sc, err := sched.New(rc, pol)
	if err != nil {
		return nil, err
	}
	region, err := pipeline.OpenRegion(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	epoch, err := region.BeginEpoch(shm.RoleRouter)
	if err != nil {
		region.Close()
		return nil, err
	}
	rr := &role{
		cfg: cfg, log: log, region: region, sched: sc, start: time.Now(),
		entries:       map[uint64]*tracked{},
		unknownQueued: map[uint64]bool{},
	}
	rr.lastLoop.Store(time.Now().UnixNano())
	log.Info().Uint32("epoch", epoch).Str("policy", pol.Name()).Int("max_total_tokens", rc.MaxTotalTokens).
		Int("slots", region.NumSlots()).Msg("router attached")
	return rr, nil
}

func (rr *role) close() {
	rr.region.Close()
}

// progress is the heartbeat's check: a loop stuck in one iteration is a
// wedged router.
func (rr *role) progress() error {
	if age := time.Since(time.Unix(0, rr.lastLoop.Load())); age > stallLimit {
		return fmt.Errorf("router loop stalled for %s", age.Round(time.Millisecond))
	}
	return nil
}

// loop runs a scheduler step whenever the router's bell rings (the
// apiserver announced a group on the intake ring, infer released a request),
// or schedule_time_interval passes while the step has something to retry
// (requests waiting for admission, commands waiting for ring room, queued
// slots without an announcement, a hole in the intake ring); otherwise the
// timer is config.IdleWait, since everything else that matters rings the
// bell.
func (rr *role) loop(ctx context.Context) error {
	rs, err := rr.region.Role(shm.RoleRouter)
	if err != nil {
		return err
	}
	bell := rr.region.Bell(rs)
	rung := make(chan struct{}, 1)
	// The bell lives in the shm region, which Run unmaps after loop
	// returns: the goroutine sleeping on it is joined first.
	ctx, cancel := context.WithCancel(ctx)
	var bellDone sync.WaitGroup
	defer bellDone.Wait()
	// The ring wakes the goroutine below at once, which otherwise sleeps
	// a second: each timeout is a wake-up of this process.
	defer bell.Ring()
	defer cancel()
	bellDone.Add(1)
	go func() { // turn futex rings into channel sends for the select below
		defer bellDone.Done()
		// seen is read before the send that starts a step, so a ring
		// between that step's look at the intake and this goroutine's
		// next wait still wakes it (read after the send, it would be lost
		// until the idle timer).
		seen := bell.Seq()
		for ctx.Err() == nil {
			if !bell.Wait(seen, time.Second) {
				continue
			}
			seen = bell.Seq()
			select {
			case rung <- struct{}{}:
			default:
			}
		}
	}()
	interval := max(rr.cfg.ScheduleTimeInterval.D(), time.Millisecond)
	idle := max(interval, rr.cfg.IdleWait())
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		if err := rr.step(); err != nil {
			return err
		}
		rs.Beat()
		rr.lastLoop.Store(time.Now().UnixNano())
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if rr.sched.Waiting() > 0 || len(rr.pendingCmds) > 0 || len(rr.unknownQueued) > 0 || rr.region.Intake().Pending() {
			t.Reset(interval)
		} else {
			t.Reset(idle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rung:
		case <-t.C:
		}
	}
}

// step is one router iteration (LightLLM's _step).
func (rr *role) step() error {
	rr.takeIntake()
	if now := time.Now(); now.Sub(rr.lastScan) >= reconcileEvery {
		rr.lastScan = now
		rr.reconcile()
	}

	in := sched.StepInput{Now: time.Since(rr.start).Seconds()}
	rr.paused = 0
	var stale []*tracked
	for _, e := range rr.entries {
		switch fin, gone := rr.observe(e, &in); {
		case gone:
			stale = append(stale, e)
		case fin != nil:
			in.Finished = append(in.Finished, *fin)
		}
	}
	for _, e := range stale {
		rr.forget(e, &in) // the slot was reused under us: nothing to finish
	}
	l := rr.region.Load()
	if capTok := l.MaxTotalTokenNum.Load(); capTok > 0 {
		in.UsedTokens = int(max(capTok-l.FreeKVTokens.Load()-l.EvictableKVTokens.Load(), 0))
	}
	res := rr.sched.Step(in)
	for _, f := range in.Finished {
		delete(rr.entries, f.ID)
	}
	for _, r := range res.Dropped {
		rr.drop(rr.entries[r.ID], "aborted while waiting")
	}
	for _, r := range res.New {
		rr.admit(rr.entries[r.ID])
	}
	if err := rr.flush(); err != nil {
		return err
	}
	l.EstimatedPeak.Store(int64(res.Load.EstimatedPeakTokens))
	l.Running.Store(int64(len(rr.sched.Running())))
	l.Waiting.Store(int64(rr.sched.Waiting()))
	rr.report(res.Load.EstimatedPeakTokens)
	return nil
}

// metricsEvery paces the router's gauges.
const metricsEvery = time.Second

// report sends LightLLM's router gauges to the metric role.
func (rr *role) report(peak int) {
	if rr.mc == nil || time.Since(rr.lastReport) < metricsEvery {
		return
	}
	rr.lastReport = time.Now()
	running, waiting := len(rr.sched.Running()), rr.sched.Waiting()
	rr.mc.Gauge(metrics.QueueSize, float64(waiting))
	rr.mc.Gauge(metrics.NumRunningReqs, float64(running))
	rr.mc.Gauge(metrics.BatchCurrentSize, float64(running))
	rr.mc.Gauge(metrics.BatchPauseSize, float64(rr.paused))
	rr.mc.Gauge(metrics.BatchCurrentMaxTokens, float64(peak))
	oldest := int64(0)
	for _, e := range rr.entries {
		if !e.req.Running() {
			if a := e.slot.ArrivalUnixNano.Load(); oldest == 0 || a < oldest {
				oldest = a
			}
		}
	}
	age := 0.0
	if oldest > 0 {
		age = max(time.Since(time.Unix(0, oldest)).Seconds(), 0)
	}
	rr.mc.Gauge(metrics.QueueOldestWaitSeconds, age)
}

// observe copies infer's published progress of e into its sched.Request. It
// returns the release of a request infer has finished, or gone when the slot
// no longer holds e (reused, which cannot happen before a release this
// router saw, unless shm was tampered with).
func (rr *role) observe(e *tracked, in *sched.StepInput) (fin *sched.Finished, gone bool) {
	s, r := e.slot, e.req
	st, g := s.Load()
	if g != e.gen || st == shm.StateFree || st == shm.StateAllocated {
		return nil, true
	}
	if s.Abort.Load() != 0 && !r.Aborted() {
		rr.sched.Abort(r.ID)
	}
	if !r.Running() {
		return nil, false
	}
	if s.InferReleased.Load() != 0 {
		return &sched.Finished{ID: r.ID, OutputLen: int(s.CandetokenOutLen.Load()),
			Aborted: shm.FinishStatus(s.FinishStatus.Load()) == shm.FinishAborted || r.Aborted()}, false
	}
	r.OutputLen = min(int(s.OutputLen.Load()), r.MaxNewTokens)
	r.KVLen = int(s.KVLen.Load())
	if s.IsPaused.Load() != 0 {
		in.Paused = true
		rr.paused++
	}
	return nil, false
}

// takeIntake takes the groups the apiserver announced since the last step,
// in order.
func (rr *role) takeIntake() {
	var st shm.IntakeStats
	rr.announced, st = rr.region.Intake().Take(rr.announced[:0])
	if st != (shm.IntakeStats{}) {
		// Their slots, if still queued, are adopted by the reconcile scan.
		rr.log.Warn().Int("holes", st.Holes).Int("orphaned", st.Orphaned).Int("corrupt", st.Corrupt).
			Msg("intake entries stepped over")
	}
	for _, g := range rr.announced {
		rr.onGroup(g)
	}
}

// onGroup queues one announced group's requests unless they are known
// (adopted from the slot table already) or their slots moved on (stale).
func (rr *role) onGroup(g []shm.SlotGen) {
	var group []*tracked
	for _, sg := range g {
		if rr.entries[requestID(int(sg.Slot), sg.Gen)] != nil {
			continue // already adopted from the slot table
		}
		e, err := rr.entryFor(int(sg.Slot), sg.Gen, shm.StateQueued)
		if err != nil {
			rr.log.Debug().Err(err).Uint32("slot", sg.Slot).Msg("announced slot not queued; ignored")
			continue
		}
		group = append(group, e)
	}
	rr.submit(group)
}

// entryFor builds the entry of slot index at gen, which must be in state want
// and hold a sane request.
func (rr *role) entryFor(index int, gen uint32, want shm.State) (*tracked, error) {
	s, err := rr.region.Slot(index)
	if err != nil {
		return nil, err
	}
	if err := s.Check(gen, want); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		// A torn slot: end it instead of reading it as a request.
		rr.log.Error().Err(err).Int("slot", index).Msg("torn slot aborted")
		if want == shm.StateQueued {
			_ = s.MarkInferReleased(gen, shm.StateQueued, shm.FinishError)
			rr.ringDetok()
		}
		return nil, err
	}
	flags := s.Flags.Load()
	req := &sched.Request{
		ID: requestID(index, gen), Group: s.GroupID.Load(), InputLen: int(s.PromptLen.Load()),
		MaxNewTokens: int(s.MaxNewTokens.Load()), IgnoreEOS: flags&shm.FlagIgnoreEOS != 0,
	}
	if flags&shm.FlagEmbed != 0 {
		// An embedding generates nothing (max_new_tokens 0 in the slot);
		// the scheduler counts one token, known exactly.
		req.Embed, req.IgnoreEOS, req.MaxNewTokens = true, true, 1
	}
	return &tracked{slot: s, gen: gen, group: s.GroupID.Load(), req: req}, nil
}

// submit queues one group of new entries; a group the scheduler refuses
// (it could never fit the KV) is finished with an error.
func (rr *role) submit(group []*tracked) {
	if len(group) == 0 {
		return
	}
	reqs := make([]*sched.Request, len(group))
	for i, e := range group {
		reqs[i] = e.req
	}
	if err := rr.sched.Submit(reqs); err != nil {
		rr.log.Error().Err(err).Uint64("group", group[0].group).Msg("request refused")
		for _, e := range group {
			_ = e.slot.MarkInferReleased(e.gen, shm.StateQueued, shm.FinishError)
		}
		rr.ringDetok()
		return
	}
	for _, e := range group {
		rr.entries[e.req.ID] = e
	}
}

// admit starts an admitted request: its slot becomes Running and infer gets
// a NEW command.
func (rr *role) admit(e *tracked) {
	if e == nil {
		return
	}
	if err := e.slot.Transition(e.gen, shm.StateQueued, shm.StateRunning); err != nil {
		// Only this router moves Queued slots; the next observe drops it.
		rr.log.Warn().Err(err).Int("slot", e.slot.Index).Msg("admitted slot changed state")
		return
	}
	rr.command(shm.Command{Op: shm.OpNew, Slot: uint32(e.slot.Index), Gen: e.gen}, shm.MarkNewSent, e)
	if a := e.slot.ArrivalUnixNano.Load(); a > 0 {
		rr.mc.ObserveDuration(metrics.RequestQueueDuration, max(time.Since(time.Unix(0, a)), 0))
	}
}

// drop ends a request that never reached infer.
func (rr *role) drop(e *tracked, why string) {
	if e == nil {
		return
	}
	delete(rr.entries, e.req.ID)
	if err := e.slot.MarkInferReleased(e.gen, shm.StateQueued, shm.FinishAborted); err != nil {
		rr.log.Debug().Err(err).Int("slot", e.slot.Index).Msg("drop")
	}
	rr.log.Debug().Int("slot", e.slot.Index).Str("why", why).Msg("request dropped")
	rr.ringDetok()
}

// forget removes an entry whose slot was reused behind the router's back:
// a running one is released as aborted in this step.
func (rr *role) forget(e *tracked, in *sched.StepInput) {
	delete(rr.entries, e.req.ID)
	if e.req.Running() {
		in.Finished = append(in.Finished, sched.Finished{ID: e.req.ID, OutputLen: e.req.OutputLen, Aborted: true})
	} else {
		rr.sched.Abort(e.req.ID)
	}
}

// pendingCmd is a command waiting for ring room plus the mark to set once
// it is pushed.
type pendingCmd struct {
	cmd  shm.Command
	mark uint32
	e    *tracked
}

// command queues a command for infer; flush pushes it. The mark is stored
// in the slot only after the push, so a router killed in between sends the
// command again after its restart (infer ignores a repeat).
func (rr *role) command(c shm.Command, mark uint32, e *tracked) {
	rr.pendingCmds = append(rr.pendingCmds, pendingCmd{cmd: c, mark: mark, e: e})
}

// flush pushes queued commands in order until the ring is full.
func (rr *role) flush() error {
	ring := rr.region.Commands()
	n := 0
	for _, p := range rr.pendingCmds {
		if _, err := ring.Push(p.cmd); err != nil {
			if errors.Is(err, shm.ErrRingFull) {
				break
			}
			return fmt.Errorf("command ring: %w", err)
		}
		// RouterMarks has one writer, this router, so load-or-store is safe.
		s := p.e.slot
		if st, g := s.Load(); g == p.e.gen && st != shm.StateFree {
			s.RouterMarks.Store(s.RouterMarks.Load() | p.mark)
		}
		n++
	}
	rr.pendingCmds = slices.Delete(rr.pendingCmds, 0, n)
	return nil
}

func (rr *role) ringDetok() {
	if rs, err := rr.region.Role(shm.RoleDetokenizer); err == nil {
		rr.region.Bell(rs).Ring()
	}
}

// recover rebuilds the router's state from the slot table (a restarted
// router, or the first start over a region some requests already use):
// queued slots join the waiting queue in arrival order, grouped as they were
// submitted; running slots join the running set as they are, and get again
// any command this router's predecessor queued but had not yet pushed. No
// request is admitted twice: only Queued slots can be admitted.
func (rr *role) recover() error {
	var queued, running []*tracked
	for i := 0; i < rr.region.NumSlots(); i++ {
		s, err := rr.region.Slot(i)
		if err != nil {
			return err
		}
		st, gen := s.Load()
		switch {
		case st == shm.StateQueued:
			if e, err := rr.entryFor(i, gen, st); err == nil {
				queued = append(queued, e)
			}
		case st == shm.StateRunning && s.InferReleased.Load() == 0:
			if e, err := rr.entryFor(i, gen, st); err == nil {
				running = append(running, e)
			}
		}
	}
	byArrival := func(a, b *tracked) int {
		return cmpInt64(a.slot.ArrivalUnixNano.Load(), b.slot.ArrivalUnixNano.Load())
	}
	slices.SortStableFunc(running, byArrival)
	for _, e := range running {
		if err := rr.adopt(e); err != nil {
			rr.log.Error().Err(err).Int("slot", e.slot.Index).Msg("running request not adopted")
		}
	}
	rr.submitQueued(queued)
	if n := len(queued) + len(running); n > 0 {
		rr.log.Info().Int("waiting", len(queued)).Int("running", len(running)).Msg("state rebuilt from the slot table")
	}
	return rr.flush()
}

// adopt puts a Running slot into the running set.
func (rr *role) adopt(e *tracked) error {
	marks := e.slot.RouterMarks.Load()
	r := e.req
	r.OutputLen = min(int(e.slot.OutputLen.Load()), r.MaxNewTokens)
	r.KVLen = int(e.slot.KVLen.Load())
	if err := rr.sched.AdoptRunning(r); err != nil {
		return err
	}
	rr.entries[r.ID] = e
	if marks&shm.MarkNewSent == 0 {
		rr.command(shm.Command{Op: shm.OpNew, Slot: uint32(e.slot.Index), Gen: e.gen}, shm.MarkNewSent, e)
	}
	return nil
}

// submitQueued queues Queued slots found in the table, oldest first, one
// group per shm GroupID.
func (rr *role) submitQueued(queued []*tracked) {
	slices.SortStableFunc(queued, func(a, b *tracked) int {
		if c := cmpInt64(a.slot.ArrivalUnixNano.Load(), b.slot.ArrivalUnixNano.Load()); c != 0 {
			return c
		}
		return cmpInt64(int64(a.slot.RequestID.Load()), int64(b.slot.RequestID.Load()))
	})
	for i := 0; i < len(queued); {
		j := i + 1
		for j < len(queued) && queued[j].group == queued[i].group && queued[i].group != 0 {
			j++
		}
		rr.submit(queued[i:j])
		i = j
	}
}

// reconcile adopts queued slots whose announcement was lost (refused by a
// ring full while this router was down, or left half-made by an apiserver
// that died): a queued slot with no entry in two consecutive scans is
// queued from the table.
func (rr *role) reconcile() {
	seen := map[uint64]bool{}
	var adopt []*tracked
	for i := 0; i < rr.region.NumSlots(); i++ {
		s, err := rr.region.Slot(i)
		if err != nil {
			return
		}
		st, gen := s.Load()
		if st != shm.StateQueued {
			continue
		}
		id := requestID(i, gen)
		if rr.entries[id] != nil {
			continue
		}
		seen[id] = true
		if !rr.unknownQueued[id] {
			continue
		}
		if e, err := rr.entryFor(i, gen, shm.StateQueued); err == nil {
			adopt = append(adopt, e)
		}
	}
	rr.unknownQueued = seen
	if len(adopt) > 0 {
		rr.log.Warn().Int("requests", len(adopt)).Msg("queued slots never announced adopted from the slot table")
		rr.submitQueued(adopt)
		for _, e := range adopt {
			delete(rr.unknownQueued, e.req.ID)
		}
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
