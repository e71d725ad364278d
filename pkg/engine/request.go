package engine

import (
	"errors"

	"github.com/lightllm-go/lightllm/pkg/kvcache"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Errors returned (wrapped) by Add.
var (
	ErrDuplicateID     = errors.New("engine: request id already in use")
	ErrBadRequest      = errors.New("engine: invalid request")
	ErrTooLong         = errors.New("engine: request does not fit the context")
	ErrAlreadyFinished = errors.New("engine: request already finished")
)

// Request is one generation request.
type Request struct {
	ID uint64
	// Prompt holds the token ids, including BOS if wanted. Must not be empty.
	Prompt []int32
	// AlreadyGenerated resumes a request (e.g. after the infer process
	// restarted): these tokens were generated before and are re-prefilled with
	// the prompt; generation continues as if uninterrupted (max/min new tokens,
	// penalties and the seeded draws all count them).
	AlreadyGenerated []int32
	// Params.DisablePromptCache: this request neither reuses nor leaves
	// cached KV.
	Params sampler.Params
	// NewProcessor, when set, builds the request's LogitsProcessor (a
	// grammar, a logit-bias map: per-request state that shapes sampling).
	// The engine calls it in Add and replays AlreadyGenerated through
	// Accept; it drops the processor when the request is paused for lack
	// of KV and builds a fresh one, replaying every generated token, when
	// the request next samples. So a processor must be a function of its
	// construction and the tokens it accepted, nothing else — which keeps
	// the engine's invariant: same request, same tokens, whatever the
	// batch, the KV pressure or a restart.
	NewProcessor func() (LogitsProcessor, error)
}

// LogitsProcessor is a request's hook into sampling (see
// Request.NewProcessor). For each sampled token the engine calls Process on
// the token's logit row, then the sampler draws from the row (penalties,
// banned ids, temperature, top-k/top-p/min-p all apply after Process),
// then Accept with the token drawn. Replayed tokens (resume, eviction) get
// Accept only. Calls for one request are sequential; processors of
// different requests never share state.
type LogitsProcessor interface {
	// Process edits row, the vocabulary-sized logits of the request's
	// next token as the model produced them, in place: -Inf bans a
	// token (a grammar mask), adding to an entry biases it. A row left
	// all -Inf makes the sampler return token 0 with logprob -Inf, so a
	// processor that can end must leave an end token (EOS or a stop id)
	// allowed. An error ends the request with FinishError.
	Process(row []float32) error
	// Accept advances the state past tok, the request's next token. An
	// error ends the request with FinishError (the token is not
	// emitted).
	Accept(tok int32) error
}

// FinishReason says why a request ended.
type FinishReason uint8

const (
	NotFinished  FinishReason = iota
	FinishLength              // max_new_tokens or the context length reached
	FinishStop                // an EOS or stop token id was generated
	FinishAbort               // Abort was called
	FinishError               // the request's LogitsProcessor failed (Output.Err)
)

func (f FinishReason) String() string {
	switch f {
	case NotFinished:
		return ""
	case FinishLength:
		return "length"
	case FinishStop:
		return "stop"
	case FinishAbort:
		return "abort"
	case FinishError:
		return "error"
	}
	return "unknown"
}

// Output is one event of a Step: a new token of request ID, and/or its end.
// An aborted request gets one Output with Token -1 and Reason FinishAbort;
// a failed one Token -1, Reason FinishError and Err.
type Output struct {
	ID       uint64
	Token    int32
	LogProb  float32
	Finished bool
	Reason   FinishReason
	// Top are the Params.TopLogprobs most likely alternatives, best first,
	// and Rank the chosen token's rank (1 = most likely), from the very
	// row the token was drawn from (sampler.Params.Top); nil and 0 when
	// not asked for. Top is the Output's own (not reused by the next Step).
	Top  []sampler.Alt
	Rank int
	// Err says why a FinishError request failed.
	Err error
	// PromptCacheLen is the prompt tokens the request found in the prompt
	// cache at its first admission (0 with the cache off). It rides on every
	// token because a request that finishes in the step that admitted it is
	// gone before Info could be asked.
	PromptCacheLen int
	// Embedding is an embedding request's pooled vector, on its one
	// Output (Token -1, Finished, FinishStop); the Output's own.
	Embedding []float32
}

// State is where a request is in the engine.
type State uint8

const (
	StateWaiting State = iota // queued, no KV held
	StateRunning              // holds KV, prefilling or decoding
	StatePaused               // evicted for lack of KV; recomputed when room returns
)

func (s State) String() string {
	return [...]string{"waiting", "running", "paused"}[s]
}

// ReqInfo describes a live request.
type ReqInfo struct {
	State     State
	KVLen     int // tokens whose K/V are computed and held
	PromptLen int
	Generated int // tokens generated so far (including AlreadyGenerated)
	// PromptCacheLen is the prompt tokens found in the prompt cache when the
	// request was first admitted (-1 before that).
	PromptCacheLen int
	// Seed is the seed in use (drawn when Params.Seed was -1): a request
	// resumed with it and its generated tokens continues identically.
	Seed int64
}

// reqState is the engine's record of a live request.
type reqState struct {
	id        uint64
	arrival   uint64 // admission priority: lower runs first and is evicted last
	params    sampler.Params
	seed      uint64
	tokens    []int32 // prompt followed by generated tokens
	promptLen int
	maxNew    int     // MaxNewTokens clamped to the context
	eos       []int32 // the model's EOS ids unless ignore_eos
	kvLen     int     // tokens[:kvLen] have K/V in slots[:kvLen]
	slots     []int32 // len >= kvLen: slots beyond kvLen are allocated, not yet computed
	// local (windowed KV only, len == len(slots)) is the local-layer slot of
	// each position, -1 once freed; local[:localDone] are all freed or
	// the cache's (kv.go dropLocal).
	local     []int32
	localDone int
	pin       int // pinFrom, fixed at Add
	state     State
	evictions int
	// Prompt cache: slots[:shared] are the cache's, locked through node.
	node    *kvcache.Node
	shared  int
	noCache bool
	// cacheLen is the tokens matched at first admission (-1 before),
	// reported as the prompt cache hit.
	cacheLen int
	// sig[p] identifies how the K/V of position p were computed (see
	// replay.go): a cached prefix is kept only as far as it is the very K/V
	// the request's canonical run computes.
	sig []uint64
	// newProc builds proc, the request's logits processor; proc is nil
	// until built and after a pause (processor.go).
	newProc func() (LogitsProcessor, error)
	proc    LogitsProcessor
	// pooled accumulates an embedding request's hidden states (embed.go).
	pooled []float32
}

func (r *reqState) generated() []int32 { return r.tokens[r.promptLen:] }

// finishReason applies LightLLM's order: stop ids, then EOS, then length.
func (r *reqState) finishReason(tok int32) FinishReason {
	gen := len(r.tokens) - r.promptLen
	if gen >= r.params.MinNewTokens {
		for _, s := range r.params.StopTokenIDs {
			if tok == s {
				return FinishStop
			}
		}
		for _, s := range r.eos {
			if tok == s {
				return FinishStop
			}
		}
	}
	if gen >= r.maxNew {
		return FinishLength
	}
	return NotFinished
}
