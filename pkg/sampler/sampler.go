package sampler

import (
	"fmt"
	"math"
)

// Sampler holds the scratch buffers for one vocabulary. Sampling is
// sequential (one request at a time) and allocation-free; a Sampler is not
// safe for concurrent use.
type Sampler struct {
	vocab   int
	probs   []float32 // unnormalised probabilities after temperature
	idx     []int32   // candidate token ids for top-k / top-p
	counts  []int32   // per-token counts for penalties; all zero between calls
	touched []int32   // tokens whose counts are non-zero
}

// Input is what one request contributes to a sampling call.
type Input struct {
	Params *Params
	// Seed is the resolved seed (Params.Seed, or one drawn for Seed == -1).
	Seed uint64
	// Prompt and Generated are the request's tokens so far; len(Generated) is
	// the index of the token being sampled, which also selects the random draw,
	// so a request resumed with its generated tokens draws exactly as before.
	Prompt, Generated []int32
	// EOS are the model's end-of-sequence ids (suppressed with the stop ids
	// while fewer than MinNewTokens-1 tokens have been generated).
	EOS []int32
	// SkipLogProb: greedy decoding need not compute the log-probability (a
	// pass of exp over the vocabulary); Result.LogProb is then 0.
	SkipLogProb bool
}

// Result is the chosen token and its log-probability after penalties and
// temperature, before top-k/top-p renormalisation (as LightLLM reports it).
type Result struct {
	Token   int32
	LogProb float32
}

// New returns a Sampler for a vocabulary of vocab tokens.
func New(vocab int) (*Sampler, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("sampler: vocabulary size %d must be > 0", vocab)
	}
	return &Sampler{
		vocab:   vocab,
		probs:   make([]float32, vocab),
		idx:     make([]int32, vocab),
		counts:  make([]int32, vocab),
		touched: make([]int32, 0, 256),
	}, nil
}

// Vocab is the vocabulary size the Sampler was built for.
func (s *Sampler) Vocab() int { return s.vocab }

// Sample picks the next token. It modifies logits in place (penalties and
// masks are applied to them). The parameters must have passed Validate.
func (s *Sampler) Sample(logits []float32, in *Input) (Result, error) {
	if len(logits) != s.vocab {
		return Result{}, fmt.Errorf("sampler: %d logits for a vocabulary of %d", len(logits), s.vocab)
	}
	p := in.Params
	if p.RepetitionPenalty != 1 || p.PresencePenalty != 0 || p.FrequencyPenalty != 0 {
		s.applyPenalties(logits, in)
	}
	if p.DecayFactor > 1 {
		decayEOS(logits, in.EOS, p.DecayFactor, len(in.Generated)-p.DecayStart)
	}
	negInf := float32(math.Inf(-1))
	if len(in.Generated)+1 < p.MinNewTokens {
		if !p.IgnoreEOS {
			s.mask(logits, in.EOS, negInf)
		}
		s.mask(logits, p.StopTokenIDs, negInf)
	}
	s.mask(logits, p.BannedTokenIDs, negInf)
	best := sanitizeArgmax(logits)
	if math.IsInf(float64(logits[best]), -1) {
		// Everything is masked: there is no distribution; fall back to id 0 like argmax.
		return Result{Token: 0, LogProb: negInf}, nil
	}
	if p.Greedy() {
		if in.SkipLogProb {
			return Result{Token: int32(best)}, nil
		}
		// log softmax at the maximum = -log(sum(exp(l - max)))
		return Result{Token: int32(best), LogProb: float32(-math.Log(expScale(s.probs, logits, logits[best], 1)))}, nil
	}
	return s.sample(logits, logits[best], in), nil
}

// applyPenalties follows LightLLM's apply_penalty kernel: for every token
// with count c > 0, l = l/rep if l > 0 else l*rep; l -= c*freq; l -= presence.
func (s *Sampler) applyPenalties(logits []float32, in *Input) {
	count := func(ids []int32) {
		for _, t := range ids {
			if t < 0 || int(t) >= s.vocab {
				continue
			}
			if s.counts[t] == 0 {
				s.touched = append(s.touched, t)
			}
			s.counts[t]++
		}
	}
	p := in.Params
	if p.InputPenalty {
		count(in.Prompt)
	}
	count(in.Generated)
	for _, t := range s.touched {
		l := logits[t]
		if l > 0 {
			l /= p.RepetitionPenalty
		} else {
			l *= p.RepetitionPenalty
		}
		l -= float32(s.counts[t]) * p.FrequencyPenalty
		l -= p.PresencePenalty
		logits[t] = l
		s.counts[t] = 0
	}
	s.touched = s.touched[:0]
}

// decayEOS is LightLLM's exponential decay length penalty on the EOS
// logits (its apply_penalty kernel, in the same order: after the
// repetition penalties, before the min_new_tokens mask): with n =
// max(past, 0) tokens past the start, l += |l| * (factor^n - 1), the power
// taken as exp2(log2(factor) * n) as the kernel does.
func decayEOS(logits []float32, eos []int32, factor float32, past int) {
	scale := float32(math.Exp2(float64(float32(math.Log2(float64(factor))))*float64(max(past, 0)))) - 1
	for _, t := range eos {
		if t >= 0 && int(t) < len(logits) {
			l := logits[t]
			// Clamped: a large factor overflows to +Inf, which would
			// leave no finite maximum for the softmax.
			logits[t] = min(l+float32(math.Abs(float64(l)))*scale, math.MaxFloat32)
		}
	}
}

func (s *Sampler) mask(logits []float32, ids []int32, v float32) {
	for _, t := range ids {
		if t >= 0 && int(t) < s.vocab {
			logits[t] = v
		}
	}
}

// sample draws from softmax(logits/T) restricted to the min-p, top-k and
// top-p set; maxL is the largest logit.
func (s *Sampler) sample(logits []float32, maxL float32, in *Input) Result {
	p := in.Params
	z := expScale(s.probs, logits, maxL, 1/p.Temperature)
	u := uniform(in.Seed, len(in.Generated))
	mass := z // of the tokens still candidates
	if p.MinP > 0 {
		// p_i / p_max = exp((l_i - maxL)/T) < min_p  <=>  l_i < maxL + T*ln(min_p).
		floor := maxL + p.Temperature*float32(math.Log(float64(p.MinP)))
		mass = 0
		for i, l := range logits {
			if l < floor {
				s.probs[i] = 0
			} else {
				mass += float64(s.probs[i])
			}
		}
	}

	k := s.vocab
	if p.TopK > 0 && p.TopK < k {
		k = p.TopK
	}
	var tok int32
	if k == s.vocab && p.TopP >= 1 {
		tok = drawAll(s.probs, u*mass)
	} else {
		idx := s.idx
		for i := range idx {
			idx[i] = int32(i)
		}
		if k < s.vocab {
			selectTop(idx, logits, k)
			idx = idx[:k]
		}
		if p.TopP < 1 {
			idx = idx[:nucleus(idx, logits, s.probs, float64(p.TopP)*mass)]
		}
		var mass float64
		for _, t := range idx {
			mass += float64(s.probs[t])
		}
		tok = drawFrom(idx, s.probs, u*mass)
	}
	return Result{Token: tok, LogProb: float32(math.Log(float64(s.probs[tok]) / z))}
}

// drawAll inverts the cumulative distribution over all tokens at target.
func drawAll(probs []float32, target float64) int32 {
	var acc float64
	last := int32(0)
	for i, q := range probs {
		if q == 0 {
			continue
		}
		acc += float64(q)
		last = int32(i)
		if acc > target {
			return last
		}
	}
	return last // rounding left target at the very end
}

// drawFrom inverts the cumulative distribution over the candidates idx.
func drawFrom(idx []int32, probs []float32, target float64) int32 {
	var acc float64
	last := idx[0]
	for _, t := range idx {
		q := probs[t]
		if q == 0 {
			continue
		}
		acc += float64(q)
		last = t
		if acc > target {
			return t
		}
	}
	return last
}

// uniform is a counter-based random number in [0, 1): the draw for token
// index step of a request depends only on (seed, step), never on what else
// was sampled before or in the same batch.
func uniform(seed uint64, step int) float64 {
	x := splitmix(seed ^ splitmix(uint64(step)+0x632be59bd9b4e019))
	return float64(x>>11) / (1 << 53)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
