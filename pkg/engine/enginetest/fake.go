// Package enginetest provides FakeModel, a test double for engine.Forwarder,
// so the engine (and the roles that drive it) can be tested without weights.
package enginetest

import (
	"errors"
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/engine"
)

// FakeModel is a deterministic stand-in for a model. Its "K/V" for a slot is
// the token, its position and a hash of the whole sequence up to it, and the
// logits of a sequence are a function of that hash alone. Attention is
// imitated by re-reading every earlier position through Seq.Slots and
// checking the hash chain, so a wrong slot, a slot overwritten by another
// request, a wrong position or a malformed batch becomes a Forward error,
// and a request's logits never depend on the rest of the batch.
type FakeModel struct {
	Vocab  int
	MaxPos int
	BOS    int32
	EOS    []int32
	// EndAfter > 0 makes EOS[0] the most likely next token whenever a sequence
	// is a multiple of EndAfter tokens long.
	EndAfter int
	// ChunkRounding makes a token's K/V depend also on its rounding class
	// (RowClass) in the chunk it was computed in (its sequence's new
	// tokens of that Forward), as a real model's rounding does, and every later token depend on the K/V
	// actually found in the slots, so K/V cached by another request or
	// computed in other chunks changes the logits instead of failing. The
	// references Logits and Greedy do not apply then: compare runs.
	ChunkRounding bool
	// OnForward, when set, sees every batch before it runs.
	OnForward func(b *engine.Batch)
	// FailAt > 0 makes the FailAt-th Forward call fail (once).
	FailAt int
	// Calls counts Forward calls.
	Calls int

	tok   []int32
	pos   []int32
	hash  []uint64
	used  []bool
	stamp []int // Calls value of the batch that last wrote each slot
}

// FakeTile is the fake's stand-in for pkg/model's tiled-attention
// threshold: chunks of 1, of 2..FakeTile-1 and of FakeTile or more tokens
// round differently under ChunkRounding.
const FakeTile = 8

// RowClass is the fake's rounding class of row i of a chunk of n tokens
// (engine.RowClasser), shaped like pkg/model's with q4_K weights: the
// length class, and in a chunk of two or more whether the row is among the
// last n%4 (llama.cpp's q4_K gemm takes rows in fours, the rest its gemv).
func (f *FakeModel) RowClass(n, i int) int {
	c := 3
	switch {
	case n <= 1:
		return 1
	case n < FakeTile:
		c = 2
	}
	if i >= n-n%4 {
		c += 2
	}
	return c
}

// ErrFakeKV reports an inconsistency the fake detected in the KV it was given.
var ErrFakeKV = errors.New("fake model: inconsistent KV")

// NewFakeModel returns a fake with a vocabulary of vocab tokens, context
// maxPos, BOS 1 and EOS 2.
func NewFakeModel(vocab, maxPos int) *FakeModel {
	return &FakeModel{Vocab: vocab, MaxPos: maxPos, BOS: 1, EOS: []int32{2}}
}

// Config implements engine.Forwarder.
func (f *FakeModel) Config() engine.ModelConfig {
	return engine.ModelConfig{Vocab: f.Vocab, MaxPos: f.MaxPos, BOS: f.BOS, EOS: f.EOS}
}

// NewKV implements engine.Forwarder. The fake keeps its KV itself (one engine per fake).
func (f *FakeModel) NewKV(slots int) *engine.KV {
	f.tok = make([]int32, slots)
	f.pos = make([]int32, slots)
	f.hash = make([]uint64, slots)
	f.used = make([]bool, slots)
	f.stamp = make([]int, slots)
	return nil
}

// Forward implements engine.Forwarder.
func (f *FakeModel) Forward(b *engine.Batch, _ *engine.KV, logits [][]float32) error {
	f.Calls++
	if f.OnForward != nil {
		f.OnForward(b)
	}
	if f.FailAt > 0 && f.Calls == f.FailAt {
		return errors.New("fake model: injected failure")
	}
	if len(b.Positions) != len(b.Tokens) {
		return fmt.Errorf("fake model: %d positions for %d tokens", len(b.Positions), len(b.Tokens))
	}
	if len(logits) < len(b.Seqs) {
		return fmt.Errorf("fake model: %d logit rows for %d sequences", len(logits), len(b.Seqs))
	}
	next := 0
	for i, s := range b.Seqs {
		if s.Start != next || s.Len < 1 || s.Start+s.Len > len(b.Tokens) {
			return fmt.Errorf("fake model: seq %d covers [%d,%d) of %d tokens, expected to start at %d",
				i, s.Start, s.Start+s.Len, len(b.Tokens), next)
		}
		next = s.Start + s.Len
		first := len(s.Slots) - s.Len
		if first < 0 || len(s.Slots) > f.MaxPos && f.MaxPos > 0 {
			return fmt.Errorf("fake model: seq %d has %d slots for %d new tokens (context %d)", i, len(s.Slots), s.Len, f.MaxPos)
		}
		for j := range s.Slots {
			if s.Slots[j] < 0 || int(s.Slots[j]) >= len(f.tok) {
				return fmt.Errorf("fake model: seq %d slot %d out of range", i, s.Slots[j])
			}
		}
		// "Attention": the cached prefix must be exactly this sequence's
		// chain (with ChunkRounding: its tokens, folded into prev).
		prev := uint64(0)
		for p := 0; p < first; p++ {
			sl := s.Slots[p]
			if !f.used[sl] || f.pos[sl] != int32(p) || !f.ChunkRounding && f.hash[sl] != mix(prev, f.tok[sl], p) {
				return fmt.Errorf("%w: seq %d position %d (slot %d) does not hold this sequence's K/V", ErrFakeKV, i, p, sl)
			}
			prev = f.next(prev, f.hash[sl], p)
		}
		for j := 0; j < s.Len; j++ {
			p := first + j
			t, sl := b.Tokens[s.Start+j], s.Slots[p]
			if b.Positions[s.Start+j] != int32(p) {
				return fmt.Errorf("fake model: seq %d token %d at position %d, slots say %d", i, j, b.Positions[s.Start+j], p)
			}
			if t < 0 || int(t) >= f.Vocab {
				return fmt.Errorf("fake model: token %d outside the vocabulary", t)
			}
			if f.stamp[sl] == f.Calls {
				return fmt.Errorf("%w: slot %d written twice in one batch", ErrFakeKV, sl)
			}
			f.tok[sl], f.pos[sl], f.used[sl], f.stamp[sl] = t, int32(p), true, f.Calls
			f.hash[sl] = mix(prev, t, p)
			if f.ChunkRounding {
				f.hash[sl] = mix(f.hash[sl], int32(f.RowClass(s.Len, j)), -2)
			}
			prev = f.next(prev, f.hash[sl], p)
		}
		if s.WantLogits {
			if len(logits[i]) != f.Vocab {
				return fmt.Errorf("fake model: logit row %d has %d entries, vocab %d", i, len(logits[i]), f.Vocab)
			}
			f.fill(logits[i], prev, len(s.Slots))
		}
	}
	if next != len(b.Tokens) {
		return fmt.Errorf("fake model: sequences cover %d of %d tokens", next, len(b.Tokens))
	}
	return nil
}

// next is the state after position p whose K/V are kv: the chain hash
// itself, or with ChunkRounding a fold of every position's K/V.
func (f *FakeModel) next(prev, kv uint64, p int) uint64 {
	if !f.ChunkRounding {
		return kv
	}
	return mix(prev^kv, 0, -1-p)
}

// fill writes pseudo-random logits in [-4, 4) determined by the sequence hash.
func (f *FakeModel) fill(row []float32, h uint64, seqLen int) {
	for v := range row {
		x := mix(h, int32(v), -1)
		row[v] = float32(x>>40)/float32(1<<24)*8 - 4
	}
	for _, e := range f.EOS {
		if e >= 0 && int(e) < len(row) {
			row[e] = -8 // EOS only when asked for
		}
	}
	if f.EndAfter > 0 && len(f.EOS) > 0 && seqLen%f.EndAfter == 0 {
		row[f.EOS[0]] = 8
	}
}

// Logits returns what the fake computes for a sequence of tokens, without
// any KV: the reference a test compares the engine's results with.
func (f *FakeModel) Logits(tokens []int32) []float32 {
	var h uint64
	for p, t := range tokens {
		h = mix(h, t, p)
	}
	row := make([]float32, f.Vocab)
	f.fill(row, h, len(tokens))
	return row
}

// Greedy returns the n tokens greedy decoding produces after prompt,
// stopping early at an EOS id.
func (f *FakeModel) Greedy(prompt []int32, n int) []int32 {
	seq := append([]int32(nil), prompt...)
	var out []int32
	for len(out) < n {
		row := f.Logits(seq)
		best := 0
		for v := range row {
			if row[v] > row[best] {
				best = v
			}
		}
		out = append(out, int32(best))
		seq = append(seq, int32(best))
		if isEOS(f.EOS, int32(best)) {
			break
		}
	}
	return out
}

func isEOS(eos []int32, t int32) bool {
	for _, e := range eos {
		if e == t {
			return true
		}
	}
	return false
}

func mix(prev uint64, tok int32, pos int) uint64 {
	x := prev*0x9e3779b97f4a7c15 ^ uint64(uint32(tok)) ^ uint64(uint32(pos))<<32
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

var _ engine.Forwarder = (*FakeModel)(nil)
