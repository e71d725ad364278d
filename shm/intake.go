package shm

import (
	"fmt"
	"time"
)

// Intake is an apiserver→consumer ring of queued groups: the apiserver
// announces each group of slots it has just queued, the consumer takes the
// announcements in order. There are two, one for the router and one for
// the detokenizer (Region.Intake, Region.DetokIntake). They replaced
// ZeroMQ pushes (issue 25): apiserver → router, then the router forwarding
// each group to the detokenizer, each hop two goroutine hand-offs per
// process and a socket write; the first was 0.3 ms at one stream and 2 ms
// on average (p90 3.8 ms) at 64 streams on a two-core host, on every
// request's first token. An announcement is a few atomic stores, plus a
// ring of the router's bell, which the router already sleeps on.
//
// Like the ZeroMQ messages they replace, an announcement is a prompt
// wake-up, never the only copy: the slot itself (state Queued, its GroupID
// and Arrival) is the request, and the consumers' slot-table scans adopt a
// queued slot whose announcement never came. So the ring may lose an entry
// to a crash, and when full it refuses instead of blocking the apiserver.
//
// Several processes may produce at once (a draining apiserver beside its
// successor), so a producer claims its positions by compare-and-swap on
// the shm Tail, fills them, and publishes them last to first: the consumer
// reads in order and stops at the first unpublished entry, so it sees a
// group whole or not at all. A producer that died between its claim and its
// last store leaves a hole the consumer would wait on forever; the consumer
// steps over a hole that has stood for HoleTimeout, and over the entries of
// a group whose first entry it never saw.
//
// Each entry is Op OpQueued, the slot and its generation, and Arg =
// index<<16 | size (the entry's place in its group, the group's size).
type Intake struct {
	hdr     *RingHeader
	entries []RingEntry
	nslots  uint32
	bell    *Bell // rung by Announce; nil: none (the detokenizer's ring)

	// Consumer-local: since when the consumer has waited on a hole, and
	// the Tail it saw then; every position below that Tail has been claimed
	// for at least that long.
	holeSince time.Time
	holeTail  uint64
	// now is time.Now; tests replace it to age a hole.
	now func() time.Time
}

// HoleTimeout is how long the consumer waits for a claimed entry to be
// published before it steps over it. A live producer publishes within
// microseconds of its claim (no allocation or syscall in between), so only
// a producer killed in that window leaves a hole this old; its slots are
// adopted by the consumer's slot-table scan.
const HoleTimeout = time.Second

// maxGroup bounds a group's size in Arg's 16 bits.
const maxGroup = 1<<16 - 1

// SlotGen names one slot at one generation.
type SlotGen struct {
	Slot uint32
	Gen  uint32
}

// Announce publishes one group of queued slots and rings the consumer's
// bell, if the ring has one. It returns ErrRingFull when the consumer has
// fallen that far behind (it is down): the caller goes on, and the
// consumer finds the slots in its scan.
func (q *Intake) Announce(group []SlotGen) error {
	k := uint64(len(group))
	capN := uint64(len(q.entries))
	switch {
	case k == 0:
		return nil
	case k > maxGroup || k > capN:
		return fmt.Errorf("announce %d slots: more than a group may hold: %w", k, ErrRingFull)
	}
	for _, s := range group {
		if s.Slot >= q.nslots {
			return fmt.Errorf("announce slot %d: %w", s.Slot, ErrBadIndex)
		}
	}
	var t uint64
	for {
		t = q.hdr.Tail.Load()
		h := q.hdr.Head.Load()
		if t < h || t-h > capN {
			// Only a tampered file gets here; start again at the consumer.
			q.hdr.Tail.CompareAndSwap(t, h)
			continue
		}
		if t-h+k > capN {
			return ErrRingFull
		}
		if q.hdr.Tail.CompareAndSwap(t, t+k) {
			break
		}
	}
	for i, s := range group {
		e := &q.entries[(t+uint64(i))%capN]
		e.Op.Store(uint32(OpQueued))
		e.Slot.Store(s.Slot)
		e.Gen.Store(s.Gen)
		e.Arg.Store(uint32(i)<<16 | uint32(k))
	}
	for i := k; i > 0; i-- { // last to first: the first store makes the group visible
		q.entries[(t+i-1)%capN].Seq.Store(t + i)
	}
	if q.bell != nil {
		q.bell.Ring()
	}
	return nil
}

// IntakeStats says what Take stepped over.
type IntakeStats struct {
	Holes    int // claimed positions never published within HoleTimeout
	Orphaned int // entries of a group whose first entry was stepped over
	Corrupt  int // entries with an impossible op, slot or place
}

// Take appends every group announced since the last call to out, in
// announcement order, and returns it (the ring's one consumer calls it).
func (q *Intake) Take(out [][]SlotGen) ([][]SlotGen, IntakeStats) {
	var st IntakeStats
	capN := uint64(len(q.entries))
	// One call moves Head at most one lap: producers never claim more than
	// that ahead of it, so a longer walk means a tampered Tail (it must
	// not hold the consumer for 2^64 steps).
	for h0 := q.hdr.Head.Load(); ; {
		h := q.hdr.Head.Load()
		if h-h0 >= capN {
			return out, st
		}
		e := &q.entries[h%capN]
		if e.Seq.Load() != h+1 {
			tail := q.hdr.Tail.Load()
			if tail <= h {
				q.holeSince = time.Time{}
				return out, st // nothing claimed: empty
			}
			now := q.now()
			if q.holeSince.IsZero() || h >= q.holeTail {
				q.holeSince, q.holeTail = now, tail // a claim seen for the first time
				return out, st
			}
			if now.Sub(q.holeSince) < HoleTimeout {
				return out, st
			}
			q.hdr.Head.Store(h + 1)
			st.Holes++
			continue
		}
		arg := e.Arg.Load()
		idx, size := arg>>16, uint64(arg&maxGroup)
		if idx != 0 {
			q.hdr.Head.Store(h + 1) // the rest of a group whose head was lost
			st.Orphaned++
			continue
		}
		group, ok := q.group(h, size)
		if !ok {
			q.hdr.Head.Store(h + 1)
			st.Corrupt++
			continue
		}
		q.hdr.Head.Store(h + size)
		out = append(out, group)
	}
}

// group reads the size entries starting at position h, all published (the
// first one was, and it is published last) and consistent.
func (q *Intake) group(h, size uint64) ([]SlotGen, bool) {
	capN := uint64(len(q.entries))
	if size == 0 || size > capN {
		return nil, false
	}
	g := make([]SlotGen, size)
	for i := range size {
		e := &q.entries[(h+i)%capN]
		if e.Seq.Load() != h+i+1 || Op(e.Op.Load()) != OpQueued || e.Arg.Load() != uint32(i)<<16|uint32(size) {
			return nil, false
		}
		g[i] = SlotGen{Slot: e.Slot.Load(), Gen: e.Gen.Load()}
		if g[i].Slot >= q.nslots {
			return nil, false
		}
	}
	return g, true
}

// Pending reports whether the consumer is waiting out a hole (it then
// comes back sooner than its idle wait).
func (q *Intake) Pending() bool { return !q.holeSince.IsZero() }
