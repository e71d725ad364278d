package shm

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Op is a router→infer command.
type Op uint32

// There is no abort or stop command: ending a request early has one path,
// the slot's Abort (apiserver) and StopMatched (detokenizer) flags, which
// infer polls every iteration for the requests it runs and the router for
// the ones it holds Queued (docs/locking.md).
const (
	OpNew    Op = iota + 1 // command ring: start the request in Slot (generation Gen); Arg is 0
	OpQueued               // intake ring: Slot (generation Gen) was queued; Arg is its place in its group (intake.go)
	numOps
)

var opNames = [numOps]string{"", "NEW", "QUEUED"}

func (o Op) String() string {
	if o > 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint32(o))
}

// Command is one ring entry. Seq is its position in the ring's history
// (0, 1, 2, ...), filled in by Push and Pop.
type Command struct {
	Seq  uint64
	Op   Op
	Slot uint32
	Gen  uint32
	Arg  uint32
}

// Ring is the router→infer command ring: single producer (the router),
// single consumer (infer), in order. Its head and every entry's sequence
// number live in shm, so either side can restart and resume: a restarted
// consumer continues at Head (commands are idempotent per slot generation,
// so the one it may have been handling when it died can safely run again);
// a restarted producer finds its tail by scanning for published entries.
type Ring struct {
	hdr     *RingHeader
	entries []RingEntry
	nslots  uint32
	pipes   *bellPipes // the region's, for the bells

	// Process-local: serialise goroutines of the one producer (consumer)
	// process, and the producer's tail recovered from shm.
	pmu, cmu  sync.Mutex
	tail      uint64
	tailKnown bool
}

// Cap is the number of entries.
func (q *Ring) Cap() int { return len(q.entries) }

// Len is the number of published, unconsumed commands.
func (q *Ring) Len() int {
	h := q.hdr.Head.Load()
	n := uint64(0)
	for n < uint64(len(q.entries)) && q.entries[(h+n)%uint64(len(q.entries))].Seq.Load() == h+n+1 {
		n++
	}
	return int(n)
}

// DataBell is rung by Push; infer waits on it.
func (q *Ring) DataBell() Bell {
	return Bell{seq: &q.hdr.DataSeq, waiters: &q.hdr.DataWaiters, pipes: q.pipes}
}

// SpaceBell is rung by Pop when the producer waits for room.
func (q *Ring) SpaceBell() Bell {
	return Bell{seq: &q.hdr.SpaceSeq, waiters: &q.hdr.SpaceWaiters, pipes: q.pipes}
}

// recoverTail finds the first unpublished position at or after Head. A
// producer killed between publishing an entry (its Seq) and advancing Tail
// left Tail behind; one killed while filling an entry left it unpublished,
// and it is simply overwritten.
func (q *Ring) recoverTail() uint64 {
	capN := uint64(len(q.entries))
	h := q.hdr.Head.Load()
	t := q.hdr.Tail.Load()
	if t < h || t-h > capN {
		t = h
	}
	for t-h < capN && q.entries[t%capN].Seq.Load() == t+1 {
		t++
	}
	q.hdr.Tail.Store(t)
	return t
}

// Push publishes a command (router). It returns ErrRingFull when infer has
// not consumed enough; PushWait waits instead.
func (q *Ring) Push(c Command) (uint64, error) {
	if c.Op != OpNew || c.Slot >= q.nslots {
		return 0, fmt.Errorf("push %v slot %d: %w", c.Op, c.Slot, ErrBadIndex)
	}
	q.pmu.Lock()
	defer q.pmu.Unlock()
	if !q.tailKnown {
		q.tail, q.tailKnown = q.recoverTail(), true
	}
	capN := uint64(len(q.entries))
	t := q.tail
	if h := q.hdr.Head.Load(); t-h >= capN || h > t {
		if h > t { // the consumer is ahead of what we wrote: shm was reset under us
			q.tailKnown = false
			return 0, fmt.Errorf("ring head %d past tail %d: %w", h, t, ErrCorrupt)
		}
		return 0, ErrRingFull
	}
	e := &q.entries[t%capN]
	e.Op.Store(uint32(c.Op))
	e.Slot.Store(c.Slot)
	e.Gen.Store(c.Gen)
	e.Arg.Store(c.Arg)
	e.Seq.Store(t + 1) // publish
	q.tail = t + 1
	q.hdr.Tail.Store(t + 1)
	q.DataBell().Ring()
	return t, nil
}

// PushWait is Push that waits (polling, then on the futex) while the ring is
// full.
func (q *Ring) PushWait(ctx context.Context, c Command) (uint64, error) {
	capN := uint64(len(q.entries))
	hasSpace := func() bool { return q.hdr.Tail.Load()-q.hdr.Head.Load() < capN }
	for {
		seq, err := q.Push(c)
		if !errors.Is(err, ErrRingFull) {
			return seq, err
		}
		if err := q.SpaceBell().WaitFor(ctx, hasSpace); err != nil {
			return 0, err
		}
	}
}

// Pop takes the next command (infer). ok is false when none is published.
// An entry with an impossible op or slot is consumed and reported as
// ErrCorrupt so that one bad entry cannot wedge the ring.
func (q *Ring) Pop() (c Command, ok bool, err error) {
	q.cmu.Lock()
	defer q.cmu.Unlock()
	capN := uint64(len(q.entries))
	h := q.hdr.Head.Load()
	e := &q.entries[h%capN]
	if e.Seq.Load() != h+1 {
		return Command{}, false, nil
	}
	c = Command{Seq: h, Op: Op(e.Op.Load()), Slot: e.Slot.Load(), Gen: e.Gen.Load(), Arg: e.Arg.Load()}
	q.hdr.Head.Store(h + 1)
	q.SpaceBell().Ring() // an atomic add; a syscall only if the producer sleeps
	if c.Op != OpNew || c.Slot >= q.nslots {
		return c, true, fmt.Errorf("ring entry %d: %v slot %d: %w", h, c.Op, c.Slot, ErrCorrupt)
	}
	return c, true, nil
}

// PopWait waits (polling briefly, then on the futex) for the next command.
func (q *Ring) PopWait(ctx context.Context) (Command, error) {
	for {
		c, ok, err := q.Pop()
		if ok || err != nil {
			return c, err
		}
		if err := q.DataBell().WaitFor(ctx, q.ready); err != nil {
			return Command{}, err
		}
	}
}

// ready reports whether the next entry is published.
func (q *Ring) ready() bool {
	h := q.hdr.Head.Load()
	return q.entries[h%uint64(len(q.entries))].Seq.Load() == h+1
}
