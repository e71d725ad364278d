// Package engine is the continuous-batching executor the infer role and the
// CLI drive: requests are added and aborted at any time, and each Step runs
// one model forward over prefill chunks of newly admitted requests plus one
// decode token of every running request, then samples.
//
// KV memory is a token-granular slot pool (pkg/kvcache). When it runs out,
// the newest running requests are paused: their KV is freed and their prompt
// plus generated tokens are recomputed once there is room again, so other
// requests never fail. Every request's tokens depend only on its own prompt
// and parameters (its random draws are keyed by seed and token index), not
// on what else shares the batch, on KV pressure or on being recomputed or
// resumed: a request is always computed in the same chunks (replay.go).
package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/kvcache"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Options configure an Engine. Zero values take the documented defaults.
type Options struct {
	// MaxTotalTokens is the KV pool size in tokens (max_total_token_num).
	// Default: min(model context, 8192).
	MaxTotalTokens int
	// BatchMaxTokens caps the prefill tokens of one step (all requests together).
	// Default: min(MaxTotalTokens, 8192).
	BatchMaxTokens int
	// ChunkedPrefillSize is the prefill tokens of one request in one step
	// (the last chunk of a prompt is shorter). Chunks are never cut to the
	// load: the model's rounding depends on them. Default: BatchMaxTokens.
	ChunkedPrefillSize int
	// MaxReqTotalLen caps prompt + generated tokens of one request
	// (max_req_total_len). Default: min(model context, MaxTotalTokens).
	MaxReqTotalLen int
	// MaxRunningReqs caps the requests holding KV at once (running_max_req_size);
	// 0 means no cap beyond KV memory.
	MaxRunningReqs int
	// PrefillWaitSteps > 0 is LightLLM's non-aggressive schedule
	// (--disable_aggressive_schedule with --router_max_wait_tokens): a step
	// computes prompt chunks only once this many steps without any have run
	// since the last one that did, or when no request has a token to decode.
	// Prompts that arrive meanwhile wait and are prefilled together, so the
	// running requests' decode is interrupted less often, at the cost of
	// their time to first token. 0 (the default, LightLLM's aggressive
	// schedule) prefills whatever has arrived at every step.
	PrefillWaitSteps int
	// PausedHeadroomSteps: a paused request is resumed only when the free KV
	// also covers this many decode steps of every running request, plus one
	// per generated token it replays (one a step), so that it is not evicted
	// again at once. Default 16.
	PausedHeadroomSteps int
	// FullWindowKV keeps the local (sliding-window) layers' K/V for every
	// position, in the global slot space, as before windowed KV: for
	// comparisons only; the output is the same either way.
	FullWindowKV bool
	// DisablePromptCache turns off the radix prompt cache
	// (--disable_dynamic_prompt_cache).
	DisablePromptCache bool
	// SkipLogProbs leaves Output.LogProb 0 for greedy requests, saving a pass
	// of exp over the vocabulary per token (the CLI and benchmarks need no
	// log-probabilities; the server reports them).
	SkipLogProbs bool
	// Embed configures embedding requests (embed.go); zero refuses them.
	Embed  EmbedOptions
	Logger zerolog.Logger
}

// Engine runs requests over one model and one KV pool. It is not safe for
// concurrent use: the owner calls Add, Abort and Step from one goroutine.
type Engine struct {
	m    Forwarder
	cfg  ModelConfig
	opts Options
	pool *kvcache.Pool
	// lpool holds the local slots of a windowed KV store (nil otherwise):
	// window is the model's LocalWindow.
	lpool   *kvcache.Pool
	window  int
	cache   *kvcache.Radix // nil when the prompt cache is off
	kv      *KV
	sampler *sampler.Sampler
	log     zerolog.Logger

	nextArrival uint64
	reqs        map[uint64]*reqState
	running     []*reqState // sorted by arrival
	waiting     []*reqState // sorted by arrival: paused requests and new ones

	// sincePrefill counts the steps run since the last one that computed a
	// prompt chunk (Options.PrefillWaitSteps); stepPrefill is whether the
	// step being planned computes one.
	sincePrefill int
	stepPrefill  bool

	// chunk is the prefill chunk of one request: ChunkedPrefillSize, at
	// most the step budget so that a whole chunk always fits a step.
	chunk int
	// slotSig[s] is the signature of the K/V held in slot s (reqState.sig).
	slotSig []uint64

	// Per-step buffers, reused so that a steady-state Step does not allocate.
	batch     Batch
	batchReqs []*reqState
	logits    [][]float32 // logits[i] for batch.Seqs[i], nil unless WantLogits
	rows      [][]float32 // vocab-sized logit rows handed out to logits
	outs      []Output
	aborted   []Output // abort events not yet returned by Step
	finished  []*reqState
	lfree     []int32 // local slots to free (dropLocal)

	stats Stats
	// fault is an internal inconsistency found outside Step (by Abort); the
	// next Step returns it.
	fault error
}

// Stats are cumulative counters and current sizes.
type Stats struct {
	Steps         uint64
	ForwardTokens uint64        // tokens sent to the model (prefill + decode)
	PrefillTokens uint64        // of which prefill (recompute included)
	DecodeTokens  uint64        // of which decode
	Evictions     uint64        // requests paused for lack of KV
	CachedTokens  uint64        // prompt tokens served from the prompt cache (at first admission)
	StepTime      time.Duration // total time in Step (Forward included)
	ForwardTime   time.Duration // of which in Forward
	Running       int
	Waiting       int // including paused
	Paused        int
	// KVUsed counts slots in use by requests (the router's used tokens);
	// KVCached the prompt cache's tokens, KVEvictable those no request uses.
	KVUsed, KVSize        int
	KVCached, KVEvictable int
	KVAllocated           int // pool slots allocated (requests' own + cached)
	// KVBytes is the memory the K/V store takes now. With a windowed store
	// the local layers' part grows to the most local slots ever held:
	// KVLocalAllocated now (requests' + KVLocalCached), KVLocalPeak at most.
	KVBytes                         int64
	KVLocalAllocated, KVLocalCached int
	KVLocalPeak                     int
	// CacheEvictedTokens counts prompt-cache tokens evicted to make room
	// for requests (lightllm_cache_evicted_tokens).
	CacheEvictedTokens uint64
}

// New builds an engine over m with a fresh KV pool.
func New(m Forwarder, opts Options) (*Engine, error) {
	cfg := m.Config()
	if cfg.Vocab <= 0 {
		return nil, fmt.Errorf("engine: model vocabulary size %d", cfg.Vocab)
	}
	ctx := cfg.MaxPos
	if ctx <= 0 {
		ctx = 1 << 30
	}
	if opts.MaxTotalTokens == 0 {
		opts.MaxTotalTokens = min(ctx, 8192)
	}
	if opts.BatchMaxTokens == 0 {
		opts.BatchMaxTokens = min(opts.MaxTotalTokens, 8192)
	}
	if opts.ChunkedPrefillSize == 0 {
		opts.ChunkedPrefillSize = opts.BatchMaxTokens
	}
	if opts.MaxReqTotalLen == 0 {
		opts.MaxReqTotalLen = min(ctx, opts.MaxTotalTokens)
	}
	if opts.PausedHeadroomSteps == 0 {
		opts.PausedHeadroomSteps = 16
	}
	switch {
	case opts.MaxTotalTokens < 1:
		return nil, fmt.Errorf("engine: max_total_tokens %d must be >= 1", opts.MaxTotalTokens)
	case opts.BatchMaxTokens < 1:
		return nil, fmt.Errorf("engine: batch_max_tokens %d must be >= 1", opts.BatchMaxTokens)
	case opts.ChunkedPrefillSize < 1:
		return nil, fmt.Errorf("engine: chunked_prefill_size %d must be >= 1", opts.ChunkedPrefillSize)
	case opts.MaxReqTotalLen < 2:
		return nil, fmt.Errorf("engine: max_req_total_len %d must be >= 2", opts.MaxReqTotalLen)
	case opts.MaxReqTotalLen > opts.MaxTotalTokens+1:
		// The last generated token never needs KV, hence the +1.
		return nil, fmt.Errorf("engine: max_req_total_len %d exceeds max_total_tokens %d + 1",
			opts.MaxReqTotalLen, opts.MaxTotalTokens)
	case opts.MaxRunningReqs < 0 || opts.PausedHeadroomSteps < 0:
		return nil, fmt.Errorf("engine: negative max_running_reqs or paused_headroom_steps")
	case opts.PrefillWaitSteps < 0:
		return nil, fmt.Errorf("engine: prefill_wait_steps %d must be >= 0", opts.PrefillWaitSteps)
	}
	pool, err := kvcache.NewPool(opts.MaxTotalTokens)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	smp, err := sampler.New(cfg.Vocab)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e := &Engine{
		m:       m,
		cfg:     cfg,
		opts:    opts,
		pool:    pool,
		sampler: smp,
		log:     opts.Logger,
		reqs:    make(map[uint64]*reqState),
		chunk:   min(opts.ChunkedPrefillSize, opts.BatchMaxTokens),
		slotSig: make([]uint64, opts.MaxTotalTokens),
	}
	if wk, ok := m.(WindowedKVer); ok && !opts.FullWindowKV && wk.LocalWindow() > 0 {
		// As many local slots as global ones: every held local slot pairs
		// with a held global slot (the same position of the same owner), so
		// the local pool is never short where the global one is not, and
		// admission need not count it (the store's memory follows use).
		if e.lpool, err = kvcache.NewCompactPool(opts.MaxTotalTokens); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		e.window = wk.LocalWindow()
		e.kv = wk.NewWindowKV(opts.MaxTotalTokens)
	} else {
		e.kv = m.NewKV(opts.MaxTotalTokens)
	}
	if !opts.DisablePromptCache {
		if e.lpool != nil {
			e.cache = kvcache.NewWindowedRadix(pool, e.lpool)
		} else {
			e.cache = kvcache.NewRadix(pool)
		}
	}
	return e, nil
}

// Options returns the effective options (defaults filled in).
func (e *Engine) Options() Options { return e.opts }

// ModelConfig returns the configuration of the model being driven.
func (e *Engine) ModelConfig() ModelConfig { return e.cfg }

// Add queues a request. It fails, without side effects, on a duplicate id,
// invalid parameters, token ids outside the vocabulary, or a request that
// cannot fit the context. MaxNewTokens is clamped to the context left.
func (e *Engine) Add(r Request) error {
	if _, dup := e.reqs[r.ID]; dup {
		return fmt.Errorf("%w: %d", ErrDuplicateID, r.ID)
	}
	if len(r.Prompt) == 0 {
		return fmt.Errorf("%w %d: empty prompt", ErrBadRequest, r.ID)
	}
	if err := r.Params.Validate(e.cfg.Vocab); err != nil {
		return fmt.Errorf("request %d: %w", r.ID, err)
	}
	for _, list := range [][]int32{r.Prompt, r.AlreadyGenerated} {
		for _, t := range list {
			if t < 0 || int(t) >= e.cfg.Vocab {
				return fmt.Errorf("%w %d: token id %d outside the vocabulary [0, %d)", ErrBadRequest, r.ID, t, e.cfg.Vocab)
			}
		}
	}
	total := len(r.Prompt) + len(r.AlreadyGenerated)
	if r.Params.Embed {
		if err := e.checkEmbed(r.ID); err != nil {
			return err
		}
		if len(r.AlreadyGenerated) > 0 || total > e.opts.MaxReqTotalLen {
			return fmt.Errorf("%w: embedding request %d has %d prompt and %d generated tokens (max_req_total_len %d)",
				ErrTooLong, r.ID, len(r.Prompt), len(r.AlreadyGenerated), e.opts.MaxReqTotalLen)
		}
	} else if total >= e.opts.MaxReqTotalLen {
		return fmt.Errorf("%w: request %d has %d tokens, max_req_total_len %d leaves no room to generate",
			ErrTooLong, r.ID, total, e.opts.MaxReqTotalLen)
	}
	rs := &reqState{
		id:        r.ID,
		params:    r.Params,
		promptLen: len(r.Prompt),
		maxNew:    min(r.Params.MaxNewTokens, e.opts.MaxReqTotalLen-len(r.Prompt)),
		state:     StateWaiting,
		noCache:   r.Params.DisablePromptCache || r.Params.Embed,
		cacheLen:  -1,
		newProc:   r.NewProcessor,
	}
	rs.pin = e.pinFrom(rs)
	rs.params.StopTokenIDs = slices.Clone(r.Params.StopTokenIDs)
	rs.params.BannedTokenIDs = slices.Clone(r.Params.BannedTokenIDs)
	if !r.Params.IgnoreEOS {
		rs.eos = e.cfg.EOS
	}
	rs.tokens = make([]int32, 0, total+min(rs.maxNew, 4096))
	rs.sig = make([]uint64, 0, cap(rs.tokens))
	rs.tokens = append(append(rs.tokens, r.Prompt...), r.AlreadyGenerated...)
	if n := len(r.AlreadyGenerated); n > 0 {
		if n >= rs.maxNew {
			return fmt.Errorf("%w: request %d already has %d of %d new tokens", ErrAlreadyFinished, r.ID, n, rs.maxNew)
		}
		// Check the last resumed token as the step that produced it would have.
		rs.tokens = rs.tokens[:total-1]
		why := rs.finishReason(r.AlreadyGenerated[n-1])
		rs.tokens = rs.tokens[:total]
		if why != NotFinished {
			return fmt.Errorf("%w: request %d ended with token %d (%s)", ErrAlreadyFinished, r.ID, r.AlreadyGenerated[n-1], why)
		}
	}
	if err := rs.buildProcessor(); err != nil {
		return fmt.Errorf("%w %d: %v", ErrBadRequest, r.ID, err)
	}
	if r.Params.Seed >= 0 {
		rs.seed = uint64(r.Params.Seed)
	} else {
		// 63 bits, so that Info's Seed can be passed back as Params.Seed on resume.
		rs.seed = rand.Uint64() >> 1
	}
	rs.arrival = e.nextArrival
	e.nextArrival++
	e.reqs[r.ID] = rs
	e.waiting = append(e.waiting, rs) // the newest arrival sorts last
	return nil
}

// Abort ends a request: its KV is freed at once and the next Step returns
// one Output{Finished, Reason: FinishAbort, Token: -1} for it. It reports
// whether the request was live.
func (e *Engine) Abort(id uint64) bool {
	r, ok := e.reqs[id]
	if !ok {
		return false
	}
	switch r.state {
	case StateRunning:
		e.running = removeReq(e.running, r)
	default:
		e.waiting = removeReq(e.waiting, r)
	}
	if err := e.release(r); err != nil && e.fault == nil {
		e.fault = err
	}
	e.aborted = append(e.aborted, Output{ID: id, Token: -1, Finished: true, Reason: FinishAbort})
	return true
}

// Info describes a live request.
func (e *Engine) Info(id uint64) (ReqInfo, bool) {
	r, ok := e.reqs[id]
	if !ok {
		return ReqInfo{}, false
	}
	return ReqInfo{State: r.state, KVLen: r.kvLen, PromptLen: r.promptLen,
		Generated: len(r.tokens) - r.promptLen, PromptCacheLen: r.cacheLen, Seed: int64(r.seed)}, true
}

// KVUsage returns the KV slots in use and the pool size. Cached prefixes
// that no request uses count as free: they are evicted on demand.
func (e *Engine) KVUsage() (used, total int) { return e.pool.Size() - e.available(), e.pool.Size() }

// HasWork reports whether a Step would do anything.
func (e *Engine) HasWork() bool {
	return len(e.running) > 0 || len(e.waiting) > 0 || len(e.aborted) > 0
}

// Stats returns the counters.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.Running, s.Waiting = len(e.running), len(e.waiting)
	for _, r := range e.waiting {
		if r.state == StatePaused {
			s.Paused++
		}
	}
	s.KVUsed, s.KVSize = e.KVUsage()
	s.KVAllocated = e.pool.UsedCount()
	if e.cache != nil {
		s.KVCached, s.KVEvictable = e.cache.TotalTokens(), e.cache.EvictableTokens()
		s.KVLocalCached = e.cache.LocalTokens()
	}
	s.KVBytes = e.kv.Bytes()
	if e.lpool != nil {
		s.KVLocalAllocated = e.lpool.UsedCount()
	}
	return s
}

// release frees a request's KV and forgets it.
func (e *Engine) release(r *reqState) error {
	delete(e.reqs, r.id)
	return e.freeKV(r, false)
}

// removeReq deletes r from a list, keeping the order.
func removeReq(list []*reqState, r *reqState) []*reqState {
	if i := slices.Index(list, r); i >= 0 {
		return slices.Delete(list, i, i+1)
	}
	return list
}

// insertByArrival inserts r keeping the list sorted by arrival.
func insertByArrival(list []*reqState, r *reqState) []*reqState {
	i, _ := slices.BinarySearchFunc(list, r.arrival, func(x *reqState, a uint64) int {
		switch {
		case x.arrival < a:
			return -1
		case x.arrival > a:
			return 1
		}
		return 0
	})
	return slices.Insert(list, i, r)
}
