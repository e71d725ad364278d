package sched

import (
	"fmt"
	"slices"
)

// Finished is a request infer has released (shm_infer_released).
type Finished struct {
	ID uint64
	// OutputLen is the final candetoken_out_len; it feeds the statistics
	// unless the request was aborted.
	OutputLen int
	Aborted   bool
}

// StepInput is what the caller observed since the previous Step.
type StepInput struct {
	// Now is the caller's clock in seconds; it only paces the refresh of the
	// published peak when nothing else changes.
	Now      float64
	Finished []Finished
	// UsedTokens is the KV in use (allocator used minus unreferenced prompt
	// cache tokens); it decides is_busy and current_load.
	UsedTokens int
	// Paused is set while infer holds paused requests: as in LightLLM HEAD,
	// nothing new is admitted until they have been recovered.
	Paused bool
}

// TokenLoad holds the numbers LightLLM publishes in its shared TokenLoad
// (served at /token_load).
type TokenLoad struct {
	CurrentLoad         float64 `json:"current_load"`
	LogicalMaxLoad      float64 `json:"logical_max_load"`
	DynamicMaxLoad      float64 `json:"dynamic_max_load"`
	EstimatedPeakTokens int     `json:"estimated_peak_token_count"`
}

// StepResult is what the caller must act on. Its slices are reused by the
// next Step.
type StepResult struct {
	// New are the admitted requests in FIFO order: write NEW commands.
	New []*Request
	// Dropped are waiting requests removed because they were aborted: the
	// caller finishes them as aborted (they never reached infer).
	Dropped []*Request
	Load    TokenLoad
}

// Stats are cumulative counters and current sizes.
type Stats struct {
	Submitted, Admitted, Finished, Dropped, Evicted, UnknownFinished uint64
	Inbox, Waiting, Running                                          int
	EMA                                                              int
}

// Scheduler is the router's queue and admission loop: intake, FIFO waiting
// queue, running set, EMA statistics and token load. It is not safe for
// concurrent use; the router role calls it from its one loop. Its Policy must
// serve no other Scheduler (passes keep per-request bookkeeping).
type Scheduler struct {
	cfg     Config
	pol     Policy
	ema     EMA
	inbox   [][]*Request
	recvMax int
	waiting deque
	running []*Request // admission order, for LIFO eviction
	byID    map[uint64]*Request

	res       StepResult
	view      View
	dropped   []*Request
	load      TokenLoad
	loadAt    float64
	loadDirty bool
	stats     Stats
}

// New returns a scheduler for cfg using policy p.
func New(cfg Config, p Policy) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, fmt.Errorf("%w: nil policy", ErrBadConfig)
	}
	return &Scheduler{cfg: cfg, pol: p, ema: NewEMA(), recvMax: cfg.RecvMin, byID: map[uint64]*Request{}}, nil
}

// Policy returns the admission policy.
func (s *Scheduler) Policy() Policy { return s.pol }

// Running returns the running set in admission order (read only).
func (s *Scheduler) Running() []*Request { return s.running }

// Waiting returns the number of queued requests not yet admitted, including
// those still in the intake.
func (s *Scheduler) Waiting() int { return s.waiting.len() + s.inboxLen() }

// Stats returns the counters.
func (s *Scheduler) Stats() Stats {
	st := s.stats
	st.Inbox, st.Waiting, st.Running, st.EMA = s.inboxLen(), s.waiting.len(), len(s.running), s.ema.Value()
	return st
}

func (s *Scheduler) inboxLen() int {
	n := 0
	for _, g := range s.inbox {
		n += len(g)
	}
	return n
}

// Submit queues one request group as it arrives from the HTTP server (one
// GroupReqIndexes message). It is taken into the waiting queue by a later
// Step, at most RecvMin..RecvMax groups per step.
func (s *Scheduler) Submit(group []*Request) error {
	if len(group) == 0 {
		return fmt.Errorf("%w: empty group", ErrBadRequest)
	}
	if group[0] == nil {
		return fmt.Errorf("%w: nil request", ErrBadRequest)
	}
	key := group[0].GroupKey()
	for i, r := range group {
		if err := s.checkNew(r, key, group[:i]); err != nil {
			return err
		}
	}
	for _, r := range group {
		r.state, r.groupSize = stateInbox, len(group)
		s.byID[r.ID] = r
	}
	// A private copy: Abort edits the group while it waits in the intake.
	s.inbox = append(s.inbox, slices.Clone(group))
	s.stats.Submitted += uint64(len(group))
	return nil
}

func (s *Scheduler) checkNew(r *Request, key uint64, before []*Request) error {
	switch {
	case r == nil:
		return fmt.Errorf("%w: nil request", ErrBadRequest)
	case r.GroupKey() != key:
		return fmt.Errorf("%w: request %d is in group %d, not %d", ErrBadRequest, r.ID, r.GroupKey(), key)
	case r.state != stateNew:
		return fmt.Errorf("%w: request %d submitted twice", ErrBadRequest, r.ID)
	case s.byID[r.ID] != nil || slices.ContainsFunc(before, func(o *Request) bool { return o.ID == r.ID }):
		return fmt.Errorf("%w: duplicate request id %d", ErrBadRequest, r.ID)
	case r.InputLen < 1 || r.MaxNewTokens < 1:
		return fmt.Errorf("%w: request %d has input_len %d, max_new_tokens %d", ErrBadRequest, r.ID, r.InputLen, r.MaxNewTokens)
	case r.OutputLen < 0 || r.KVLen < 0 || r.OutputLen > r.MaxNewTokens:
		return fmt.Errorf("%w: request %d has output_len %d, kv_len %d", ErrBadRequest, r.ID, r.OutputLen, r.KVLen)
	case r.InputLen+r.MaxNewTokens > s.cfg.MaxTotalTokens:
		return fmt.Errorf("%w: request %d needs %d+%d tokens, more than max_total_tokens %d",
			ErrBadRequest, r.ID, r.InputLen, r.MaxNewTokens, s.cfg.MaxTotalTokens)
	}
	return nil
}

// Abort marks a request aborted. A queued request is dropped (reported in the
// next StepResult.Dropped); a running one stays running until infer, which
// reads the same abort flag in the slot, releases it (its output then does
// not feed the EMA). It returns false for an unknown or already finished
// request.
func (s *Scheduler) Abort(id uint64) bool {
	r := s.byID[id]
	if r == nil || r.aborted {
		return r != nil
	}
	r.aborted = true
	switch r.state {
	case stateInbox:
		for gi, g := range s.inbox {
			if i := slices.Index(g, r); i >= 0 {
				s.inbox[gi] = slices.Delete(g, i, i+1)
				break
			}
		}
		s.drop(r)
	case stateWaiting:
		s.waiting.remove(r)
		s.drop(r)
	}
	return true
}

func (s *Scheduler) drop(r *Request) {
	r.state = stateDone
	delete(s.byID, r.ID)
	s.dropped = append(s.dropped, r)
	s.stats.Dropped++
}

// Step runs one router iteration: release finished requests, take new groups
// from the intake, report aborts, admit a new batch with the policy and
// publish the token load.
func (s *Scheduler) Step(in StepInput) *StepResult {
	res := &s.res
	res.New = res.New[:0]
	res.Dropped, s.dropped = append(res.Dropped[:0], s.dropped...), s.dropped[:0]

	s.release(in.Finished)
	s.receive()

	// is_busy is evaluated once per step, as in generate_new_batch.
	s.view = View{Config: &s.cfg, Running: s.running, UsedTokens: in.UsedTokens,
		Busy: float64(in.UsedTokens)/float64(s.cfg.MaxTotalTokens) >= s.cfg.RouterTokenRatio, EMA: s.ema.Value()}
	switch {
	case !in.Paused && s.waiting.len() > 0 && len(s.running) < s.cfg.RunningMaxReqSize:
		s.setPeak(in.Now, s.admit(&s.view))
	case len(s.running) == 0:
		s.setPeak(in.Now, 0)
	case s.loadDirty || in.Now-s.loadAt >= s.cfg.LoadRefreshS:
		s.setPeak(in.Now, s.pol.Begin(&s.view).Peak())
	}
	s.load.CurrentLoad = float64(in.UsedTokens) / float64(s.cfg.MaxTotalTokens)
	res.Load = s.load
	return res
}

func (s *Scheduler) setPeak(now float64, peak int) {
	s.load.EstimatedPeakTokens = peak
	s.load.DynamicMaxLoad = float64(peak) / float64(s.cfg.MaxTotalTokens)
	s.load.LogicalMaxLoad = s.load.DynamicMaxLoad
	s.loadAt, s.loadDirty = now, false
}

func (s *Scheduler) release(fin []Finished) {
	for _, f := range fin {
		r := s.byID[f.ID]
		if r == nil || r.state != stateRunning {
			s.stats.UnknownFinished++
			continue
		}
		if i := slices.Index(s.running, r); i >= 0 {
			s.running = slices.Delete(s.running, i, i+1)
		}
		r.state = stateDone
		delete(s.byID, r.ID)
		s.stats.Finished++
		s.loadDirty = true
		if !f.Aborted && !r.aborted && !r.Embed {
			s.ema.Update(f.OutputLen)
			s.pol.Observe(f.OutputLen)
		}
	}
}

// receive moves up to recvMax groups from the intake to the waiting queue.
// Like LightLLM's non-blocking ZMQ receive: a full intake grows the limit ×1.3
// (up to RecvMax), draining it resets the limit to RecvMin.
func (s *Scheduler) receive() {
	n := len(s.inbox)
	take := min(n, s.recvMax)
	if n >= s.recvMax {
		s.recvMax = min(int(float64(s.recvMax)*1.3), s.cfg.RecvMax)
	} else {
		s.recvMax = s.cfg.RecvMin
	}
	for _, g := range s.inbox[:take] {
		for _, r := range g {
			r.state = stateWaiting
			s.waiting.pushBack(r)
		}
	}
	clear(s.inbox[:take])
	s.inbox = s.inbox[take:]
	if len(s.inbox) == 0 {
		s.inbox = nil
	}
}

// admit is LightLLM's generate_new_batch: walk the waiting queue in FIFO
// order one group at a time, and admit while the request count, the prefill
// budget and the policy's peak bound all hold; stop at the first group that
// does not fit. It returns the estimated peak after admission.
func (s *Scheduler) admit(v *View) int {
	pass := s.pol.Begin(v)
	chunk := s.cfg.ChunkedPrefillSize
	budget := 0
	for _, r := range s.running {
		budget += r.DecodeNeedTokens(chunk)
	}
	count, accepted, idlePeak := len(s.running), 0, 0
	for accepted < s.waiting.len() {
		first := s.waiting.at(accepted)
		end := accepted + 1
		for end < s.waiting.len() && s.waiting.at(end).GroupKey() == first.GroupKey() {
			end++
		}
		group := s.waiting.buf[s.waiting.head+accepted : s.waiting.head+end]
		count += len(group)
		// A group shares one prompt, so its prefill counts once.
		budget += group[len(group)-1].FirstRouterNeedTokens(chunk)
		if count > s.cfg.RunningMaxReqSize || budget > 2*s.cfg.BatchMaxTokens {
			break
		}
		need, ok := pass.Add(group)
		if !ok {
			// An idle server always takes the head of the queue when its
			// worst case fits the KV: the estimate's margins (chunk delay,
			// added_output_len, past_future's bound below capacity) can
			// exceed the capacity for such a request, which would then
			// wait forever with nothing running.
			if len(s.running) == 0 && accepted == 0 && fitsAlone(group, s.cfg.MaxTotalTokens) {
				accepted, idlePeak = end, need
			}
			break
		}
		accepted = end
	}
	for i := range accepted {
		r := s.waiting.at(i)
		r.state = stateRunning
		s.running = append(s.running, r)
		s.res.New = append(s.res.New, r)
	}
	s.waiting.popFront(accepted)
	s.stats.Admitted += uint64(accepted)
	return max(pass.Peak(), idlePeak)
}

// Preempt evicts running requests, most recently admitted first (vLLM's
// recompute preemption), until the KV they hold plus the decode tokens they
// no longer need cover shortfall. The caller (infer) frees their KV; they go
// back to the head of the waiting queue, oldest first, and are
// re-prefilled (prompt and generated tokens) when admitted again. The caller
// must set each victim's KVLen to 0 once it has freed the KV. Aborted victims
// are dropped instead.
func (s *Scheduler) Preempt(shortfall int) []*Request {
	var victims []*Request
	freed := 0
	for freed < shortfall && len(s.running) > 0 {
		r := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		freed += r.KVLen
		if r.Decoding() {
			freed++
		}
		victims = append(victims, r)
	}
	if len(victims) == 0 {
		return nil
	}
	s.loadDirty = true
	s.stats.Evicted += uint64(len(victims))
	slices.Reverse(victims)
	requeue := make([]*Request, 0, len(victims))
	for _, r := range victims {
		if r.aborted {
			s.drop(r)
			continue
		}
		r.state = stateWaiting
		requeue = append(requeue, r)
	}
	s.waiting.pushFront(requeue)
	return victims
}

// AdoptRunning puts a request that is already running on infer (found in
// the slot table by a restarted router) straight into the running set.
func (s *Scheduler) AdoptRunning(r *Request) error {
	if err := s.checkNew(r, r.GroupKey(), nil); err != nil {
		return err
	}
	r.state, r.groupSize = stateRunning, 1
	s.byID[r.ID] = r
	s.running = append(s.running, r)
	s.stats.Submitted++
	s.stats.Admitted++
	s.loadDirty = true
	return nil
}
