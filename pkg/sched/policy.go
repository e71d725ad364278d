package sched

import (
	"fmt"
	"math"
	"strings"
)

// Policy names accepted by NewPolicy (and --router_policy / lightllm sim --policy).
const (
	PolicyPastFuture    = "past_future"
	PolicyPastFutureEMA = "past_future_ema"
	PolicyConservative  = "conservative"
	PolicyAggressive    = "aggressive"
	PolicyOracle        = "oracle"
)

// PolicyNames lists every policy, the default first.
func PolicyNames() []string {
	return []string{PolicyPastFuture, PolicyPastFutureEMA, PolicyConservative, PolicyAggressive, PolicyOracle}
}

// Policy decides how much KV a set of requests will need at its peak, and so
// which waiting requests may join the running ones. The Scheduler owns the
// queue, the request-count and prefill-budget constraints and FCFS order; the
// policy owns the token constraint.
type Policy interface {
	Name() string
	// Begin starts one admission pass over v.Running. The returned Pass is
	// only valid until the next Begin.
	Begin(v *View) Pass
	// Observe feeds the output length of a finished (not aborted) request.
	Observe(outputLen int)
}

// Pass is one admission pass: the running set plus the candidates accepted so
// far in this step.
type Pass interface {
	// Add tries a group of candidates (one group, all or nothing). It returns
	// the estimated peak KV tokens with the group added and whether that fits
	// the policy's bound. After a rejection the pass is finished: FCFS
	// admission stops at the first request that does not fit.
	Add(group []*Request) (peak int, ok bool)
	// Peak is the estimated peak of the running set plus accepted candidates.
	Peak() int
}

// View is what a policy sees in one pass.
type View struct {
	Config  *Config
	Running []*Request
	// UsedTokens is the KV in use now (allocator used minus unreferenced
	// prompt-cache tokens).
	UsedTokens int
	// Busy is LightLLM's is_busy: UsedTokens/MaxTotalTokens >= RouterTokenRatio,
	// evaluated once per pass.
	Busy bool
	// EMA is ema_req_out_len, the running average of finished output lengths.
	EMA int
}

// PolicyOptions configures NewPolicy.
type PolicyOptions struct {
	// Seed seeds past_future's sampling (fixed seed, reproducible decisions).
	Seed       uint64
	PastFuture PastFutureOptions
	// AggressiveWatermark is the fraction of KV that aggressive keeps free
	// when admitting (vLLM's watermark); default 0.01.
	AggressiveWatermark float64
	// Oracle returns a request's true final output length. Only the oracle
	// policy uses it, and only a simulator can provide it.
	Oracle func(r *Request) int
}

// NewPolicy builds the named policy.
func NewPolicy(name string, o PolicyOptions) (Policy, error) {
	switch strings.ToLower(name) {
	case PolicyPastFuture, "":
		pf, err := newPastFuture(o.PastFuture, o.Seed)
		if err != nil {
			return nil, err
		}
		return &peakPolicy{name: PolicyPastFuture, est: pf, observe: pf.observe}, nil
	case PolicyPastFutureEMA:
		return &peakPolicy{name: PolicyPastFutureEMA, est: emaEstimator{}}, nil
	case PolicyConservative:
		return &peakPolicy{name: PolicyConservative, est: conservativeEstimator{}}, nil
	case PolicyAggressive:
		w := o.AggressiveWatermark
		if w == 0 {
			w = 0.01
		}
		if w < 0 || w >= 1 || math.IsNaN(w) {
			return nil, fmt.Errorf("%w: aggressive watermark %v not in [0,1)", ErrBadConfig, w)
		}
		return &peakPolicy{name: PolicyAggressive, est: aggressiveEstimator{watermark: w}}, nil
	case PolicyOracle:
		if o.Oracle == nil {
			return nil, fmt.Errorf("%w: %s needs the true output lengths, which only the simulator knows", ErrBadConfig, PolicyOracle)
		}
		return &peakPolicy{name: PolicyOracle, est: oracleEstimator{final: o.Oracle}}, nil
	}
	return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownPolicy, name, strings.Join(PolicyNames(), ", "))
}

// peakPolicy is a Policy built from an estimator and the shared Past-Future
// arithmetic (tuplePass), so every policy is judged by the same peak rule.
type peakPolicy struct {
	name    string
	est     estimator
	observe func(int)
	pass    tuplePass
}

func (p *peakPolicy) Name() string { return p.name }

func (p *peakPolicy) Begin(v *View) Pass {
	p.pass.begin(p.est, v)
	return &p.pass
}

func (p *peakPolicy) Observe(n int) {
	if p.observe != nil {
		p.observe(n)
	}
}

// emaEstimator is LightLLM HEAD's ChunkedPrefillReq.get_tuple_tokens.
type emaEstimator struct{}

func (emaEstimator) scenarios(*View) int { return 1 }
func (emaEstimator) limit(v *View) int   { return v.Config.MaxTotalTokens }

func (emaEstimator) tuple(v *View, r *Request, _ int) Tuple {
	return LightLLMTuple(r, v.Busy, v.EMA, v.Config)
}

// LightLLMTuple is get_tuple_tokens exactly as LightLLM HEAD computes it:
//
//	cur_max_new = max_new_tokens                                  if ignore_eos or busy
//	            = min(max_new_tokens, max(int(1.1·out), ema))     otherwise
//	a = max(input + out + 1, kv + 1)
//	b = max(0, ceil((input + out − kv)/chunk)·(max_wait + 1) + cur_max_new − out − 1) + added
func LightLLMTuple(r *Request, busy bool, ema int, c *Config) Tuple {
	out := r.OutputLen
	curMaxNew := r.MaxNewTokens
	if !r.IgnoreEOS && !busy {
		curMaxNew = min(r.MaxNewTokens, max(int(1.1*float64(out)), ema))
	}
	a := max(r.InputLen+out+1, r.KVLen+1)
	b := chunkTerm(r.InputLen+out-r.KVLen, c.ChunkedPrefillSize, c.RouterMaxWaitTokens) + curMaxNew - out - 1
	return Tuple{A: a, B: max(0, b) + c.AddedOutputLen, Group: r.GroupKey(), Input: r.InputLen}
}

// conservativeEstimator reserves input + max_new_tokens for every request
// for its whole life (TGI / early vLLM style): B = 0 makes the peak the plain
// sum of reservations.
type conservativeEstimator struct{}

func (conservativeEstimator) scenarios(*View) int { return 1 }
func (conservativeEstimator) limit(v *View) int   { return v.Config.MaxTotalTokens + 1 }

func (conservativeEstimator) tuple(_ *View, r *Request, _ int) Tuple {
	return Tuple{A: r.InputLen + r.MaxNewTokens, Group: r.GroupKey(), Input: r.InputLen}
}

// aggressiveEstimator admits while the KV in use now (plus one token for each
// decoding request's next step and the newcomers' prompts) fits under the
// watermark, ignoring growth: vLLM-like, relying on eviction when it overflows.
type aggressiveEstimator struct{ watermark float64 }

func (aggressiveEstimator) scenarios(*View) int { return 1 }

func (e aggressiveEstimator) limit(v *View) int {
	return int(float64(v.Config.MaxTotalTokens)*(1-e.watermark)) + 1
}

func (aggressiveEstimator) tuple(_ *View, r *Request, _ int) Tuple {
	return Tuple{A: max(r.InputLen+r.OutputLen, r.KVLen+1), Group: r.GroupKey(), Input: r.InputLen}
}

// oracleEstimator knows each request's true final length: the tuple is exact
// (held KV once caught up, tokens still to grow), plus the same chunked
// prefill delay term the other estimators use.
type oracleEstimator struct{ final func(*Request) int }

func (oracleEstimator) scenarios(*View) int { return 1 }
func (oracleEstimator) limit(v *View) int   { return v.Config.MaxTotalTokens }

func (e oracleEstimator) tuple(v *View, r *Request, _ int) Tuple {
	held := r.HeldTarget()
	b := max(0, e.final(r)-max(r.OutputLen, 1)) + pendingPrefillSteps(r, v.Config)
	return Tuple{A: held, B: b, Group: r.GroupKey(), Input: r.InputLen}
}

// pendingPrefillSteps is the chunk term for a request's not yet computed KV
// only: zero once it decodes.
func pendingPrefillSteps(r *Request, c *Config) int {
	rem := r.HeldTarget() - r.KVLen
	if rem <= 0 {
		return 0
	}
	return chunkTerm(rem, c.ChunkedPrefillSize, c.RouterMaxWaitTokens)
}
