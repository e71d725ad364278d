package shm

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// testGroup is group number n of producer p: size 1 + n%3, slots n%slots
// onward, each Gen carrying (p, n, place) so the consumer can check that a
// group arrived whole and in its producer's order.
func testGroup(p, n, slots int) []SlotGen {
	g := make([]SlotGen, 1+n%3)
	for i := range g {
		g[i] = SlotGen{Slot: uint32((n + i) % slots), Gen: uint32(p)<<24 | uint32(n)<<4 | uint32(i)}
	}
	return g
}

// TestIntakeGroupsInOrder: each ring hands its groups over whole and in
// order, rings its own consumer's bell only (the router's) or none (the
// detokenizer's), and shows nothing announced on the other ring.
func TestIntakeGroupsInOrder(t *testing.T) {
	for _, c := range []struct {
		name      string
		ring      func(*Region) *Intake
		other     func(*Region) *Intake
		rings     []Role // the bells Announce rings
		silentFor []Role
	}{
		{"router", (*Region).Intake, (*Region).DetokIntake, []Role{RoleRouter}, []Role{RoleDetokenizer, RoleInfer}},
		{"detokenizer", (*Region).DetokIntake, (*Region).Intake, nil, []Role{RoleRouter, RoleDetokenizer, RoleInfer}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegion(t, smallSizes) // 8 entries, 4 slots
			q, other := c.ring(r), c.other(r)
			bell := func(role Role) Bell { rs, _ := r.Role(role); return r.Bell(rs) }
			n := 0
			// Many laps with one to three groups in flight cross the end of
			// the array in every position.
			for lap := range 60 {
				var want [][]SlotGen
				for range 1 + lap%3 {
					g := testGroup(0, n, 4)
					n++
					seen := map[Role]uint32{}
					for _, role := range append(slices.Clone(c.rings), c.silentFor...) {
						seen[role] = bell(role).Seq()
					}
					if err := q.Announce(g); err != nil {
						t.Fatalf("lap %d: announce %v: %v", lap, g, err)
					}
					for _, role := range c.rings {
						if bell(role).Seq() == seen[role] {
							t.Fatalf("Announce did not ring %v's bell", role)
						}
					}
					for _, role := range c.silentFor {
						if bell(role).Seq() != seen[role] {
							t.Fatalf("Announce rang %v's bell", role)
						}
					}
					want = append(want, g)
				}
				if got, _ := other.Take(nil); len(got) != 0 {
					t.Fatalf("lap %d: the other ring took %v", lap, got)
				}
				got, st := q.Take(nil)
				if !slices.EqualFunc(got, want, slices.Equal) || st != (IntakeStats{}) {
					t.Fatalf("lap %d: took %v %+v, want %v", lap, got, st, want)
				}
				if got, _ := q.Take(nil); len(got) != 0 || q.Pending() {
					t.Fatalf("lap %d: second take %v pending %v", lap, got, q.Pending())
				}
			}
		})
	}
}

func TestIntakeRefuses(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Intake()
	for _, c := range []struct {
		name  string
		group []SlotGen
		want  error
	}{
		{"slot out of range", []SlotGen{{Slot: 0}, {Slot: 4}}, ErrBadIndex},
		{"larger than the ring", make([]SlotGen, 9), ErrRingFull},
	} {
		if err := q.Announce(c.group); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := q.Announce(nil); err != nil {
		t.Errorf("empty group: %v", err)
	}
	for i := range 4 {
		if err := q.Announce([]SlotGen{{Slot: uint32(i)}, {Slot: uint32(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Announce([]SlotGen{{Slot: 0}}); !errors.Is(err, ErrRingFull) {
		t.Fatalf("announce into a full ring: %v", err)
	}
	if got, _ := q.Take(nil); len(got) != 4 {
		t.Fatalf("took %d groups, want 4", len(got))
	}
	if err := q.Announce([]SlotGen{{Slot: 0}}); err != nil {
		t.Fatalf("announce after the router caught up: %v", err)
	}
}

// claim plays a producer that claimed k positions, filled them as Announce
// does and published only those in publish (places in the group), then died.
func claim(q *Intake, group []SlotGen, publish ...int) {
	capN := uint64(len(q.entries))
	t := q.hdr.Tail.Add(uint64(len(group))) - uint64(len(group))
	for i, s := range group {
		e := &q.entries[(t+uint64(i))%capN]
		e.Op.Store(uint32(OpQueued))
		e.Slot.Store(s.Slot)
		e.Gen.Store(s.Gen)
		e.Arg.Store(uint32(i)<<16 | uint32(len(group)))
	}
	for _, i := range publish {
		q.entries[(t+uint64(i))%capN].Seq.Store(t + uint64(i) + 1)
	}
}

// TestIntakeDeadProducer: a producer killed between its claim and its last
// store leaves a hole; the consumer waits HoleTimeout for it, never hands
// out part of a group, and then steps over the hole and the group's rest.
func TestIntakeDeadProducer(t *testing.T) {
	for _, c := range []struct {
		name      string
		size      int
		published []int // places published before the death (Announce goes last to first)
		want      IntakeStats
	}{
		{"nothing published", 2, nil, IntakeStats{Holes: 2}},
		{"all but the first", 3, []int{2, 1}, IntakeStats{Holes: 1, Orphaned: 2}},
		{"the last only", 3, []int{2}, IntakeStats{Holes: 2, Orphaned: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegion(t, smallSizes)
			q := r.Intake()
			clock := time.Unix(1000, 0)
			q.now = func() time.Time { return clock }
			before := testGroup(1, 0, 4)
			if err := q.Announce(before); err != nil {
				t.Fatal(err)
			}
			claim(q, testGroup(2, c.size-1, 4), c.published...)
			after := testGroup(3, 1, 4)
			if err := q.Announce(after); err != nil {
				t.Fatal(err)
			}
			got, st := q.Take(nil)
			if !slices.EqualFunc(got, [][]SlotGen{before}, slices.Equal) || st != (IntakeStats{}) || !q.Pending() {
				t.Fatalf("first take %v %+v pending %v: want only the group before the hole, pending", got, st, q.Pending())
			}
			var total IntakeStats
			// Every position of the dead claim has stood unpublished
			// since the first take: one timeout steps over all of them.
			for step, want := range [][][]SlotGen{nil, {after}} {
				clock = clock.Add(HoleTimeout / 2)
				got, st = q.Take(nil)
				total.Holes += st.Holes
				total.Orphaned += st.Orphaned
				total.Corrupt += st.Corrupt
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("take at +%v: %v, want %v", HoleTimeout/2*time.Duration(step+1), got, want)
				}
			}
			if total != c.want || q.Pending() {
				t.Errorf("stepped over %+v (pending %v), want %+v", total, q.Pending(), c.want)
			}
			if err := q.Announce(before); err != nil {
				t.Fatal(err)
			}
			if got, _ := q.Take(nil); !slices.EqualFunc(got, [][]SlotGen{before}, slices.Equal) {
				t.Fatalf("after the hole: %v", got)
			}
		})
	}
}

func TestIntakeCorruptEntry(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	q := r.Intake()
	if err := q.Announce(testGroup(0, 2, 4)); err != nil { // three entries
		t.Fatal(err)
	}
	q.entries[1].Arg.Store(7) // no longer the second of three
	ok := testGroup(0, 3, 4)
	if err := q.Announce(ok); err != nil {
		t.Fatal(err)
	}
	got, st := q.Take(nil)
	// The group's head is refused (its second entry does not match it), the
	// altered entry too (first of seven that are not there), and the third
	// is stepped over as the rest of a group that did not arrive.
	if want := (IntakeStats{Corrupt: 2, Orphaned: 1}); !slices.EqualFunc(got, [][]SlotGen{ok}, slices.Equal) || st != want {
		t.Fatalf("took %v %+v", got, st)
	}
}

// TestIntakeConcurrentProducers: groups announced from several goroutines
// and another process at once all arrive, each whole and in its producer's
// order (go test -race covers the in-process side).
func TestIntakeConcurrentProducers(t *testing.T) {
	r := newTestRegion(t, Sizes{Slots: 4, MaxReqTotalLen: 64, TextQueueBytes: 128, RingEntries: 16})
	q := r.Intake()
	const producers, perProducer = 3, 300
	child := startChild(t, "announcer", r.Path(), perProducer) // producer number producers
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perProducer {
				if err := announceRetry(q, testGroup(p, n, 4), 10*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	rs, _ := r.Role(RoleRouter)
	bell := r.Bell(rs) // what Announce rings
	next := make([]int, producers+1)
	var got [][]SlotGen
	for deadline := time.Now().Add(20 * time.Second); slices.Min(next) < perProducer; {
		if time.Now().After(deadline) {
			t.Fatalf("took %v of %d groups per producer", next, perProducer)
		}
		seen := bell.Seq()
		var st IntakeStats
		got, st = q.Take(got[:0])
		if st != (IntakeStats{}) {
			t.Fatalf("stepped over %+v with every producer alive", st)
		}
		for _, g := range got {
			p := int(g[0].Gen >> 24)
			if p > producers || !slices.Equal(g, testGroup(p, next[p], 4)) {
				t.Fatalf("group %v: want producer %d's group %d whole", g, p, next[min(p, producers)])
			}
			next[p]++
		}
		if len(got) == 0 {
			bell.Wait(seen, time.Until(deadline))
		}
	}
	wg.Wait()
	waitChild(t, child)
}

// announceRetry announces g, yielding while the ring is full (a producer
// has no bell for room: the real one refuses instead of waiting).
func announceRetry(q *Intake, g []SlotGen, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := q.Announce(g)
		if !errors.Is(err, ErrRingFull) || time.Now().After(deadline) {
			return err
		}
		runtime.Gosched()
	}
}
