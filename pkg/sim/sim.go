// Package sim is the `lightllm sim` scheduling simulator. It drives the
// router's real Scheduler and policies (pkg/router, not a copy) with a model
// of an engine: chunked prefill, lockstep decode, a KV pool of
// max_total_tokens, and evict-and-recompute when a step does not fit. Each
// request's true output length stays inside the simulator until its EOS step;
// only the oracle policy is given it.
package sim

import (
	"errors"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/sched"
)

// Options configures one simulation.
type Options struct {
	Policy     string
	Config     sched.Config
	PastFuture sched.PastFutureOptions
	// Seed seeds the policy's sampling.
	Seed uint64
	// MaxNewTokens, when > 0, replaces every request's max_new_tokens (it
	// must stay >= the request's true output length).
	MaxNewTokens int
	SLA          SLA
	Model        StepModel

	// wrap lets tests put a spy around the policy.
	wrap func(sched.Policy) sched.Policy
}

// DefaultOptions returns the router defaults for a KV of maxTotalTokens, the
// default step model and SLA, and the default policy.
func DefaultOptions(maxTotalTokens int) Options {
	return Options{
		Policy: sched.PolicyPastFuture,
		Config: sched.DefaultConfig(maxTotalTokens),
		SLA:    DefaultSLA(),
		Model:  DefaultStepModel(),
	}
}

// ErrStuck reports a workload the scheduler can never start (it admits
// nothing while the engine is idle).
var ErrStuck = errors.New("sim: scheduler admits nothing on an idle engine")

type simReq struct {
	r        *sched.Request
	trueOut  int
	arrival  float64
	first    float64 // time of the first token, -1 before
	last     float64 // time of the latest token
	maxGap   float64
	evicted  bool
	finished bool
	out      bool // scratch mark: being evicted
}

type engine struct {
	o       Options
	cfg     sched.Config
	sched   *sched.Scheduler
	reqs    []simReq
	active  []*simReq // infer's requests, in admission order
	pending int       // active requests still (re)prefilling
	used    int       // KV tokens in use
	t       float64
	sincePF int // decode steps since the last prefill step
	fin     []sched.Finished

	finished    int
	decodeSteps int64
	prefillStep int64
	evictions   int64
	usageSum    float64
}

// Run simulates items under o and returns the measurements.
func Run(o Options, items []Item) (*Result, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("sim config: %w", err)
	}
	if o.Config.ChunkedPrefillSize > o.Config.BatchMaxTokens {
		return nil, fmt.Errorf("sim config: chunked_prefill_size %d > batch_max_tokens %d", o.Config.ChunkedPrefillSize, o.Config.BatchMaxTokens)
	}
	if err := o.Model.validate(); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: no requests", ErrBadWorkload)
	}
	e := &engine{o: o, cfg: o.Config, reqs: make([]simReq, len(items))}
	for i, it := range items {
		maxNew := it.MaxNew
		if o.MaxNewTokens > 0 {
			maxNew = o.MaxNewTokens
		}
		if it.Output > maxNew {
			return nil, fmt.Errorf("%w: request %d: output %d > max_new_tokens %d", ErrBadWorkload, i, it.Output, maxNew)
		}
		if i > 0 && it.Arrival < items[i-1].Arrival {
			return nil, fmt.Errorf("%w: request %d arrives before request %d", ErrBadWorkload, i, i-1)
		}
		e.reqs[i] = simReq{
			r:       &sched.Request{ID: uint64(i + 1), InputLen: it.Input, MaxNewTokens: maxNew},
			trueOut: it.Output, arrival: it.Arrival, first: -1,
		}
	}
	pol, err := sched.NewPolicy(o.Policy, sched.PolicyOptions{
		Seed: o.Seed, PastFuture: o.PastFuture,
		// The oracle is the only code that ever reads the true lengths.
		Oracle: func(r *sched.Request) int { return e.reqs[r.ID-1].trueOut },
	})
	if err != nil {
		return nil, err
	}
	if o.wrap != nil {
		pol = o.wrap(pol)
	}
	if e.sched, err = sched.New(o.Config, pol); err != nil {
		return nil, err
	}
	if err := e.run(); err != nil {
		return nil, err
	}
	return e.result(), nil
}

func (e *engine) byReq(r *sched.Request) *simReq { return &e.reqs[r.ID-1] }

func (e *engine) run() error {
	next := 0
	for e.finished < len(e.reqs) {
		for next < len(e.reqs) && e.reqs[next].arrival <= e.t {
			if err := e.sched.Submit([]*sched.Request{e.reqs[next].r}); err != nil {
				return fmt.Errorf("submit request %d: %w", next, err)
			}
			next++
		}
		res := e.sched.Step(sched.StepInput{Now: e.t, Finished: e.fin, UsedTokens: e.used})
		e.fin = e.fin[:0]
		for _, r := range res.New {
			e.active = append(e.active, e.byReq(r))
			if !r.Decoding() {
				e.pending++
			}
		}
		decoding := len(e.active) - e.pending
		if e.pending > 0 && (e.sincePF >= e.cfg.RouterMaxWaitTokens || decoding == 0) && e.prefill(decoding) {
			continue
		}
		if decoding > 0 {
			e.decode()
			continue
		}
		switch {
		case len(e.active) > 0:
			return fmt.Errorf("sim: no progress with %d requests prefilling and %d KV tokens free", e.pending, e.cfg.MaxTotalTokens-e.used)
		case e.sched.Waiting() > 0:
			return fmt.Errorf("%w: %d requests waiting", ErrStuck, e.sched.Waiting())
		case next < len(e.reqs):
			e.t = max(e.t, e.reqs[next].arrival)
		default:
			return fmt.Errorf("sim: %d of %d requests lost", len(e.reqs)-e.finished, len(e.reqs))
		}
	}
	// Hand the last finishes to the scheduler so its statistics and running
	// set end complete.
	e.sched.Step(sched.StepInput{Now: e.t, Finished: e.fin, UsedTokens: e.used})
	if st := e.sched.Stats(); st.Running != 0 || e.used != 0 {
		return fmt.Errorf("sim: %d requests still running, %d KV tokens in use after the last finish", st.Running, e.used)
	}
	return nil
}

// prefill runs one prefill step over the (re)prefilling requests in admission
// order, a chunk each within batch_max_tokens, as infer does. It returns
// false if it neither prefilled nor evicted anything.
func (e *engine) prefill(decoding int) bool {
	chunk, budget := e.cfg.ChunkedPrefillSize, e.cfg.BatchMaxTokens
	tokens := 0
	var done []*simReq
	for _, sr := range e.active {
		r := sr.r
		if r.Decoding() {
			continue
		}
		need := min(r.HeldTarget()-r.KVLen, chunk)
		if tokens+need > budget {
			continue
		}
		if free := e.cfg.MaxTotalTokens - e.used; need > free {
			if tokens == 0 && decoding == 0 {
				// Only prefilling requests hold KV and the oldest one does
				// not fit: evict from the newest until it does.
				return e.evict(need-free) > 0
			}
			break
		}
		r.KVLen += need
		e.used += need
		tokens += need
		if r.Decoding() {
			done = append(done, sr)
		}
	}
	if tokens == 0 {
		return false
	}
	e.t += e.o.Model.prefill(tokens)
	e.prefillStep++
	e.sincePF = 0
	for _, sr := range done {
		e.pending--
		if sr.r.OutputLen == 0 {
			// The last chunk of a fresh prompt samples the first token; a
			// recomputed request resumes decoding where it was.
			sr.r.OutputLen = 1
			sr.emit(e.t)
			if e.reachedEnd(sr) {
				e.finish(sr)
			}
		}
	}
	if len(done) > 0 {
		e.compact()
	}
	return true
}

// decode runs one decode step: every caught-up request gets one KV token and
// emits one token; a step that does not fit evicts first.
func (e *engine) decode() {
	n := len(e.active) - e.pending
	if free := e.cfg.MaxTotalTokens - e.used; n > free {
		e.evict(n - free)
		n = len(e.active) - e.pending
		if n == 0 {
			return
		}
	}
	kv := e.used + n
	e.t += e.o.Model.decode(n, kv)
	e.decodeSteps++
	e.sincePF++
	e.usageSum += float64(kv) / float64(e.cfg.MaxTotalTokens)
	anyDone := false
	for _, sr := range e.active {
		r := sr.r
		if !r.Decoding() {
			continue
		}
		r.KVLen++
		r.OutputLen++
		e.used++
		sr.emit(e.t)
		if e.reachedEnd(sr) {
			e.finish(sr)
			anyDone = true
		}
	}
	if anyDone {
		e.compact()
	}
}

func (sr *simReq) emit(t float64) {
	if sr.first < 0 {
		sr.first = t
	} else {
		sr.maxGap = max(sr.maxGap, t-sr.last)
	}
	sr.last = t
}

// reachedEnd is the EOS check: the only place the true length is read.
func (e *engine) reachedEnd(sr *simReq) bool {
	return sr.r.OutputLen >= sr.trueOut || sr.r.OutputLen >= sr.r.MaxNewTokens
}

func (e *engine) finish(sr *simReq) {
	e.used -= sr.r.KVLen
	sr.r.KVLen = 0
	sr.finished = true
	e.finished++
	e.fin = append(e.fin, sched.Finished{ID: sr.r.ID, OutputLen: sr.r.OutputLen})
}

// compact drops finished requests from the active list, keeping order.
func (e *engine) compact() {
	k := 0
	for _, sr := range e.active {
		if !sr.finished {
			e.active[k] = sr
			k++
		}
	}
	clear(e.active[k:])
	e.active = e.active[:k]
}

// evict asks the scheduler to preempt (newest first) and frees the victims'
// KV: they are recomputed when readmitted. It returns the number evicted.
func (e *engine) evict(shortfall int) int {
	victims := e.sched.Preempt(shortfall)
	for _, r := range victims {
		sr := e.byReq(r)
		if !r.Decoding() {
			e.pending--
		}
		e.used -= r.KVLen
		r.KVLen = 0
		sr.evicted = true
		sr.out = true
		e.evictions++
	}
	k := 0
	for _, sr := range e.active {
		if !sr.out {
			e.active[k] = sr
			k++
		}
		sr.out = false
	}
	clear(e.active[k:])
	e.active = e.active[:k]
	return len(victims)
}
