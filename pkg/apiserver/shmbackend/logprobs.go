package shmbackend

import (
	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/shm"
)

// Top alternatives live in a short per-slot ring in shm (docs/FORMAT.md):
// the dispatcher copies every published entry out as soon as it is woken,
// whether or not the client has read the text yet, and tells infer how far
// it got (TopRead) so that infer does not overwrite entries still needed.
// The copies wait here until the token's text piece comes out.

// topCopies is one sequence's alternatives copied out of shm, by output index.
type topCopies struct {
	next   uint32 // next output index to copy
	byIdx  map[uint32]topCopy
	buf    []shm.TopLogprob
	lost   int // entries overwritten before they were copied
	warned bool
}

type topCopy struct {
	alts []apiserver.TokenLogprob
	rank int
	ok   bool
}

// copyTops copies the published top-logprob entries of one sequence.
func (b *Backend) copyTops(q seqSlot, st *seqState) {
	s, t := q.slot, &st.top
	if s.TopLogprobs.Load() == 0 {
		return
	}
	pub := s.CandetokenOutLen.Load()
	if pub <= t.next {
		return
	}
	if t.byIdx == nil {
		t.byIdx = map[uint32]topCopy{}
	}
	for i := t.next; i < pub; i++ {
		alts, rank, ok := s.ReadTop(q.gen, i, t.buf)
		t.buf = alts
		c := topCopy{rank: rank, ok: ok}
		if ok {
			c.alts = make([]apiserver.TokenLogprob, len(alts))
			for j, a := range alts {
				c.alts[j] = apiserver.TokenLogprob{TokenID: a.ID, Logprob: a.Logprob}
			}
		} else {
			t.lost++
		}
		t.byIdx[i] = c
	}
	t.next = pub
	s.TopRead.Store(pub)
	if t.lost > 0 && !t.warned {
		t.warned = true
		b.log.Warn().Int("slot", s.Index).Int("lost", t.lost).
			Msg("top logprobs overwritten before the apiserver copied them: those tokens report the chosen token only")
	}
}

// attach gives ev (output index i, token and logprob set) its alternatives.
func (t *topCopies) attach(ev *apiserver.Event, i uint32) {
	c, ok := t.byIdx[i]
	if !ok {
		return
	}
	delete(t.byIdx, i)
	if !c.ok {
		if ev.HasLogprob {
			ev.TopLogprobs = []apiserver.TokenLogprob{{TokenID: ev.TokenID, Logprob: ev.Logprob}}
		}
		return
	}
	ev.TopLogprobs, ev.Rank = c.alts, c.rank
}
