package shm

import (
	"errors"
	"math"
	"os/exec"
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

// TestRecoverSparesALivePredecessor: in a zero-gap apiserver restart the
// old process (epoch 1) still serves its streams when the new one (epoch
// 2) starts. Its slots, and a slot caught between Alloc's claim and its
// owner stores, must survive the new one's recovery; once the old process
// has gone, RecoverOrphans takes its slots over, exactly once.
func TestRecoverSparesALivePredecessor(t *testing.T) {
	r := newTestRegion(t, Sizes{Slots: 8, MaxReqTotalLen: 64, TextQueueBytes: 128, RingEntries: 8})
	old := exec.Command("sleep", "60")
	if err := old.Start(); err != nil {
		t.Skipf("no process to play the old apiserver: %v", err)
	}
	defer func() { _ = old.Process.Kill(); _ = old.Wait() }()
	oldPid := uint32(old.Process.Pid)
	q, _ := queued(t, r, 1)
	q.OwnerPid.Store(oldPid)
	fin, finGen := queued(t, r, 1)
	fin.Transition(finGen, StateQueued, StateRunning)
	fin.MarkInferReleased(finGen, StateRunning, FinishStop)
	fin.OwnerPid.Store(oldPid)
	half, _, _ := r.Alloc(1)
	half.OwnerPid.Store(oldPid)
	claiming, _, _ := r.Alloc(1) // claimed, owner not stored yet
	claiming.OwnerPid.Store(0)
	claiming.OwnerEpoch.Store(0)

	if rec := r.RecoverSlots(2); len(rec) != 0 {
		t.Fatalf("recovery acted on a live predecessor's slots: %+v", rec)
	}
	if q.Abort.Load() != 0 || q.OwnerEpoch.Load() != 1 {
		t.Fatalf("live predecessor's queued slot: abort=%d owner epoch=%d", q.Abort.Load(), q.OwnerEpoch.Load())
	}

	_ = old.Process.Kill()
	_ = old.Wait() // reaped: no longer a process
	got := map[int]Action{}
	for _, rc := range r.RecoverOrphans(2) {
		got[rc.Slot] = rc.Action
	}
	want := map[int]Action{q.Index: ActionAborted, fin.Index: ActionAdopted, half.Index: ActionReclaimed}
	if len(got) != len(want) {
		t.Errorf("orphans recovered: %v, want %v", got, want)
	}
	for i, a := range want {
		if got[i] != a {
			t.Errorf("slot %d: %v, want %v", i, got[i], a)
		}
	}
	if st, _ := claiming.Load(); st != StateAllocated {
		t.Errorf("the slot being claimed is %v, want still Allocated", st)
	}
	if rec := r.RecoverOrphans(2); len(rec) != 0 {
		t.Errorf("a second RecoverOrphans acted again: %+v", rec)
	}
}
