package shm

import (
	"errors"
	"testing"
)

// TestEmbeddingInSlot: an embedding request's vector goes through the
// logprob array and EmbedLen; none is read before it is stored, one longer
// than the array is refused, and Release clears it for the next request.
func TestEmbeddingInSlot(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, gen, err := r.Alloc(3)
	if err != nil {
		t.Fatal(err)
	}
	q := sampleRequest()
	q.Params.Embed, q.Params.MaxNewTokens, q.Params.MinNewTokens = true, 0, 0
	if err := s.Fill(gen, q); err != nil {
		t.Fatal(err)
	}
	if s.Flags.Load()&FlagEmbed == 0 || !s.Params().Embed {
		t.Fatal("FlagEmbed not stored")
	}
	if _, err := s.Embedding(); !errors.Is(err, ErrBadIndex) {
		t.Fatalf("embedding before infer stored one: %v", err)
	}
	capacity := int(r.Sizes().MaxReqTotalLen)
	if err := s.SetEmbedding(make([]float32, capacity+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("oversized embedding: %v", err)
	}
	v := []float32{0.5, -0.25, 1e-7, 3}
	if err := s.SetEmbedding(v); err != nil {
		t.Fatal(err)
	}
	got, err := s.Embedding()
	if err != nil || len(got) != len(v) {
		t.Fatalf("%v %v", got, err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Fatalf("float %d: %g, stored %g", i, got[i], v[i])
		}
	}
	if err := s.Release(gen); err != nil {
		t.Fatal(err)
	}
	if s.EmbedLen.Load() != 0 {
		t.Fatal("EmbedLen survives Release")
	}
}
