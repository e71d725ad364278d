package shm

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// A request's parameters (sampler.Params) are stored in its slot field by
// field: Fill writes them, Params reads them back, and the slot fields are
// in layout.go. TestParamsRoundTrip fills every field of sampler.Params by
// reflection, so a parameter added there fails until it is carried here.

// Fill writes a request into a slot that this apiserver holds in state
// Allocated. Prompt plus MaxNewTokens must fit in MaxReqTotalLen: clamp
// max_new_tokens before (LightLLM's _check_and_repair_length). Values the
// slot cannot hold are ErrTooLong; extras that do not fit the pool's free
// space now are ErrExtrasFull. A failed Fill leaves the slot to Release,
// which frees whatever it stored.
func (s *Slot) Fill(gen uint32, q Request) error {
	if err := s.Check(gen, StateAllocated); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	p := &q.Params
	capTok := uint64(len(s.tokens))
	tooLong := func(format string, a ...any) error {
		return fmt.Errorf("slot %d: %s: %w", s.Index, fmt.Sprintf(format, a...), ErrTooLong)
	}
	switch {
	case len(q.Prompt) == 0:
		return tooLong("empty prompt")
	case p.MaxNewTokens < 0 || uint64(len(q.Prompt))+uint64(p.MaxNewTokens) > capTok:
		return tooLong("prompt %d + max_new_tokens %d > max_req_total_len %d", len(q.Prompt), p.MaxNewTokens, capTok)
	case p.MinNewTokens < 0 || p.MinNewTokens > math.MaxInt32 || p.DecayStart < 0 || p.DecayStart > math.MaxInt32:
		return tooLong("min_new_tokens %d or decay start %d out of range", p.MinNewTokens, p.DecayStart)
	case p.TopK < math.MinInt32 || p.TopK > math.MaxInt32:
		return tooLong("top_k %d out of range", p.TopK)
	case len(p.StopTokenIDs) > MaxStopTokenIDs:
		return tooLong("%d stop token ids, at most %d", len(p.StopTokenIDs), MaxStopTokenIDs)
	case len(p.BannedTokenIDs) > MaxBannedTokenIDs:
		return tooLong("%d banned token ids, at most %d", len(p.BannedTokenIDs), MaxBannedTokenIDs)
	case p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs:
		return tooLong("%d top logprobs, at most %d", p.TopLogprobs, MaxTopLogprobs)
	}
	if err := s.putExtras(&q.Extras); err != nil {
		return err
	}
	copy(s.tokens, q.Prompt)
	s.RequestID.Store(q.RequestID)
	s.GroupID.Store(q.GroupID)
	s.ArrivalUnixNano.Store(q.Arrival.UnixNano())
	s.Seed.Store(p.Seed)
	s.PromptLen.Store(uint32(len(q.Prompt)))
	s.MaxNewTokens.Store(uint32(p.MaxNewTokens))
	s.MinNewTokens.Store(uint32(p.MinNewTokens))
	s.TopK.Store(int32(p.TopK))
	s.Temperature.Store(math.Float32bits(p.Temperature))
	s.TopP.Store(math.Float32bits(p.TopP))
	s.MinP.Store(math.Float32bits(p.MinP))
	s.RepetitionPenalty.Store(math.Float32bits(p.RepetitionPenalty))
	s.PresencePenalty.Store(math.Float32bits(p.PresencePenalty))
	s.FrequencyPenalty.Store(math.Float32bits(p.FrequencyPenalty))
	var f uint32
	for _, b := range flagBits(p) {
		if *b.on {
			f |= b.bit
		}
	}
	s.Flags.Store(f)
	for i, id := range p.StopTokenIDs {
		s.StopTokenIDs[i].Store(id)
	}
	s.NumStopTokenIDs.Store(uint32(len(p.StopTokenIDs)))
	for i, id := range p.BannedTokenIDs {
		s.BannedTokenIDs[i].Store(id)
	}
	s.NumBannedTokenIDs.Store(uint32(len(p.BannedTokenIDs)))
	s.DecayStart.Store(uint32(p.DecayStart))
	s.DecayFactor.Store(math.Float32bits(p.DecayFactor))
	s.TopLogprobs.Store(uint32(p.TopLogprobs))
	return nil
}

// flagBits pairs each boolean parameter with its Req.Flags bit, for Fill
// and Params alike.
func flagBits(p *sampler.Params) []struct {
	on  *bool
	bit uint32
} {
	return []struct {
		on  *bool
		bit uint32
	}{{&p.IgnoreEOS, FlagIgnoreEOS}, {&p.DoSample, FlagDoSample}, {&p.SkipSpecialTokens, FlagSkipSpecialTokens},
		{&p.SpacesBetweenSpecialTokens, FlagSpacesBetweenSpecialTokens}, {&p.InputPenalty, FlagInputPenalty},
		{&p.DisablePromptCache, FlagDisablePromptCache}, {&p.NoLogProb, FlagNoLogProb}, {&p.Embed, FlagEmbed}}
}

// Params reads the parameters back, as Fill stored them.
func (s *Slot) Params() sampler.Params {
	p := sampler.Params{
		Temperature:       math.Float32frombits(s.Temperature.Load()),
		TopP:              math.Float32frombits(s.TopP.Load()),
		MinP:              math.Float32frombits(s.MinP.Load()),
		TopK:              int(s.TopK.Load()),
		RepetitionPenalty: math.Float32frombits(s.RepetitionPenalty.Load()),
		PresencePenalty:   math.Float32frombits(s.PresencePenalty.Load()),
		FrequencyPenalty:  math.Float32frombits(s.FrequencyPenalty.Load()),
		Seed:              s.Seed.Load(),
		MinNewTokens:      int(s.MinNewTokens.Load()),
		MaxNewTokens:      int(s.MaxNewTokens.Load()),
		TopLogprobs:       int(min(s.TopLogprobs.Load(), MaxTopLogprobs)),
		DecayStart:        int(s.DecayStart.Load()),
		DecayFactor:       math.Float32frombits(s.DecayFactor.Load()),
	}
	f := s.Flags.Load()
	for _, b := range flagBits(&p) {
		*b.on = f&b.bit != 0
	}
	if n := min(s.NumStopTokenIDs.Load(), MaxStopTokenIDs); n > 0 {
		p.StopTokenIDs = make([]int32, n)
		for i := range p.StopTokenIDs {
			p.StopTokenIDs[i] = s.StopTokenIDs[i].Load()
		}
	}
	if n := min(s.NumBannedTokenIDs.Load(), MaxBannedTokenIDs); n > 0 {
		p.BannedTokenIDs = make([]int32, n)
		for i := range p.BannedTokenIDs {
			p.BannedTokenIDs[i] = s.BannedTokenIDs[i].Load()
		}
	}
	return p
}
