package sched

// Request is the router's view of one request. Identity and limits are set by
// the caller before Submit; the progress fields are refreshed by the caller
// (from infer's published shm state) before every Step, and only read here.
type Request struct {
	ID uint64
	// Group is LightLLM's group_req_id: the members of one n/best_of>1 group
	// share their prompt and are admitted all or nothing. Zero means the
	// request is a group of its own.
	Group        uint64
	InputLen     int
	MaxNewTokens int
	IgnoreEOS    bool
	// Embed: an embedding request (it prefills and generates nothing);
	// the router submits it with MaxNewTokens 1 and IgnoreEOS, and its
	// output length does not feed the statistics.
	Embed bool

	// OutputLen is the number of tokens generated so far (shm_cur_output_len).
	OutputLen int
	// KVLen is the number of tokens whose KV is computed (shm_cur_kv_len);
	// below InputLen+OutputLen-1 the request is still (re)prefilling in chunks.
	KVLen int

	state     reqState
	groupSize int
	aborted   bool
	// samples are past_future's sticky draws of this request's final output
	// length, one per scenario (see pastfuture.go).
	samples []int32
	// stamp marks the request as placed in a pass's list (see tuplePass).
	stamp uint64
}

type reqState uint8

const (
	stateNew reqState = iota
	stateInbox
	stateWaiting
	stateRunning
	stateDone
)

// GroupKey returns the group id used for all-or-nothing admission and prompt
// sharing.
func (r *Request) GroupKey() uint64 {
	if r.Group != 0 {
		return r.Group
	}
	return r.ID
}

// Aborted reports whether Abort was called for the request.
func (r *Request) Aborted() bool { return r.aborted }

// Running reports whether the request is admitted (holds or is building
// KV on infer) and not yet released.
func (r *Request) Running() bool { return r.state == stateRunning }

// HeldTarget is the KV the request holds once it has caught up and is ready to
// decode: the prompt and every generated token except the last, which is fed in
// the next decode step. A request that has produced nothing yet holds its
// prompt after prefill (the prefill step emits the first token).
func (r *Request) HeldTarget() int {
	return r.InputLen + max(r.OutputLen, 1) - 1
}

// Decoding reports whether the request's KV has caught up with its tokens, so
// its next step is a decode step rather than a prefill chunk.
func (r *Request) Decoding() bool { return r.KVLen >= r.HeldTarget() }

// DecodeNeedTokens is LightLLM's get_decode_need_tokens: the KV tokens the
// request needs in its next step (1 while decoding, a chunk while prefilling).
func (r *Request) DecodeNeedTokens(chunk int) int {
	return min(r.InputLen+r.OutputLen-r.KVLen, chunk)
}

// FirstRouterNeedTokens is LightLLM's get_first_router_need_tokens: the
// prefill tokens a newly admitted request adds to the router's prefill budget.
func (r *Request) FirstRouterNeedTokens(chunk int) int {
	return min(r.InputLen+r.OutputLen, chunk)
}

// chunkTerm is the chunked-prefill part of LightLLM's future length: every
// chunk still to prefill lets the other requests decode up to
// router_max_wait_tokens steps before the next one, so it delays this
// request's finish by that many steps plus its own.
func chunkTerm(remaining, chunk, maxWait int) int {
	return floorDiv(remaining+chunk-1, chunk) * (maxWait + 1)
}

// floorDiv is Python's // for a positive divisor.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}
