// Package sampler turns a model's logits into the next token of one request:
// penalties, min-new-tokens suppression, temperature, top-k, top-p and a
// per-request seeded random draw, with the semantics of LightLLM's
// generic_post_process.sample (see shared/reference/lightllm-python.md §5.6).
package sampler

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidParams is wrapped by every Validate error.
var ErrInvalidParams = errors.New("invalid sampling parameters")

// Params are one request's parameters, named and ranged as LightLLM's
// SamplingParams. It is the one struct that travels from the HTTP layer
// (pkg/apiserver embeds it) through the shm slot (shm.Slot.Fill and
// Params encode it field by field) to the engine and this sampler, so
// adding a parameter is: a field here with its range in Validate, its
// parsing in pkg/apiserver, its slot field in shm (the round-trip test
// fills every field here by reflection and fails until shm carries it),
// and its use. A few fields are not sampling knobs but ride along for
// the same reason (detokenizer and engine options, marked below).
// Variable-size per-request data (stop strings, grammars, bias maps)
// does not belong here: it travels in the slot's extras (shm.Extras).
type Params struct {
	// DoSample false means greedy decoding whatever the other knobs say.
	DoSample bool
	// Temperature divides the logits; below 1e-5 (including 0) it means greedy.
	Temperature float32
	// TopK keeps the k most likely tokens; -1 keeps all. 0 is invalid.
	TopK int
	// TopP keeps the most likely tokens while the mass ranked above a token is
	// <= TopP (LightLLM's rule), in (0, 1].
	TopP float32
	// MinP drops the tokens whose probability after temperature is below
	// MinP times the most likely token's (vLLM's and llama.cpp's min_p),
	// before top-k and top-p; in [0, 1], 0 keeps all.
	MinP float32
	// RepetitionPenalty >= 1: a counted token's logit l becomes l/r if l > 0, else l*r.
	RepetitionPenalty float32
	// PresencePenalty is subtracted once from each counted token's logit;
	// negative values (OpenAI's range is [-2, 2]) favour repeats.
	PresencePenalty float32
	// FrequencyPenalty is subtracted count times from each counted token's
	// logit; negative values favour repeats.
	FrequencyPenalty float32
	// InputPenalty counts prompt tokens, not only generated ones, for the
	// three penalties (LightLLM's INPUT_PENALTY).
	InputPenalty bool
	// Seed >= 0 makes the draws reproducible; -1 means a random seed.
	Seed int64
	// MinNewTokens: the end-of-sequence and stop ids cannot be produced as one of
	// the first MinNewTokens-1 tokens. 0 and 1 both mean no suppression.
	MinNewTokens int
	// MaxNewTokens >= 1 caps the generated tokens.
	MaxNewTokens int
	// IgnoreEOS: the model's end-of-sequence ids do not finish the request
	// (StopTokenIDs still do).
	IgnoreEOS bool
	// StopTokenIDs finish the request when generated (in addition to the model's EOS ids).
	StopTokenIDs []int32
	// BannedTokenIDs are never sampled (LightLLM's logit_bias keys).
	BannedTokenIDs []int32
	// DecayStart and DecayFactor are LightLLM's exponential_decay_length_penalty
	// (start, factor): once more than DecayStart tokens are generated, each
	// EOS logit l becomes l + |l|*(factor^(generated-DecayStart) - 1), so
	// ending grows likelier the longer the output. Factor 0 or 1: off.
	DecayStart  int
	DecayFactor float32
	// TopLogprobs asks for this many most likely alternatives per output
	// token (engine.Output.Top), 0..MaxTopLogprobs.
	TopLogprobs int

	// Not sampling: carried with the parameters to the roles that use them.

	// SkipSpecialTokens and SpacesBetweenSpecialTokens are the
	// detokenizer's options.
	SkipSpecialTokens          bool
	SpacesBetweenSpecialTokens bool
	// DisablePromptCache: the request neither reuses nor leaves prompt-cache KV (engine).
	DisablePromptCache bool
	// NoLogProb: the client shows no log-probability of the drawn tokens
	// and nothing ranks by them, so a greedy draw skips computing it (an
	// exp pass over the vocabulary per token; engine). The native API
	// always reports them, and never sets it.
	NoLogProb bool
	// Embed: the request asks for an embedding of its prompt, not tokens:
	// the engine prefills it, pools its final hidden states and finishes
	// it without sampling (the sampler never sees it).
	Embed bool
}

// Limits on the id lists, as LightLLM's (LIGHTLLM_MAX_STOP_SEQUENCES and logit_bias).
const (
	MaxStopTokenIDs   = 64
	MaxBannedTokenIDs = 1024
	// MaxTopLogprobs is the most alternatives a token reports (OpenAI
	// allows 5 for completions, 20 for chat).
	MaxTopLogprobs = 20
)

// DefaultParams are LightLLM's defaults: greedy, no penalties, random seed.
func DefaultParams() Params {
	return Params{
		Temperature:       1,
		TopK:              -1,
		TopP:              1,
		RepetitionPenalty: 1,
		Seed:              -1,
		MinNewTokens:      1,
		MaxNewTokens:      16384,
	}
}

// Greedy reports whether these parameters reduce to argmax.
func (p *Params) Greedy() bool {
	return !p.DoSample || p.TopK == 1 || p.Temperature < 1e-5
}

// Validate checks every range; vocab > 0 also checks the token id lists
// against the vocabulary size (pass 0 when it is not known yet).
func (p *Params) Validate(vocab int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidParams, fmt.Sprintf(format, a...))
	}
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return bad("temperature %v must be a finite number >= 0", p.Temperature)
	case p.TopK == 0 || p.TopK < -1:
		return bad("top_k %d must be -1 (all tokens) or >= 1", p.TopK)
	case !finite(p.TopP) || p.TopP <= 0 || p.TopP > 1:
		return bad("top_p %v must be in (0, 1]", p.TopP)
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return bad("min_p %v must be in [0, 1]", p.MinP)
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty < 1:
		return bad("repetition_penalty %v must be a finite number >= 1", p.RepetitionPenalty)
	case !finite(p.PresencePenalty):
		return bad("presence_penalty %v must be a finite number", p.PresencePenalty)
	case !finite(p.FrequencyPenalty):
		return bad("frequency_penalty %v must be a finite number", p.FrequencyPenalty)
	case p.Seed < -1:
		return bad("seed %d must be >= 0, or -1 for a random seed", p.Seed)
	case p.MaxNewTokens < 1 && !(p.Embed && p.MaxNewTokens == 0): // an embedding generates nothing
		return bad("max_new_tokens %d must be >= 1", p.MaxNewTokens)
	case p.MinNewTokens < 0 || p.MinNewTokens > p.MaxNewTokens:
		return bad("min_new_tokens %d must be in [0, max_new_tokens=%d]", p.MinNewTokens, p.MaxNewTokens)
	case len(p.StopTokenIDs) > MaxStopTokenIDs:
		return bad("%d stop token ids, at most %d", len(p.StopTokenIDs), MaxStopTokenIDs)
	case len(p.BannedTokenIDs) > MaxBannedTokenIDs:
		return bad("%d banned token ids, at most %d", len(p.BannedTokenIDs), MaxBannedTokenIDs)
	case p.DecayStart < 0:
		return bad("exponential decay start %d must be >= 0", p.DecayStart)
	case !finite(p.DecayFactor) || (p.DecayFactor != 0 && p.DecayFactor < 1):
		return bad("exponential decay factor %v must be >= 1 (0: off)", p.DecayFactor)
	case p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs:
		return bad("top_logprobs %d must be in [0, %d]", p.TopLogprobs, MaxTopLogprobs)
	}
	for _, list := range []struct {
		name string
		ids  []int32
	}{{"stop_token_ids", p.StopTokenIDs}, {"banned_token_ids", p.BannedTokenIDs}} {
		for _, id := range list.ids {
			if id < 0 || (vocab > 0 && int(id) >= vocab) {
				return bad("%s: id %d out of range [0, %d)", list.name, id, vocab)
			}
		}
	}
	return nil
}
