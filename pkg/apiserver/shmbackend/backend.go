// Package shmbackend is the apiserver's apiserver.Backend over the real
// request path: a group's sequences get request slots in the instance's shm
// region (prompt ids and sampling parameters written in place), the group
// is pushed to the router over ZeroMQ, and the text pieces the detokenizer
// queues in each slot are read back, woken by the apiserver's shm doorbell,
// and delivered as apiserver.Events. A client that goes away sets the
// slots' abort flag; a slot returns to the pool once infer has released it
// and the detokenizer has queued its last piece.
//
// At start the backend takes a new apiserver epoch and aborts and frees
// every slot a previous apiserver process left behind: their clients'
// connections died with it.
package shmbackend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

// pollWait bounds one sleep on the doorbell while slots wait to be freed
// (infer's release rings no bell here): they are freed at this pace.
const pollWait = 20 * time.Millisecond

// idleWait bounds it otherwise: new text, new groups and aborts ring the
// bell, so the timeout only paces the checks for stranded requests and
// orphaned slots (each timeout is a wake-up of this process and of its
// Go runtime's sysmon, which on a machine with few cores pre-empts
// infer's workers; issue 25). A quarter of StallTimeout or
// UnavailableTimeout when either is shorter (dispatchWait).
const idleWait = 200 * time.Millisecond

// strandEvery is how often the dispatcher checks for stranded requests.
const strandEvery = 50 * time.Millisecond

// Options configure New.
type Options struct {
	Region *shm.Region
	// MaxTotalTokens is the configured KV capacity, used until infer
	// publishes the real one.
	MaxTotalTokens int
	// HealthTimeout: while requests are in flight, no engine progress for
	// this long makes Healthy false (LightLLM's HEALTH_TIMEOUT).
	HealthTimeout time.Duration
	// StallTimeout and UnavailableTimeout: see availability.go
	// (--stall_timeout, --unavailable_timeout).
	StallTimeout, UnavailableTimeout time.Duration
	// DecodeIDs turns a multi-token stop sequence given as ids into the text
	// the detokenizer matches; nil refuses such stop sequences.
	DecodeIDs func(ids []int32) string
	Log       zerolog.Logger
}

// Backend implements apiserver.Backend over shm. It is safe for concurrent
// use.
type Backend struct {
	o      Options
	region *shm.Region
	epoch  uint32
	log    zerolog.Logger
	bell   shm.Bell
	roles  [3]*shm.RoleState // router, infer, detokenizer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	availMu   sync.Mutex // guards goneSince, gonePid (availability.go)
	goneSince [3]time.Time
	gonePid   [3]uint32

	mu     sync.Mutex
	groups map[uint64]*group
	// adopted are slots of earlier apiservers, for the dispatcher to free.
	adopted [][]seqSlot
}

var _ apiserver.Backend = (*Backend)(nil)

// New takes the apiserver role in o.Region and recovers the slots earlier
// apiserver processes left.
func New(o Options) (*Backend, error) {
	if o.Region == nil {
		return nil, errors.New("shmbackend: no shm region")
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 3 * time.Second
	}
	if o.UnavailableTimeout <= 0 {
		o.UnavailableTimeout = 8 * time.Second
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = 200 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Backend{o: o, region: o.Region, log: o.Log, ctx: ctx, cancel: cancel, groups: map[uint64]*group{}}
	api, err := b.region.Role(shm.RoleAPIServer)
	if err != nil {
		cancel()
		return nil, err
	}
	b.bell = b.region.Bell(api)
	for i, r := range []shm.Role{shm.RoleRouter, shm.RoleInfer, shm.RoleDetokenizer} {
		if b.roles[i], err = b.region.Role(r); err != nil {
			cancel()
			return nil, err
		}
	}
	if b.epoch, err = b.region.BeginEpoch(shm.RoleAPIServer); err != nil {
		cancel()
		return nil, err
	}
	b.recover(false)
	b.wg.Add(1)
	go b.dispatch()
	return b, nil
}

// recover aborts and frees the slots of earlier apiserver processes that
// are gone: at start (RecoverSlots) and, for a predecessor that was still
// draining then (a zero-gap restart) and has gone since, now and then from
// the dispatcher (orphans).
func (b *Backend) recover(orphans bool) {
	var rec []shm.Recovered
	if orphans {
		rec = b.region.RecoverOrphans(b.epoch)
	} else {
		rec = b.region.RecoverSlots(b.epoch)
	}
	aborted := 0
	for _, r := range rec {
		if r.Err != nil {
			b.log.Warn().Err(r.Err).Int("slot", r.Slot).Msg("torn slot aborted")
		}
		if r.Action == shm.ActionAborted || r.Action == shm.ActionAdopted {
			s, err := b.region.Slot(r.Slot)
			if err != nil {
				continue
			}
			aborted++
			b.mu.Lock()
			b.adopted = append(b.adopted, []seqSlot{{slot: s, gen: r.Gen}})
			b.mu.Unlock()
		}
	}
	if len(rec) > 0 {
		b.log.Warn().Int("slots", len(rec)).Int("aborted", aborted).Uint32("epoch", b.epoch).
			Msg("slots of a previous apiserver recovered")
		b.region.Bell(b.roles[0]).Ring()
	}
}

// Close stops the dispatcher. Slots still in use are left to the next
// apiserver's recovery.
func (b *Backend) Close() {
	b.cancel()
	b.bell.Ring()
	b.wg.Wait()
}

// Epoch is this apiserver's epoch.
func (b *Backend) Epoch() uint32 { return b.epoch }

// Superseded reports that a newer apiserver process has started on this
// region and runs (a zero-gap restart): this one should hand its clients
// over (apiserver.Options.Superseded) rather than refuse them while it
// drains.
func (b *Backend) Superseded() bool {
	rs, err := b.region.Role(shm.RoleAPIServer)
	if err != nil {
		return false
	}
	pid := rs.Pid.Load()
	return rs.Epoch.Load() != b.epoch && pid != uint32(os.Getpid()) && processAlive(pid)
}

// Ready reports whether the router and infer have started and infer has
// published the KV capacity.
func (b *Backend) Ready() bool {
	return b.roles[0].Epoch.Load() > 0 && b.roles[1].Epoch.Load() > 0 && b.region.Load().MaxTotalTokenNum.Load() > 0
}

// Healthy is LightLLM's /health rule: idle, or engine progress within
// HealthTimeout; and the model is loaded in a live infer process, so that
// a load balancer stops sending here while infer restarts and reloads it
// (requests admitted meanwhile wait for it; they are not refused).
//
// Besides, every request-path role must run and turn its loop (see
// availability.go): /health is 503 within a poll of one being killed, and
// StallTimeout after one stops progressing.
func (b *Backend) Healthy() bool {
	if !processAlive(b.roles[1].Pid.Load()) || !b.path(time.Now()).ok() {
		return false
	}
	l := b.region.Load()
	if l.Running.Load()+l.Waiting.Load() == 0 && b.inFlight() == 0 {
		return true
	}
	last := l.LastProgressUnixNano.Load()
	return last > 0 && time.Since(time.Unix(0, last)) < b.o.HealthTimeout
}

// processAlive reports whether pid names a live process. Infer stores its
// pid when it has loaded the model (shm BeginEpoch), so a dead one means
// infer is down or still loading; the supervisor reaps a dead role at once,
// so a zombie does not linger to pass for alive.
func processAlive(pid uint32) bool {
	if pid == 0 {
		return false
	}
	err := syscall.Kill(int(pid), 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (b *Backend) inFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.groups)
}

// TokenLoad is the router's token load (one dp rank).
func (b *Backend) TokenLoad() apiserver.TokenLoad {
	l := b.region.Load()
	capTok := float64(b.MaxTotalTokens())
	if capTok <= 0 {
		return apiserver.TokenLoad{CurrentLoad: []float64{0}, LogicalMaxLoad: []float64{0}, DynamicMaxLoad: []float64{0}}
	}
	used := 0.0
	if l.MaxTotalTokenNum.Load() > 0 {
		used = max(float64(l.MaxTotalTokenNum.Load()-l.FreeKVTokens.Load()-l.EvictableKVTokens.Load()), 0)
	}
	peak := float64(l.EstimatedPeak.Load()) / capTok
	return apiserver.TokenLoad{CurrentLoad: []float64{used / capTok}, LogicalMaxLoad: []float64{peak}, DynamicMaxLoad: []float64{peak}}
}

// MaxTotalTokens is the KV capacity infer published (the configured one
// before that).
func (b *Backend) MaxTotalTokens() int {
	if n := b.region.Load().MaxTotalTokenNum.Load(); n > 0 {
		return int(n)
	}
	return b.o.MaxTotalTokens
}

// Submit allocates one slot per sequence, fills and publishes them, and
// announces the group to the router on the intake ring. A full slot table
// is ErrOverloaded.
func (b *Backend) Submit(ctx context.Context, g *apiserver.Group) (*apiserver.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if g.N < 1 || g.N > apiserver.MaxBestOf || (g.Params.Embed && g.N != 1) {
		return nil, fmt.Errorf("%w: n=%d, want 1..%d (1 for an embedding)", apiserver.ErrInvalidRequest, g.N, apiserver.MaxBestOf)
	}
	var constraint []byte
	if g.Constraint != nil {
		constraint = g.Constraint.Spec.Marshal() // infer builds the logits processor from it
	}
	params, stops, err := b.slotParams(&g.Params)
	if err != nil {
		return nil, err
	}
	bias := logitBias(g.Params.LogitBias)
	allowed := allowedIDs(g.Params.AllowedTokenIDs)
	if len(allowed) > 0 && constraint != nil {
		// Both mask the row; their intersection may leave the grammar no
		// token at all, so the pair is refused rather than half-honoured.
		return nil, fmt.Errorf("%w: allowed_token_ids together with a structured-output constraint is not supported", apiserver.ErrInvalidRequest)
	}
	var budget *shm.ThinkBudget
	if tb := g.Params.ThinkingBudget; tb != nil {
		budget = &shm.ThinkBudget{Budget: uint32(tb.Budget), Open: tb.Open, Start: tb.Start, End: tb.End}
	}
	if err := b.waitAvailable(ctx); err != nil {
		return nil, err
	}
	id := b.region.Load().NextRequestID.Add(apiserver.MaxBestOf)
	seqs := make([]seqSlot, 0, g.N)
	fail := func(err error) (*apiserver.Stream, error) {
		for _, q := range seqs {
			_ = q.slot.Release(q.gen) // frees its extras too
		}
		return nil, err
	}
	for i := 0; i < g.N; i++ {
		s, gen, err := b.region.Alloc(b.epoch)
		if err != nil {
			if errors.Is(err, shm.ErrNoFreeSlot) {
				return fail(fmt.Errorf("%w: all %d request slots are in use", apiserver.ErrOverloaded, b.region.NumSlots()))
			}
			return fail(err)
		}
		seqs = append(seqs, seqSlot{slot: s, gen: gen})
		p := params
		if p.Seed = g.SeqSeed(i); p.Seed < 0 {
			// A concrete seed, so that a restarted infer resumes the same draws.
			p.Seed = rand.Int64N(math.MaxInt64)
		}
		req := shm.Request{RequestID: id + uint64(i), GroupID: id, Arrival: g.Arrival, Params: p, Prompt: g.Prompt,
			Extras: shm.Extras{StopStrings: stops, LogitBias: bias, Constraint: constraint, AllowedTokenIDs: allowed,
				ThinkBudget: budget}}
		if err := s.Fill(gen, req); err != nil {
			switch {
			case errors.Is(err, shm.ErrTooLong):
				return fail(fmt.Errorf("%w: %v", apiserver.ErrInvalidRequest, err))
			case errors.Is(err, shm.ErrExtrasFull):
				return fail(fmt.Errorf("%w: %v", apiserver.ErrOverloaded, err))
			}
			return fail(err)
		}
	}
	announce := make([]shm.SlotGen, 0, len(seqs))
	for _, q := range seqs {
		if err := q.slot.Transition(q.gen, shm.StateAllocated, shm.StateQueued); err != nil {
			return fail(err) // only this process holds Allocated slots; cannot happen
		}
		announce = append(announce, shm.SlotGen{Slot: uint32(q.slot.Index), Gen: q.gen})
	}
	// The detokenizer first: the router's admission leads to the first
	// token, and infer's ring for it makes the detokenizer take its ring.
	// Either ring is full only while its consumer is down; the consumer's
	// slot-table scan finds the queued slots when it is back.
	if err := b.region.DetokIntake().Announce(announce); err != nil {
		b.log.Warn().Err(err).Uint64("group", id).Msg("group not announced to the detokenizer")
	}
	if err := b.region.Intake().Announce(announce); err != nil {
		b.log.Warn().Err(err).Uint64("group", id).Msg("group not announced to the router")
	}

	gr := newGroup(id, seqs)
	b.mu.Lock()
	b.groups[id] = gr
	b.mu.Unlock()
	b.bell.Ring() // the dispatcher picks the group up
	return &apiserver.Stream{ID: id, Events: gr.events}, nil
}

// logitBias is the extras form of a logit_bias map: ids increasing, so
// the same request always writes the same bytes.
func logitBias(m map[int32]float32) []shm.TokenBias {
	if len(m) == 0 {
		return nil
	}
	out := make([]shm.TokenBias, 0, len(m))
	for id, v := range m {
		out = append(out, shm.TokenBias{ID: id, Bias: v})
	}
	slices.SortFunc(out, func(a, b shm.TokenBias) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// allowedIDs is the extras form of allowed_token_ids: sorted, without
// repeats (the same request always writes the same bytes).
func allowedIDs(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// slotParams maps the HTTP layer's parameters onto what a slot carries;
// what it cannot carry is refused rather than ignored.
func (b *Backend) slotParams(p *apiserver.SamplingParams) (sampler.Params, []string, error) {
	unsupported := func(what string) error {
		return fmt.Errorf("%w: %s is not supported by this server", apiserver.ErrInvalidRequest, what)
	}
	switch {
	case len(p.BannedTokenIDs) > shm.MaxBannedTokenIDs:
		return sampler.Params{}, nil, fmt.Errorf("%w: %d logit_bias ids, at most %d", apiserver.ErrInvalidRequest, len(p.BannedTokenIDs), shm.MaxBannedTokenIDs)
	case p.TopLogprobs > shm.MaxTopLogprobs:
		return sampler.Params{}, nil, fmt.Errorf("%w: %d top logprobs, at most %d", apiserver.ErrInvalidRequest, p.TopLogprobs, shm.MaxTopLogprobs)
	}
	out := p.Params
	out.TopLogprobs = max(out.TopLogprobs, 0)
	out.DecayStart = max(out.DecayStart, 0)
	out.BannedTokenIDs = slices.Clone(p.BannedTokenIDs)
	out.StopTokenIDs = nil
	if p.TopK <= 0 {
		out.TopK = -1
	}
	var stops []string
	for _, s := range p.StopSequences {
		switch {
		case s.Text != "":
			stops = append(stops, s.Text)
		case len(s.IDs) == 1:
			if len(out.StopTokenIDs) >= shm.MaxStopTokenIDs {
				return sampler.Params{}, nil, fmt.Errorf("%w: more than %d stop token ids", apiserver.ErrInvalidRequest, shm.MaxStopTokenIDs)
			}
			out.StopTokenIDs = append(out.StopTokenIDs, s.IDs[0])
		case len(s.IDs) > 1:
			if b.o.DecodeIDs == nil {
				return sampler.Params{}, nil, unsupported("a stop sequence of several token ids")
			}
			text := b.o.DecodeIDs(s.IDs)
			if text == "" {
				return sampler.Params{}, nil, fmt.Errorf("%w: stop sequence %v decodes to no text", apiserver.ErrInvalidRequest, s.IDs)
			}
			stops = append(stops, text)
		}
	}
	return out, stops, nil
}

// Abort stops group id: its slots' abort flags are set and its Events
// channel is closed; the slots are freed once the pipeline has wound them
// down.
func (b *Backend) Abort(id uint64) {
	b.mu.Lock()
	g := b.groups[id]
	b.mu.Unlock()
	if g == nil {
		return
	}
	b.abortSlots(g.seqs)
	g.stop()
	b.bell.Ring()
}

// abortSlots sets the abort flag of slots still in flight and wakes the
// router and infer.
func (b *Backend) abortSlots(seqs []seqSlot) {
	for _, q := range seqs {
		if st, gen := q.slot.Load(); gen == q.gen && (st == shm.StateQueued || st == shm.StateRunning) {
			q.slot.Abort.Store(1)
		}
	}
	b.region.Bell(b.roles[0]).Ring()
	b.region.Commands().DataBell().Ring()
}
