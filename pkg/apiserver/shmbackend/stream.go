package shmbackend

import (
	"fmt"
	"sync"
	"time"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/shm"
)

// One dispatcher goroutine serves every group: woken by the apiserver's
// doorbell (the detokenizer rings it after queueing text), it moves pieces
// from the slots' text queues into the groups' event channels, and frees the
// slots of groups that are over. A group whose reader is slow simply leaves
// its pieces in shm (the detokenizer then waits for room), so no send ever
// blocks and one wake-up serves all groups.

// eventBuffer is each group's event channel capacity.
const eventBuffer = 64

// seqSlot is one sequence's slot.
type seqSlot struct {
	slot *shm.Slot
	gen  uint32
}

// group is one submitted group. The dispatcher owns everything but the
// aborted channel.
type group struct {
	id       uint64
	seqs     []seqSlot
	st       []seqState
	left     int
	events   chan apiserver.Event
	aborted  chan struct{}
	stopOnce sync.Once
}

// seqState is the reader's position in one sequence's text queue.
type seqState struct {
	next   uint32 // source index of the next token piece expected
	tokens int    // token events delivered
	done   bool
	top    topCopies
}

func newGroup(id uint64, seqs []seqSlot) *group {
	return &group{id: id, seqs: seqs, st: make([]seqState, len(seqs)), left: len(seqs),
		events: make(chan apiserver.Event, eventBuffer), aborted: make(chan struct{})}
}

func (g *group) stop() { g.stopOnce.Do(func() { close(g.aborted) }) }

func (g *group) isAborted() bool {
	select {
	case <-g.aborted:
		return true
	default:
		return false
	}
}

// orphanScan is how often the dispatcher looks for slots of a predecessor
// apiserver that has gone since this one started (RecoverOrphans): a
// drained one leaves none, a killed one its streams' slots and KV.
const orphanScan = 500 * time.Millisecond

// dispatch runs until the backend closes.
func (b *Backend) dispatch() {
	defer b.wg.Done()
	var (
		reaping    [][]seqSlot
		buf        []byte
		lastStrand time.Time
		orphans    = time.Now()
	)
	for b.ctx.Err() == nil {
		seen := b.bell.Seq()
		if now := time.Now(); now.Sub(orphans) >= orphanScan {
			orphans = now
			b.recover(true)
		}
		b.mu.Lock()
		groups := make([]*group, 0, len(b.groups))
		for _, g := range b.groups {
			groups = append(groups, g)
		}
		reaping = append(reaping, b.adopted...)
		b.adopted = b.adopted[:0]
		b.mu.Unlock()
		// failStranded asks the kernel whether three processes live: not
		// on every wake-up (one per engine step under load), every
		// strandEvery; it acts after UnavailableTimeout (seconds).
		if now := time.Now(); now.Sub(lastStrand) >= strandEvery {
			lastStrand = now
			b.failStranded(now)
		}
		for _, g := range groups {
			if !g.isAborted() {
				buf = b.pump(g, buf)
			}
			if g.left == 0 || g.isAborted() {
				close(g.events)
				b.mu.Lock()
				delete(b.groups, g.id)
				b.mu.Unlock()
				reaping = append(reaping, g.seqs)
			}
		}
		kept := reaping[:0]
		for _, seqs := range reaping {
			if left := b.reap(seqs, &buf); len(left) > 0 {
				kept = append(kept, left)
			}
		}
		reaping = kept
		wait := b.dispatchWait()
		if len(reaping) > 0 {
			wait = pollWait
		}
		b.bell.Wait(seen, wait)
	}
}

// dispatchWait is the dispatcher's sleep with no slot waiting to be freed:
// the package's idleWait, shortened to a quarter of the timeouts it
// checks for so they act on time.
func (b *Backend) dispatchWait() time.Duration {
	d := idleWait
	for _, t := range []time.Duration{b.o.StallTimeout, b.o.UnavailableTimeout} {
		if t > 0 {
			d = min(d, t/4)
		}
	}
	return max(d, pollWait)
}

// pump moves g's queued pieces into its event channel while it has room.
func (b *Backend) pump(g *group, buf []byte) []byte {
	for i, q := range g.seqs {
		st := &g.st[i]
		b.copyTops(q, st)
		for !st.done && len(g.events) < cap(g.events) {
			p, ok, err := q.slot.PopText(buf)
			if err != nil {
				// The queue cannot be trusted: end the sequence with an error.
				b.log.Error().Err(err).Int("slot", q.slot.Index).Msg("text queue")
				b.abortSlots([]seqSlot{q})
				st.done = true
				g.left--
				g.events <- apiserver.Event{Seq: i, TokenID: -1, Finished: true, Reason: apiserver.FinishError, Err: err.Error()}
				break
			}
			if !ok {
				break
			}
			buf = p.Text[:0]
			// The piece's token was published before the detokenizer queued
			// it: copying again now covers it even if it was published after
			// the copy above.
			b.copyTops(q, st)
			if ev, keep := pieceEvent(q, st, i, p); keep {
				if ev.Finished {
					g.left--
				}
				g.events <- ev
			}
		}
	}
	return buf
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
		if lp, err := s.OutputLogprob(p.SrcIndex); err == nil && s.Flags.Load()&shm.FlagNoLogProb == 0 {
			ev.Logprob, ev.HasLogprob = lp, true
		}
		st.top.attach(&ev, p.SrcIndex)
	}
	ev.CountOutputTokens = st.tokens
	if p.Final {
		st.done = true
		ev.Finished = true
		ev.Reason = finishReason(s)
		if ev.Reason == apiserver.FinishError {
			// The slot has no room for infer's or the router's error text;
			// their logs carry it, under the slot's index.
			ev.Err = fmt.Sprintf("the engine ended the request with an error (slot %d; the infer and router logs name the cause)", s.Index)
		}
		if s.Flags.Load()&shm.FlagEmbed != 0 && ev.Reason != apiserver.FinishAbort && ev.Reason != apiserver.FinishError {
			// Stored by infer before the release the final piece follows.
			if v, err := s.Embedding(); err == nil {
				ev.Embedding = v
			} else {
				ev.Reason, ev.Err = apiserver.FinishError, err.Error()
			}
		}
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

// reap frees the slots nothing in the pipeline uses any more (infer
// released them and the detokenizer queued their last piece), discarding
// text still queued, and returns the others. Sequences the detokenizer has
// not finished belong to a group that ended early (its client left): their
// abort flag winds them down.
func (b *Backend) reap(seqs []seqSlot, buf *[]byte) []seqSlot {
	var left []seqSlot
	for _, q := range seqs {
		s := q.slot
		st, gen := s.Load()
		if gen != q.gen || st == shm.StateFree {
			continue // freed already
		}
		for {
			p, ok, err := s.PopText(*buf)
			if !ok || err != nil {
				break
			}
			*buf = p.Text[:0]
		}
		released := st == shm.StateFinished || st == shm.StateAborted
		// A torn slot is never decoded, so DetokDone would never come.
		if released && (s.DetokDone.Load() != 0 && s.TextQueued() == 0 || s.Validate() != nil) {
			if err := s.Release(q.gen); err != nil {
				b.log.Warn().Err(err).Int("slot", s.Index).Msg("release")
			}
			continue
		}
		if (st == shm.StateQueued || st == shm.StateRunning) && s.DetokDone.Load() == 0 && s.Abort.Load() == 0 {
			b.abortSlots([]seqSlot{q})
		}
		left = append(left, q)
	}
	return left
}

// Active is the number of groups being served.
func (b *Backend) Active() int { return b.inFlight() }
