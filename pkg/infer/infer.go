// Package infer is the infer role (cmd/infer): it loads the model, sizes the
// KV cache from max_total_token_num, and drives the continuous-batching
// engine from one goroutine. Requests arrive as NEW commands on the shm
// command ring (in order); every generated token is written into the
// request's shm token array and published with candetoken_out_len last;
// finished requests get their finish status and infer_released once their
// KV is freed. The free-KV counters, the last-progress time and the role's
// heartbeat are kept in the shm header.
//
// Restart: a new infer process bumps its epoch and resumes every request
// the previous one left running, re-prefilling its prompt plus the tokens
// already published, with the same seed, so the client's text continues
// without a gap or a duplicate and greedy/seeded output is the same as
// without the crash.
package infer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// idleWait bounds one sleep on the command ring's doorbell when there is
// nothing to run but requests are live (paused, or between steps): their
// shm flags are polled at this pace. Whoever sets a flag also rings the
// doorbell, so this only bounds a ring lost to a crash.
const idleWait = 20 * time.Millisecond

// Executor is what the role drives: *engine.Engine (over the real model or
// the synthetic one). Not goroutine-safe; the role calls it from one
// goroutine.
type Executor interface {
	Add(r engine.Request) error
	Abort(id uint64) bool
	Step() ([]engine.Output, error)
	Info(id uint64) (engine.ReqInfo, bool)
	HasWork() bool
	Stats() engine.Stats
}

var _ Executor = (*engine.Engine)(nil)

// Run is the infer role's body: `func main() { os.Exit(rolectl.Main(config.RoleInfer, infer.Run)) }`.
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	region, err := pipeline.OpenRegion(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer region.Close()
	ex, closeModel, err := NewExecutor(cfg, log)
	if err != nil {
		return err
	}
	defer closeModel()
	mc, err := metrics.NewClientFor(cfg, config.RoleInfer, log)
	if err != nil {
		return err
	}
	defer mc.Close()
	opts := WorkerOptions{MaxTotalTokens: cfg.MaxTotalTokenNum,
		StallLimit: max(30*time.Second, cfg.HeartbeatTimeout.D()), Metrics: mc, Log: log, StatsInterval: cfg.StatsInterval.D(),
		StreamInterval: cfg.StreamInterval.D(), IdleWait: cfg.IdleWait(), Hooks: TestHooksFromEnv(cfg.RunDir, log)}
	if e, ok := ex.(*engine.Engine); ok {
		opts.Constraint = newConstraints(cfg.ModelDir, e.ModelConfig()).processor
	}
	w, err := NewWorker(region, ex, opts)
	if err != nil {
		return err
	}
	ctl.SetProgressCheck(w.Progress)
	if err := ctl.Ready(ctx); err != nil {
		return err
	}
	return w.Run(ctx)
}

// WorkerOptions configure NewWorker.
type WorkerOptions struct {
	// MaxTotalTokens is the KV capacity published for the router and
	// the apiserver.
	MaxTotalTokens int
	// StallLimit: a loop iteration (one engine step) taking longer than this
	// makes Progress fail, so the supervisor restarts a wedged infer.
	StallLimit time.Duration
	// Metrics receives the step metrics; nil sends none.
	Metrics *metrics.Client
	// Hooks are the end-to-end tests' fault injection (testhook.go); nil,
	// the default, is off.
	Hooks *TestHooks
	Log   zerolog.Logger
	// StatsInterval is how often the stats line is logged while there is
	// activity (statslog.go); 0 turns it off.
	StatsInterval time.Duration
	// StreamInterval is how long published tokens may wait before infer
	// rings the detokenizer for them (config.StreamInterval); 0 rings
	// after every step.
	StreamInterval time.Duration
	// IdleWait bounds one sleep on the doorbell while no request is live
	// (config.IdleWait): nothing then needs polling, and each timeout is a
	// wake-up of the process and of its Go runtime's threads (at 20 ms an
	// idle infer woke ~290 times a second, issue 25). 0 is idleWait.
	IdleWait time.Duration
	// Constraint builds the logits processor of a request whose extras
	// carry a structured-output constraint (pkg/constrain); nil fails such
	// requests.
	Constraint func(spec []byte) (func() (engine.LogitsProcessor, error), error)
}

// Worker connects an Executor to the shm region. Its methods other than
// Progress must be called from one goroutine.
type Worker struct {
	region *shm.Region
	ex     Executor
	o      WorkerOptions
	epoch  uint32
	ring   *shm.Ring
	self   *shm.RoleState
	detok  *shm.RoleState
	router *shm.RoleState
	api    *shm.RoleState

	live map[uint64]*liveReq

	lastIter  atomic.Int64 // unix nanos when the loop last turned
	ringDetok bool         // tokens or finishes published since the last ring
	// detokNow: what was published must not wait for StreamInterval (a
	// request's first token, a request's end).
	detokNow   bool
	lastDetok  time.Time // when the detokenizer was last rung
	ringRouter bool
	ringAPI    bool // top-logprob entries written: the apiserver copies them out
	// last engine counters, for the metric deltas
	stats      engine.Stats
	lastReport time.Time
	// steps holds the durations (seconds) of the engine steps not yet sent
	// to the metric role, by method: flushSteps sends them once per
	// stepsEvery as BatchInferenceDuration observations and their count as
	// one BatchInferenceCount add, not as events per step.
	steps     struct{ prefill, decode []float64 }
	lastSteps time.Time
	statsLog  statsLine
}

// liveReq is a request the engine holds.
type liveReq struct {
	slot *shm.Slot
	gen  uint32
	out  int // output tokens written to the slot
	// aborting: the engine was told to abort (the slot's abort flag).
	aborting bool
	// stopped: the detokenizer matched a stop string; the request ends as
	// "stop" and tokens generated after the match are not written.
	stopped bool
	// topWaited is how long infer waited for the apiserver to copy
	// top-logprob entries out (logprobs.go).
	topWaited time.Duration
}

// engineID names a slot generation as an engine request id.
func engineID(index int, gen uint32) uint64 { return uint64(index)<<32 | uint64(gen) }

// NewWorker takes the infer role in region: it publishes the KV capacity,
// bumps the infer epoch and resumes the requests a previous infer process
// left running.
func NewWorker(region *shm.Region, ex Executor, o WorkerOptions) (*Worker, error) {
	if o.StallLimit <= 0 {
		o.StallLimit = 30 * time.Second
	}
	w := &Worker{region: region, ex: ex, o: o, ring: region.Commands(), live: map[uint64]*liveReq{},
		statsLog: statsLine{every: o.StatsInterval}}
	var err error
	if w.self, err = region.Role(shm.RoleInfer); err != nil {
		return nil, err
	}
	if w.detok, err = region.Role(shm.RoleDetokenizer); err != nil {
		return nil, err
	}
	if w.router, err = region.Role(shm.RoleRouter); err != nil {
		return nil, err
	}
	if w.api, err = region.Role(shm.RoleAPIServer); err != nil {
		return nil, err
	}
	l := region.Load()
	l.MaxTotalTokenNum.Store(int64(o.MaxTotalTokens))
	w.publishLoad()
	if w.epoch, err = region.BeginEpoch(shm.RoleInfer); err != nil {
		return nil, err
	}
	w.lastIter.Store(time.Now().UnixNano())
	n := w.resume()
	o.Log.Info().Uint32("epoch", w.epoch).Int("resumed", n).Int("max_total_tokens", o.MaxTotalTokens).Msg("infer attached")
	return w, nil
}

// Progress is the heartbeat's check.
func (w *Worker) Progress() error {
	if age := time.Since(time.Unix(0, w.lastIter.Load())); age > w.o.StallLimit {
		return fmt.Errorf("infer loop stalled for %s", age.Round(time.Millisecond))
	}
	return nil
}

// resume adopts every request left Running and not released, oldest first:
// they were running under a previous infer epoch (or their NEW command is
// still on the ring, which is then ignored as a repeat).
func (w *Worker) resume() int {
	type found struct {
		index   int
		gen     uint32
		arrival int64
	}
	var all []found
	for i := 0; i < w.region.NumSlots(); i++ {
		s, err := w.region.Slot(i)
		if err != nil {
			break
		}
		if st, gen := s.Load(); st == shm.StateRunning && s.InferReleased.Load() == 0 {
			all = append(all, found{i, gen, s.ArrivalUnixNano.Load()})
		}
	}
	slices.SortStableFunc(all, func(a, b found) int {
		switch {
		case a.arrival < b.arrival:
			return -1
		case a.arrival > b.arrival:
			return 1
		}
		return 0
	})
	for _, f := range all {
		w.start(f.index, f.gen)
	}
	w.wake(time.Now(), true)
	return len(all)
}

// Run loops until ctx ends: commands, shm flags, one engine step, publish;
// it sleeps on the command ring's doorbell while there is nothing to run.
func (w *Worker) Run(ctx context.Context) error {
	bell := w.ring.DataBell()
	// An idle loop may sleep for Options.IdleWait: the end of ctx wakes it.
	// A ring already under way is waited for, since the caller unmaps the
	// region once Run returns.
	rung := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { defer close(rung); bell.Ring() })
	defer func() {
		if !stop() {
			<-rung
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen := bell.Seq()
		busy, err := w.Iterate()
		if err != nil {
			return err
		}
		if !busy {
			bell.Wait(seen, w.sleep())
		}
	}
}

// sleep is how long an idle loop waits for the doorbell: idleWait while
// requests are live (their flags are polled), else Options.IdleWait.
func (w *Worker) sleep() time.Duration {
	if len(w.live) > 0 || w.o.IdleWait <= 0 {
		return idleWait
	}
	return max(w.o.IdleWait, idleWait)
}

// Iterate is one loop iteration without waiting: it consumes the commands,
// polls the shm flags, runs one engine step if there is work, and
// publishes. busy reports whether a step ran.
func (w *Worker) Iterate() (busy bool, err error) {
	w.commands()
	w.flags()
	busy = w.ex.HasWork()
	if busy {
		if err := w.step(); err != nil {
			return true, err
		}
	}
	w.publishLoad()
	t := time.Now()
	w.wake(t, !busy)
	w.flushSteps(t, !busy)
	w.logStats(t)
	now := t.UnixNano()
	w.lastIter.Store(now)
	w.self.HeartbeatUnixNano.Store(now)
	if !busy {
		w.region.Load().LastProgressUnixNano.Store(now) // idle counts as healthy
	}
	return busy, nil
}

// commands consumes the ring in order.
func (w *Worker) commands() {
	for {
		c, ok, err := w.ring.Pop()
		if !ok {
			return
		}
		if err != nil {
			w.o.Log.Error().Err(err).Msg("bad command skipped")
			continue
		}
		if c.Op == shm.OpNew {
			w.start(int(c.Slot), c.Gen)
		}
	}
}

// flags polls the shm abort (apiserver) and stop-matched (detokenizer)
// flags of the live requests: the one way a running request ends early.
// The flags live in the slot, so neither a crashed writer nor a restarted
// infer can lose them; whoever sets one rings infer's doorbell (the
// command ring's DataBell) so an idle infer looks at once.
func (w *Worker) flags() {
	for id, l := range w.live {
		s := l.slot
		switch {
		case l.aborting || l.stopped:
		case s.StopMatched.Load() != 0:
			l.stopped = true
			w.ex.Abort(id)
		case s.Abort.Load() != 0:
			l.aborting = true
			w.ex.Abort(id)
		}
	}
}

// start hands slot index (generation gen) to the engine, resuming after the
// tokens already published. Repeats and stale commands are ignored.
func (w *Worker) start(index int, gen uint32) {
	s, err := w.region.Slot(index)
	if err != nil {
		w.o.Log.Error().Err(err).Msg("NEW for a bad slot")
		return
	}
	id := engineID(index, gen)
	if w.live[id] != nil || s.Check(gen, shm.StateRunning) != nil || s.InferReleased.Load() != 0 {
		return
	}
	end := func(status shm.FinishStatus, why string, err error) {
		if err != nil {
			w.o.Log.Error().Err(err).Int("slot", index).Msg(why)
		}
		if rerr := s.MarkInferReleased(gen, shm.StateRunning, status); rerr != nil {
			w.o.Log.Warn().Err(rerr).Int("slot", index).Msg("release")
		}
		w.ringDetok, w.detokNow, w.ringRouter = true, true, true
	}
	if err := s.Validate(); err != nil {
		end(shm.FinishError, "torn slot aborted", err)
		return
	}
	switch fs := shm.FinishStatus(s.FinishStatus.Load()); {
	case fs != shm.FinishNone: // finished by a previous infer that died before releasing it
		end(fs, "", nil)
		return
	case s.StopMatched.Load() != 0:
		end(shm.FinishStop, "", nil)
		return
	case s.Abort.Load() != 0:
		end(shm.FinishAborted, "", nil)
		return
	}
	prompt, err := s.Prompt()
	if err != nil {
		end(shm.FinishError, "bad prompt", err)
		return
	}
	outs, err := s.Outputs()
	if err != nil {
		end(shm.FinishError, "bad outputs", err)
		return
	}
	// Per-request sampling state (a grammar, a logit-bias map) is built
	// here as req.NewProcessor from s.ExtrasFor(gen): the engine rebuilds
	// it by replay after a restart or an eviction (docs/contracts.md).
	req := engine.Request{ID: id, Prompt: slices.Clone(prompt), AlreadyGenerated: slices.Clone(outs), Params: s.Params()}
	if s.ExtrasLen.Load() > 0 {
		x, err := s.ExtrasFor(gen)
		if err != nil {
			end(shm.FinishError, "bad extras", err)
			return
		}
		var allowed, bias, grammar, budget func() (engine.LogitsProcessor, error)
		if len(x.AllowedTokenIDs) > 0 {
			allowed = newAllowed(x.AllowedTokenIDs)
		}
		if len(x.LogitBias) > 0 {
			bias = newBias(x.LogitBias)
		}
		if len(x.Constraint) > 0 {
			if w.o.Constraint == nil {
				end(shm.FinishError, "constrained request", errors.New("this infer has no grammar engine"))
				return
			}
			if grammar, err = w.o.Constraint(x.Constraint); err != nil {
				end(shm.FinishError, "constraint", err)
				return
			}
		}
		if x.ThinkBudget != nil {
			budget = newThinkBudget(x.ThinkBudget)
		}
		// The budget last: forcing the end tag overrides what came before.
		req.NewProcessor = chainFactories(allowed, bias, grammar, budget)
	}
	if err := w.ex.Add(req); err != nil {
		if errors.Is(err, engine.ErrAlreadyFinished) {
			// The last published token already ended it (the previous infer
			// died between publishing and finishing).
			st := shm.FinishStop
			if len(outs) >= req.Params.MaxNewTokens {
				st = shm.FinishLength
			}
			end(st, "", nil)
			return
		}
		end(shm.FinishError, "request refused by the engine", err)
		return
	}
	w.live[id] = &liveReq{slot: s, gen: gen, out: len(outs)}
	if len(outs) > 0 {
		w.o.Log.Info().Int("slot", index).Int("resumed_tokens", len(outs)).Msg("request resumed")
	}
}

// step runs one engine step and writes its outputs back.
func (w *Worker) step() error {
	if w.o.Hooks.wedgeDue() {
		w.o.Hooks.wedge(context.Background())
	}
	start := time.Now()
	fwdBefore := w.ex.Stats().ForwardTokens
	outs, err := w.ex.Step()
	took := time.Since(start)
	w.collect(outs)
	if err != nil {
		// The engine's state is unknown now; a fresh process resumes every
		// request from shm.
		return fmt.Errorf("engine step: %w", err)
	}
	// Progress is any work the model did, not only emitted tokens: a
	// request replaying its generated tokens after a restart (one decode
	// step per token, nothing emitted) is busy, not wedged.
	if len(outs) > 0 || w.ex.Stats().ForwardTokens != fwdBefore {
		w.region.Load().LastProgressUnixNano.Store(time.Now().UnixNano())
	}
	w.stepMetrics(took)
	for id, l := range w.live {
		if info, ok := w.ex.Info(id); ok {
			l.slot.KVLen.Store(uint32(info.KVLen))
			paused := uint32(0)
			if info.State == engine.StatePaused {
				paused = 1
			}
			l.slot.IsPaused.Store(paused)
			if info.PromptCacheLen >= 0 {
				l.slot.PromptCacheLen.Store(uint32(info.PromptCacheLen))
			}
		}
	}
	return nil
}

// collect writes the tokens of one step into the slots, output token first,
// candetoken_out_len last (Publish), and releases finished requests.
func (w *Worker) collect(outs []engine.Output) {
	for _, o := range outs {
		l := w.live[o.ID]
		if l == nil {
			continue
		}
		s := l.slot
		if o.Token >= 0 && o.Reason != engine.FinishAbort && !l.stopped && !l.aborting {
			fin := shm.FinishNone
			if o.Finished {
				fin = finishStatus(o.Reason)
			}
			// Before Publish: a reader of this token sees the request's cache hit.
			s.PromptCacheLen.Store(uint32(o.PromptCacheLen))
			if err := s.SetOutput(l.out, o.Token); err != nil {
				w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("output does not fit the slot")
				w.ex.Abort(o.ID)
				l.aborting = true
				continue
			}
			w.writeLogprobs(l, o)
			l.out++
			w.statsLog.gen++
			if err := s.Publish(uint32(l.out), fin); err != nil {
				w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("publish")
			}
			w.ringDetok = true
			// The first token goes out at once: time to first token is
			// what a client waits on, and a new stream has nothing to
			// coalesce with.
			w.detokNow = w.detokNow || l.out == 1
		}
		if !o.Finished {
			continue
		}
		if o.Err != nil {
			w.o.Log.Error().Err(o.Err).Int("slot", s.Index).Msg("request failed")
		}
		status := finishStatus(o.Reason)
		switch {
		case l.stopped:
			status = shm.FinishStop
		case l.aborting:
			status = shm.FinishAborted
		case o.Embedding != nil:
			// Before the release that publishes it (embed.go in shm).
			if err := s.SetEmbedding(o.Embedding); err != nil {
				w.o.Log.Error().Err(err).Int("slot", s.Index).Msg("embedding does not fit the slot")
				status = shm.FinishError
			}
		}
		s.KVLen.Store(0)
		s.IsPaused.Store(0)
		if err := s.MarkInferReleased(l.gen, shm.StateRunning, status); err != nil {
			w.o.Log.Warn().Err(err).Int("slot", s.Index).Msg("release")
		}
		delete(w.live, o.ID)
		w.ringDetok, w.detokNow, w.ringRouter = true, true, true
	}
}

// wake rings the detokenizer (new tokens or finishes) and the router (a
// request was released), each at most once per iteration. Tokens alone
// wait up to StreamInterval, or longer past config.PacedStreams requests
// (config.StreamSpacing; now is the iteration's time): at one stream
// of a model whose step takes a few ms, a ring per step costs a wake-up of
// the detokenizer, the apiserver and the client per token (~0.5 ms of CPU
// on the 2-core dev box, taken from infer's workers when --threads fills
// the cores), where one ring per interval carries several steps' tokens
// through each in one go. An idle engine (nothing more is coming), a
// request's first token and a request's end ring at once; the
// detokenizer then hands over only the streams that are due (detok.Pass).
func (w *Worker) wake(now time.Time, idle bool) {
	if w.ringDetok && (w.detokNow || idle || now.Sub(w.lastDetok) >= config.StreamSpacing(w.o.StreamInterval, len(w.live))) {
		w.region.Bell(w.detok).Ring()
		w.ringDetok, w.detokNow, w.lastDetok = false, false, now
	}
	if w.ringRouter {
		w.region.Bell(w.router).Ring()
		w.ringRouter = false
	}
	if w.ringAPI {
		w.region.Bell(w.api).Ring()
		w.ringAPI = false
	}
}

// publishLoad stores the KV counters: tokens free in the pool, and prompt
// cache tokens no request uses (free on demand).
func (w *Worker) publishLoad() {
	st := w.ex.Stats()
	l := w.region.Load()
	l.FreeKVTokens.Store(int64(st.KVSize - st.KVAllocated))
	l.EvictableKVTokens.Store(int64(st.KVEvictable))
	if w.o.Metrics != nil && st.KVSize > 0 && time.Since(w.lastReport) >= time.Second {
		w.lastReport = time.Now()
		w.o.Metrics.Gauge(metrics.KVUsage, float64(st.KVUsed)/float64(st.KVSize))
		w.o.Metrics.Gauge(metrics.KVCacheBytes, float64(st.KVBytes))
		w.o.Metrics.Gauge(metrics.KVLocalTokens, float64(st.KVLocalAllocated))
	}
}

// stepMetrics reports one engine step: LightLLM's per-method step count
// and duration (a step with any prefill chunk counts as prefill),
// evictions for lack of KV, and prompt-cache tokens evicted for room.
func (w *Worker) stepMetrics(took time.Duration) {
	if w.o.Metrics == nil {
		return
	}
	st := w.ex.Stats()
	method := metrics.MethodDecode
	if st.PrefillTokens > w.stats.PrefillTokens {
		method = metrics.MethodPrefill
	}
	if method == metrics.MethodPrefill {
		w.steps.prefill = append(w.steps.prefill, took.Seconds())
	} else {
		w.steps.decode = append(w.steps.decode, took.Seconds())
	}
	if n := st.Evictions - w.stats.Evictions; n > 0 {
		w.o.Metrics.Counter(metrics.RequestPreemptions, float64(n))
	}
	if n := st.CacheEvictedTokens - w.stats.CacheEvictedTokens; n > 0 {
		w.o.Metrics.Counter(metrics.CacheEvictedTokens, float64(n))
	}
	w.stats = st
}

// stepsEvery paces the step metrics: Prometheus scrapes every few seconds,
// so a step's duration may reach the histogram a second late.
const stepsEvery = time.Second

// maxPendingSteps bounds the step durations held between flushes (a fast
// model steps thousands of times a second), well under the metrics
// client's queue (4096 events), which drops what does not fit.
const maxPendingSteps = 512

// flushSteps sends the steps taken since the last flush: every duration
// as one BatchInferenceDuration observation and their count as one
// BatchInferenceCount add per method, once per stepsEvery (or
// maxPendingSteps) while busy and at once when the engine goes idle.
// Sending them as they happened kept the metrics client's writer lingering
// and writing a frame every 50 ms while the engine ran: a wake-up of the
// metric role and of infer's writer thread 20 times a second, on the cores
// the engine's workers use.
func (w *Worker) flushSteps(now time.Time, idle bool) {
	pending := len(w.steps.prefill) + len(w.steps.decode)
	if w.o.Metrics == nil || (!idle && now.Sub(w.lastSteps) < stepsEvery && pending < maxPendingSteps) {
		return
	}
	w.lastSteps = now
	for _, m := range []struct {
		method string
		durs   *[]float64
	}{{metrics.MethodPrefill, &w.steps.prefill}, {metrics.MethodDecode, &w.steps.decode}} {
		if len(*m.durs) == 0 {
			continue
		}
		for _, d := range *m.durs {
			w.o.Metrics.ObserveLabel(metrics.BatchInferenceDuration, m.method, d)
		}
		w.o.Metrics.CounterLabel(metrics.BatchInferenceCount, m.method, float64(len(*m.durs)))
		*m.durs = (*m.durs)[:0]
	}
}

func finishStatus(r engine.FinishReason) shm.FinishStatus {
	switch r {
	case engine.FinishStop:
		return shm.FinishStop
	case engine.FinishLength:
		return shm.FinishLength
	case engine.FinishAbort:
		return shm.FinishAborted
	case engine.FinishError:
		return shm.FinishError
	}
	return shm.FinishNone
}
