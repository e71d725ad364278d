package apiserver

import (
	"context"
	"errors"
	"time"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Backend is what the HTTP layer needs from the rest of the server: the role
// wiring (slot allocation in shm, the push to the router, reading the text
// pieces the detokenizer queues) implements it; tests use
// pkg/apiserver/fakebackend.
type Backend interface {
	// Submit admits a group of g.N sequences that share g.Prompt and
	// g.Params. ctx bounds Submit itself (e.g. waiting for a free slot);
	// once Submit has returned, the group lives until every sequence has
	// finished or Abort is called — the server calls Abort as soon as its
	// client goes away. Errors: ErrOverloaded, ErrNotReady, ErrDraining,
	// an error wrapping ErrInvalidRequest (reported as 400), or ctx.Err().
	Submit(ctx context.Context, g *Group) (*Stream, error)
	// Abort stops group id: generation stops, its slots and KV are freed
	// and its Events channel is closed (possibly after a few more events,
	// which the server no longer reads, so sends must not block forever).
	// It is idempotent and ignores unknown ids.
	Abort(id uint64)
	// Ready reports whether the model is loaded and requests can be served.
	Ready() bool
	// Healthy reports whether the engine makes progress or is idle
	// (LightLLM's /health rule: a token within HEALTH_TIMEOUT while
	// requests are in flight).
	Healthy() bool
	// TokenLoad is the router's shared token load, one entry per dp rank.
	TokenLoad() TokenLoad
	// MaxTotalTokens is the KV capacity in tokens (LightLLM's
	// shm_max_total_token_num); <= 0 when not known yet.
	MaxTotalTokens() int
}

// Errors a Backend returns from Submit.
var (
	// ErrOverloaded: the waiting queue is full (--max_waiting_reqs); 429.
	ErrOverloaded = errors.New("server overloaded")
	// ErrNotReady: the model or a role is not up (yet); 503.
	ErrNotReady = errors.New("server not ready")
	// ErrDraining: the server is stopping; 503.
	ErrDraining = errors.New("server is draining")
	// ErrInvalidRequest wraps a request the backend cannot run; 400.
	ErrInvalidRequest = errors.New("invalid request")
)

// MaxBestOf is LightLLM's MAX_BEST_OF: the most sequences one group holds
// (sub-request ids are group id + 0..7).
const MaxBestOf = 8

// Group is one admitted request: N sequences over one prompt.
type Group struct {
	// RequestID is the client's x-request-id (or one the server made up);
	// for logs and tracing only.
	RequestID string
	// Prompt is the tokenized prompt, special tokens included as asked.
	Prompt []int32
	// N is the number of sequences, 1..MaxBestOf.
	N int
	// Params are validated and normalized as LightLLM's SamplingParams.init
	// leaves them (greedy: TopK 1, Temperature 1, TopP 1).
	Params SamplingParams
	// Arrival is when the HTTP request arrived.
	Arrival time.Time
	// Constraint, when set, restricts every sequence's answer to a
	// grammar (structured output, constrained tool calls).
	Constraint *Constraint
	// Params.Embed asks for an embedding of the prompt instead of tokens
	// (N 1, MaxNewTokens 0): the one event is a token-less finish carrying
	// Event.Embedding.
}

// SeqSeed is the seed sequence i samples with: Seed+i, so that n > 1 with a
// seed gives n different completions that are each reproducible. -1 (a
// random seed) stays -1.
func (g *Group) SeqSeed(i int) int64 {
	if g.Params.Seed < 0 {
		return -1
	}
	s := g.Params.Seed + int64(i)
	if s < 0 { // wrapped past MaxInt64
		s &= 1<<63 - 1
	}
	return s
}

// SamplingParams are LightLLM's sampling parameters after validation:
// sampler.Params, the one struct that travels to the sampler (see its
// doc), plus what only the HTTP layer and the backend's translation need.
// StopSequences become sampler.Params.StopTokenIDs (single ids) and stop
// strings in the slot's extras when the backend submits the group.
type SamplingParams struct {
	sampler.Params
	// StopSequences finish a sequence with reason "stop": a token id
	// sequence is matched by infer, a string is matched on the decoded text
	// by the detokenizer (LightLLM also matches its tokenization by id).
	StopSequences []StopSequence
	// PrintEOSToken keeps the EOS token's text in the output.
	PrintEOSToken bool
	// AddSpecialTokens is how the prompt was encoded (informational).
	AddSpecialTokens bool
	// AllowedTokenIDs, when non-empty, are the only tokens sampled.
	AllowedTokenIDs []int32
	// LogitBias is OpenAI's logit_bias: token id -> a value in [-100, 100]
	// added to that token's logit before sampling (greedy included). The
	// native API's logit_bias is BannedTokenIDs instead, as LightLLM's.
	LogitBias map[int32]float32
	// ThinkingBudget, when set, is vLLM's thinking_token_budget: the
	// thinking block is closed by force once it has run Budget tokens.
	ThinkingBudget *ThinkingBudget
}

// ThinkingBudget bounds a chat request's thinking block.
type ThinkingBudget struct {
	Budget int
	// Open: the prompt left the block open, so it runs from the first
	// token; otherwise it runs only if the output begins with Start.
	Open bool
	// Start and End are the tokens of "<think>" and "</think>".
	Start, End []int32
}

// StopSequence is either token ids or a string (with its tokenization, for
// the id matcher).
type StopSequence struct {
	IDs  []int32
	Text string // "" for a pure id sequence
}

// StopStrings lists the string stop sequences.
func (p *SamplingParams) StopStrings() []string {
	var out []string
	for _, s := range p.StopSequences {
		if s.Text != "" {
			out = append(out, s.Text)
		}
	}
	return out
}

// Stream is an admitted group's output.
type Stream struct {
	// ID is the group id (LightLLM's group_request_id) that Abort takes.
	ID uint64
	// Events carries one event per generated token of every sequence, in
	// order per sequence, plus token-less finish markers; the backend closes
	// it after the last sequence finished or after Abort.
	Events <-chan Event
}

// FinishReason says why a sequence ended; "" while it runs.
type FinishReason string

// Finish reasons, named as LightLLM's get_finish_reason().
const (
	FinishNone   FinishReason = ""
	FinishStop   FinishReason = "stop"   // EOS, a stop token id sequence or a stop string
	FinishLength FinishReason = "length" // max_new_tokens
	FinishAbort  FinishReason = "abort"  // aborted by the server (not by this client)
	FinishError  FinishReason = "error"  // the backend failed
	// FinishToolCalls is what a chat choice that stopped after tool calls
	// reports (OpenAI's "tool_calls"); backends never send it.
	FinishToolCalls FinishReason = "tool_calls"
)

// Event is one generated token of one sequence, as the detokenizer queued it.
type Event struct {
	Seq int // sequence index in the group, 0..N-1
	// TokenID is the generated token; < 0 for a token-less finish marker
	// (LightLLM turns an abort into one).
	TokenID int32
	// Text is what this token adds to the decoded output; "" while a UTF-8
	// character is incomplete (it comes out with a later token).
	Text    string
	Special bool
	// Logprob of the chosen token and its rank among all tokens (1 = most
	// likely), valid when HasLogprob.
	Logprob    float32
	Rank       int
	HasLogprob bool
	// TopLogprobs are the most likely alternatives, best first, when asked.
	TopLogprobs []TokenLogprob
	// CountOutputTokens is how many tokens this sequence has generated.
	CountOutputTokens int
	// PromptCacheLen is how many prompt tokens came from the prefix cache.
	PromptCacheLen int
	// Finished marks the last event of this sequence, with Reason.
	Finished bool
	Reason   FinishReason
	// StopStr is the stop string the detokenizer matched, when that ended it.
	StopStr string
	// Err explains FinishError.
	Err string
	// Embedding is an embedding request's vector, on its finish event.
	Embedding []float32
}

// TokenLogprob is one alternative token.
type TokenLogprob struct {
	TokenID int32
	Logprob float32
}

// TokenLoad is LightLLM's shared token load, one entry per dp rank.
type TokenLoad struct {
	CurrentLoad    []float64
	LogicalMaxLoad []float64
	DynamicMaxLoad []float64
}
