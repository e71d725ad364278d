package shmbackend

import (
	"sync"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/shm"
)

// seqSlot is one sequence's slot.
type seqSlot struct {
	slot *shm.Slot
	gen  uint32
}

// group is one submitted group being read.
type group struct {
	id       uint64
	seqs     []seqSlot
	events   chan apiserver.Event
	aborted  chan struct{}
	stopOnce sync.Once
}

func newGroup(id uint64, seqs []seqSlot) *group {
	return &group{id: id, seqs: seqs, events: make(chan apiserver.Event, 64), aborted: make(chan struct{})}
}

func (g *group) stop() { g.stopOnce.Do(func() { close(g.aborted) }) }

// seqState is the reader's position in one sequence's text queue.
type seqState struct {
	next   uint32 // source index of the next token piece expected
	tokens int    // token events delivered
	done   bool
}

// serve delivers a group's pieces as events until every sequence has its
// final piece or the group is aborted, then frees its slots.
func (b *Backend) serve(g *group) {
	defer func() {
		b.mu.Lock()
		delete(b.groups, g.id)
		b.mu.Unlock()
		b.reap(g.seqs)
	}()
	defer close(g.events)
	st := make([]seqState, len(g.seqs))
	left := len(g.seqs)
	var buf []byte
	for left > 0 {
		seen := b.bell.Seq()
		for i, q := range g.seqs {
			if st[i].done {
				continue
			}
			for !st[i].done {
				p, ok, err := q.slot.PopText(buf)
				if err != nil {
					// The queue cannot be trusted: end the sequence with an error.
					b.log.Error().Err(err).Int("slot", q.slot.Index).Msg("text queue")
					b.abortSlots([]seqSlot{q})
					st[i].done = true
					left--
					if !b.send(g, apiserver.Event{Seq: i, TokenID: -1, Finished: true, Reason: apiserver.FinishError, Err: err.Error()}) {
						return
					}
					break
				}
				if !ok {
					break
				}
				buf = p.Text[:0]
				ev, keep := pieceEvent(q, &st[i], i, p)
				if !keep {
					continue
				}
				if ev.Finished {
					left--
				}
				if !b.send(g, ev) {
					return
				}
			}
		}
		if left == 0 {
			return
		}
		select {
		case <-g.aborted:
			return
		case <-b.ctx.Done():
			return
		default:
		}
		b.bell.Wait(seen, pollWait)
	}
}

// send delivers one event unless the group was aborted (its reader is gone).
func (b *Backend) send(g *group, ev apiserver.Event) bool {
	select {
	case g.events <- ev:
		return true
	case <-g.aborted:
		return false
	case <-b.ctx.Done():
		return false
	}
}

// pieceEvent turns a queued piece into an event. A piece whose source index
// was already delivered is a repeat from a restarted detokenizer and is
// dropped (keep false). A final piece past the last token is a token-less
// finish marker.
func pieceEvent(q seqSlot, st *seqState, seq int, p shm.TextPiece) (apiserver.Event, bool) {
	s := q.slot
	if p.SrcIndex < st.next {
		return apiserver.Event{}, false
	}
	ev := apiserver.Event{Seq: seq, TokenID: -1, Text: string(p.Text), Special: p.Special,
		PromptCacheLen: int(s.PromptCacheLen.Load())}
	if outs, err := s.Outputs(); err == nil && int(p.SrcIndex) < len(outs) {
		ev.TokenID = outs[p.SrcIndex]
		st.tokens++
		st.next = p.SrcIndex + 1
	}
	ev.CountOutputTokens = st.tokens
	if p.Final {
		st.done = true
		ev.Finished = true
		ev.Reason = finishReason(s)
	}
	return ev, true
}

// finishReason reads why a finished sequence ended.
func finishReason(s *shm.Slot) apiserver.FinishReason {
	if s.StopMatched.Load() != 0 {
		return apiserver.FinishStop
	}
	switch shm.FinishStatus(s.FinishStatus.Load()) {
	case shm.FinishLength:
		return apiserver.FinishLength
	case shm.FinishAborted:
		return apiserver.FinishAbort
	case shm.FinishError:
		return apiserver.FinishError
	}
	return apiserver.FinishStop
}

// reap frees slots once nothing in the pipeline uses them any more: infer
// released them (Finished or Aborted) and the detokenizer queued their last
// piece. Text still queued is discarded. Slots still in flight get their
// abort flag, so the wind-down is quick.
func (b *Backend) reap(seqs []seqSlot) {
	left := append([]seqSlot(nil), seqs...)
	var buf []byte
	aborted := false
	for len(left) > 0 {
		seen := b.bell.Seq()
		kept := left[:0]
		for _, q := range left {
			st, gen := q.slot.Load()
			if gen != q.gen || st == shm.StateFree {
				pipeline.RemoveStops(b.region.Dir(), q.slot.Index, q.gen)
				continue // freed already (by a recovery)
			}
			for {
				p, ok, err := q.slot.PopText(buf)
				if !ok || err != nil {
					break
				}
				buf = p.Text[:0]
			}
			if (st == shm.StateFinished || st == shm.StateAborted) && q.slot.DetokDone.Load() != 0 && q.slot.TextQueued() == 0 {
				if err := q.slot.Release(q.gen); err != nil {
					b.log.Warn().Err(err).Int("slot", q.slot.Index).Msg("release")
				}
				pipeline.RemoveStops(b.region.Dir(), q.slot.Index, q.gen)
				continue
			}
			kept = append(kept, q)
		}
		left = kept
		if len(left) == 0 {
			return
		}
		if !aborted {
			// Sequences the detokenizer has not finished belong to a group
			// that ended early (client gone): stop them.
			var running []seqSlot
			for _, q := range left {
				if q.slot.DetokDone.Load() == 0 {
					running = append(running, q)
				}
			}
			if len(running) > 0 {
				b.abortSlots(running)
			}
			aborted = true
		}
		if b.ctx.Err() != nil {
			return // the next apiserver's recovery frees them
		}
		b.bell.Wait(seen, pollWait)
	}
}

// Active is the number of groups being served.
func (b *Backend) Active() int { return b.inFlight() }
