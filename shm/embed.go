package shm

import "fmt"

// An embedding request (FlagEmbed) generates no token: infer pools the
// prompt's final hidden states into one vector and stores it in the slot's
// logprob array from index 0 (a request without output tokens uses none of
// it), then EmbedLen, then finishes the request; the apiserver reads it
// once the request's final text piece has arrived. The vector must fit the
// array: at most MaxReqTotalLen floats.

// SetEmbedding stores an embedding request's vector (infer), before the
// finish that publishes it.
func (s *Slot) SetEmbedding(v []float32) error {
	if len(v) == 0 || len(v) > len(s.logprobs) {
		return fmt.Errorf("slot %d: embedding of %d floats, the slot holds %d: %w", s.Index, len(v), len(s.logprobs), ErrTooLong)
	}
	copy(s.logprobs, v)
	s.EmbedLen.Store(uint32(len(v)))
	return nil
}

// Embedding copies the vector of a finished embedding request (apiserver);
// ErrBadIndex when none was stored (the request failed or was aborted).
func (s *Slot) Embedding() ([]float32, error) {
	n := s.EmbedLen.Load() // load first: the store that publishes the floats
	if n == 0 || uint64(n) > uint64(len(s.logprobs)) {
		return nil, fmt.Errorf("slot %d: no embedding (%d floats stored): %w", s.Index, n, ErrBadIndex)
	}
	return append([]float32(nil), s.logprobs[:n]...), nil
}
