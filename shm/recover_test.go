package shm

import (
	"errors"
	"math"
	"testing"
)

// queued allocates and publishes a request owned by epoch.
func queued(t *testing.T, r *Region, epoch uint32) (*Slot, uint32) {
	t.Helper()
	s, gen, err := r.Alloc(epoch)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fill(gen, sampleRequest()); err != nil {
		t.Fatal(err)
	}
	if err := s.Transition(gen, StateAllocated, StateQueued); err != nil {
		t.Fatal(err)
	}
	return s, gen
}

func TestSlotValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		tear  func(s *Slot)
		wants bool // Validate must fail
	}{
		{"healthy", func(*Slot) {}, false},
		{"zero prompt", func(s *Slot) { s.PromptLen.Store(0) }, true},
		{"prompt past array", func(s *Slot) { s.PromptLen.Store(1 << 20) }, true},
		{"candetoken past output", func(s *Slot) { s.CandetokenOutLen.Store(3) }, true},
		{"output past array", func(s *Slot) { s.OutputLen.Store(1 << 30) }, true},
		{"emitted past published", func(s *Slot) { s.EmittedOutLen.Store(1) }, true},
		{"stop id count", func(s *Slot) { s.NumStopTokenIDs.Store(1000) }, true},
		{"finish status", func(s *Slot) { s.FinishStatus.Store(77) }, true},
		{"nan temperature", func(s *Slot) { s.Temperature.Store(math.Float32bits(float32(math.NaN()))) }, true},
		{"detok offsets", func(s *Slot) { s.PrefixOffset.Store(9); s.ReadOffset.Store(3) }, true},
		{"text head past tail", func(s *Slot) { s.TextHead.Store(5) }, true},
		{"text overfull", func(s *Slot) { s.TextTail.Store(1 << 20) }, true},
		{"state byte", func(s *Slot) { s.StateGen.Store(packStateGen(State(99), 1)) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newTestRegion(t, smallSizes)
			s, _ := queued(t, r, 1)
			c.tear(s)
			if err := s.Validate(); (err != nil) != c.wants {
				t.Fatalf("Validate = %v, want failure=%v", err, c.wants)
			} else if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Validate error %v does not wrap ErrCorrupt", err)
			}
			if err := r.Validate(); (err != nil) != c.wants {
				t.Fatalf("Region.Validate = %v", err)
			}
		})
	}
}

// TestRecoverSlots plays an apiserver restart: the old one (epoch 1) left a
// half-written slot, a queued one, a running one, a finished one and a torn
// one; the new one (epoch 2) must end with none of them stuck.
func TestRecoverSlots(t *testing.T) {
	r := newTestRegion(t, Sizes{Slots: 8, MaxReqTotalLen: 64, TextQueueBytes: 128, RingEntries: 8})
	half, _, _ := r.Alloc(1) // killed between Alloc and publish
	half.PromptLen.Store(3)
	q, _ := queued(t, r, 1)
	run, runGen := queued(t, r, 1)
	run.Transition(runGen, StateQueued, StateRunning)
	fin, finGen := queued(t, r, 1)
	fin.Transition(finGen, StateQueued, StateRunning)
	fin.MarkInferReleased(finGen, StateRunning, FinishStop)
	torn, _ := queued(t, r, 2) // owned by the new epoch, but torn
	torn.CandetokenOutLen.Store(50)
	mine, _ := queued(t, r, 2) // healthy and already the new apiserver's

	got := map[int]Action{}
	for _, rc := range r.RecoverSlots(2) {
		got[rc.Slot] = rc.Action
	}
	want := map[int]Action{
		half.Index: ActionReclaimed, q.Index: ActionAborted, run.Index: ActionAborted,
		fin.Index: ActionAdopted, torn.Index: ActionAborted,
	}
	for i, a := range want {
		if got[i] != a {
			t.Errorf("slot %d: %v, want %v", i, got[i], a)
		}
	}
	if _, ok := got[mine.Index]; ok {
		t.Errorf("touched a healthy slot of the current epoch")
	}
	if st, _ := half.Load(); st != StateFree {
		t.Errorf("half-written slot is %v, want free", st)
	}
	for _, s := range []*Slot{q, run, torn} {
		if s.Abort.Load() != 1 || s.OwnerEpoch.Load() != 2 {
			t.Errorf("slot %d: abort=%d owner=%d", s.Index, s.Abort.Load(), s.OwnerEpoch.Load())
		}
	}
	if fin.OwnerEpoch.Load() != 2 {
		t.Errorf("finished slot not adopted")
	}
	// A second pass finds nothing new to do except the torn slot, which
	// stays flagged until the router/infer wind it down.
	for _, rc := range r.RecoverSlots(2) {
		if rc.Slot != torn.Index {
			t.Errorf("second pass acted on slot %d (%v)", rc.Slot, rc.Action)
		}
	}
}
