package shm

import (
	"fmt"
	"math"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// Log-probabilities travel from infer to the apiserver in two places:
//
//   - every output token's own log-probability, in a float32 array parallel
//     to the token array (written before the Publish that covers the token,
//     so it is valid wherever the token is);
//   - when a request asks for alternatives (Req.TopLogprobs > 0), each
//     output token's top-N in the slot's top-logprob ring. The ring holds
//     the last TopRingEntries tokens only: the apiserver copies entries out
//     as soon as they are published, records how far it got in Req.TopRead,
//     and infer waits (briefly) rather than overwrite an entry not copied
//     yet. Keeping every token's top-20 for the whole context would cost
//     slots × max_req_total_len × 160 bytes, far more than the ring.

// TopLogprob is one alternative token and its log-probability (the
// sampler's own type, so infer stores engine.Output.Top without a copy).
type TopLogprob = sampler.Alt

// SetOutputLogprob stores output token i's log-probability (infer). Like
// SetOutput, it becomes visible to readers with the Publish that covers i.
func (s *Slot) SetOutputLogprob(i int, lp float32) error {
	idx := uint64(s.PromptLen.Load()) + uint64(i)
	if i < 0 || idx >= uint64(len(s.logprobs)) {
		return fmt.Errorf("slot %d: logprob of output %d past max_req_total_len %d: %w", s.Index, i, len(s.logprobs), ErrTooLong)
	}
	s.logprobs[idx] = lp
	return nil
}

// OutputLogprob reads the log-probability of published output token i.
func (s *Slot) OutputLogprob(i uint32) (float32, error) {
	out := s.CandetokenOutLen.Load() // load first: the release store covering the value
	p := s.PromptLen.Load()
	if i >= out || uint64(p)+uint64(i) >= uint64(len(s.logprobs)) {
		return 0, fmt.Errorf("slot %d: logprob of output %d, %d published: %w", s.Index, i, out, ErrBadIndex)
	}
	return s.logprobs[p+i], nil
}

// TopRingLen is the number of entries in the slot's top-logprob ring.
func (s *Slot) TopRingLen() int { return len(s.top) }

// TopRoom reports whether infer may write output i's top entry without
// overwriting one the apiserver has not copied yet.
func (s *Slot) TopRoom(i int) bool {
	return i >= 0 && uint64(i) < uint64(s.TopRead.Load())+uint64(len(s.top))
}

// WriteTop stores output token i's alternatives, best first, and the rank
// of the chosen token (infer), before the Publish that covers i. At most
// MaxTopLogprobs alternatives are kept.
func (s *Slot) WriteTop(gen uint32, i int, rank int, alts []TopLogprob) error {
	if len(s.top) == 0 || i < 0 || i >= math.MaxUint32-1 {
		return fmt.Errorf("slot %d: top logprobs of output %d: %w", s.Index, i, ErrBadIndex)
	}
	e := &s.top[i%len(s.top)]
	e.Index.Store(0) // readers reject the entry until it is whole again
	e.Gen.Store(gen)
	n := min(len(alts), MaxTopLogprobs)
	e.Count.Store(uint32(n))
	e.Rank.Store(uint32(max(rank, 0)))
	for j, a := range alts[:n] {
		e.Alts[j].ID.Store(a.ID)
		e.Alts[j].Logprob.Store(math.Float32bits(a.Logprob))
	}
	e.Index.Store(uint32(i) + 1)
	return nil
}

// ReadTop appends output token i's alternatives to dst[:0] and returns them
// with the chosen token's rank (apiserver). ok is false when the ring no
// longer (or not yet) holds generation gen's entry for i: the reader fell
// TopRingEntries tokens behind infer.
func (s *Slot) ReadTop(gen uint32, i uint32, dst []TopLogprob) (alts []TopLogprob, rank int, ok bool) {
	if len(s.top) == 0 || i >= math.MaxUint32-1 {
		return dst[:0], 0, false
	}
	e := &s.top[uint64(i)%uint64(len(s.top))]
	want := i + 1
	if e.Index.Load() != want || e.Gen.Load() != gen {
		return dst[:0], 0, false
	}
	n := min(e.Count.Load(), MaxTopLogprobs)
	rank = int(e.Rank.Load())
	dst = dst[:0]
	for j := range n {
		dst = append(dst, TopLogprob{ID: e.Alts[j].ID.Load(), Logprob: math.Float32frombits(e.Alts[j].Logprob.Load())})
	}
	// A writer that started meanwhile stored Index 0 (and its generation)
	// before touching the alternatives.
	if e.Index.Load() != want || e.Gen.Load() != gen {
		return dst[:0], 0, false
	}
	return dst, rank, true
}
