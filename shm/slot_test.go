package shm

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

func sampleRequest() Request {
	return Request{
		RequestID: 42, GroupID: 40, Arrival: time.Unix(0, 1700),
		Prompt: []int32{1, 2, 3, 4, 5},
		Params: sampler.Params{
			Temperature: 0.7, TopP: 0.9, TopK: 40, RepetitionPenalty: 1.1, PresencePenalty: 0.2,
			FrequencyPenalty: 0.3, Seed: -1, MinNewTokens: 2, MaxNewTokens: 20, IgnoreEOS: true,
			DoSample: true, SkipSpecialTokens: true, InputPenalty: true, StopTokenIDs: []int32{7, 9}, TopLogprobs: 5,
		},
	}
}

func TestSlotLifecycle(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, gen, err := r.Alloc(3)
	if err != nil {
		t.Fatal(err)
	}
	q := sampleRequest()
	if err := s.Fill(gen, q); err != nil {
		t.Fatal(err)
	}
	if got := s.Params(); !reflect.DeepEqual(got, q.Params) {
		t.Fatalf("params round trip:\n got %+v\nwant %+v", got, q.Params)
	}
	if p, err := s.Prompt(); err != nil || !reflect.DeepEqual(p, q.Prompt) {
		t.Fatalf("prompt %v, %v", p, err)
	}
	if s.OwnerEpoch.Load() != 3 || s.RequestID.Load() != 42 || s.ArrivalUnixNano.Load() != 1700 {
		t.Fatal("request fields not stored")
	}
	steps := []struct {
		from, to State
	}{{StateAllocated, StateQueued}, {StateQueued, StateRunning}}
	for _, st := range steps {
		if err := s.Transition(gen, st.from, st.to); err != nil {
			t.Fatal(err)
		}
	}
	// A wrong expectation fails without changing anything.
	if err := s.Transition(gen, StateQueued, StateRunning); !errors.Is(err, ErrState) {
		t.Fatalf("repeat transition: %v, want ErrState", err)
	}
	if err := s.Transition(gen+1, StateRunning, StateFinished); !errors.Is(err, ErrStale) {
		t.Fatalf("stale transition: %v, want ErrStale", err)
	}
	// Infer writes three tokens, the last one finishing.
	for i, tok := range []int32{100, 101, 102} {
		if err := s.SetOutput(i, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Publish(3, FinishStop); err != nil {
		t.Fatal(err)
	}
	out, err := s.Outputs()
	if err != nil || !reflect.DeepEqual(out, []int32{100, 101, 102}) {
		t.Fatalf("outputs %v, %v", out, err)
	}
	if s.FinishTokenIndex.Load() != 5+3-1 {
		t.Fatalf("finish index %d", s.FinishTokenIndex.Load())
	}
	if err := s.Release(gen); !errors.Is(err, ErrState) {
		t.Fatalf("release while running: %v, want ErrState", err)
	}
	if err := s.MarkInferReleased(gen, StateRunning, FinishNone); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(); st != StateFinished || s.InferReleased.Load() != 1 {
		t.Fatalf("after infer release: %v released=%d", st, s.InferReleased.Load())
	}
	if err := s.Release(gen); err != nil {
		t.Fatal(err)
	}
	if st, g := s.Load(); st != StateFree || g != gen {
		t.Fatalf("after release: %v/%d", st, g)
	}
	assertZeroExceptState(t, s)
	// The next allocation of this slot has a new generation.
	for range r.NumSlots() {
		s2, gen2, err := r.Alloc(3)
		if err != nil {
			t.Fatal(err)
		}
		if s2.Index == s.Index && gen2 == gen {
			t.Fatal("reallocated with the same generation")
		}
	}
}

// assertZeroExceptState checks that reset cleared every byte but StateGen.
func assertZeroExceptState(t *testing.T, s *Slot) {
	t.Helper()
	b := unsafe.Slice((*byte)(unsafe.Pointer(s.Req)), SlotSize)
	for i := 8; i < SlotSize; i++ {
		if b[i] != 0 {
			t.Fatalf("byte %d of the released slot is %#x", i, b[i])
		}
	}
}

func TestFillLimits(t *testing.T) {
	r := newTestRegion(t, smallSizes) // 64 tokens per slot
	s, gen, _ := r.Alloc(1)
	for name, mut := range map[string]func(*Request){
		"empty prompt":    func(q *Request) { q.Prompt = nil },
		"too long":        func(q *Request) { q.Params.MaxNewTokens = 60 },
		"many stop ids":   func(q *Request) { q.Params.StopTokenIDs = make([]int32, MaxStopTokenIDs+1) },
		"prompt too long": func(q *Request) { q.Prompt = make([]int32, 65); q.Params.MaxNewTokens = 0 },
	} {
		q := sampleRequest()
		mut(&q)
		if err := s.Fill(gen, q); !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: %v, want ErrTooLong", name, err)
		}
	}
	if err := s.Fill(gen+1, sampleRequest()); !errors.Is(err, ErrStale) {
		t.Errorf("fill with a stale generation: %v", err)
	}
	if err := s.SetOutput(64, 1); !errors.Is(err, ErrTooLong) {
		t.Errorf("SetOutput past the array: %v", err)
	}
	if _, err := r.Slot(r.NumSlots()); !errors.Is(err, ErrBadIndex) {
		t.Errorf("Slot(n): %v", err)
	}
	if _, err := r.Slot(-1); !errors.Is(err, ErrBadIndex) {
		t.Errorf("Slot(-1): %v", err)
	}
}

func TestAllocExhaustion(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	for range r.NumSlots() {
		if _, _, err := r.Alloc(1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.Alloc(1); !errors.Is(err, ErrNoFreeSlot) {
		t.Fatalf("alloc from a full table: %v", err)
	}
}

// TestAllocConcurrent hammers the allocator from many goroutines (run with
// -race): no slot may ever be held by two callers at once, and every slot
// returns to the pool.
func TestAllocConcurrent(t *testing.T) {
	r := newTestRegion(t, Sizes{Slots: 16, MaxReqTotalLen: 8, TextQueueBytes: 64, RingEntries: 8})
	holders := make([]atomic.Int32, r.NumSlots())
	var (
		wg      sync.WaitGroup
		allocs  atomic.Int64
		doubled atomic.Int64
	)
	const workers, rounds = 32, 300
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				s, gen, err := r.Alloc(1)
				if errors.Is(err, ErrNoFreeSlot) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				allocs.Add(1)
				if !holders[s.Index].CompareAndSwap(0, int32(w+1)) {
					doubled.Add(1)
				}
				s.RequestID.Store(uint64(w))
				holders[s.Index].Store(0)
				if err := s.Release(gen); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if doubled.Load() != 0 {
		t.Fatalf("%d allocations handed out a slot that was already held", doubled.Load())
	}
	if allocs.Load() < workers*rounds/2 {
		t.Fatalf("only %d of %d allocations succeeded", allocs.Load(), workers*rounds)
	}
	for i := range r.NumSlots() {
		s, _ := r.Slot(i)
		if st, _ := s.Load(); st != StateFree {
			t.Fatalf("slot %d left %v", i, st)
		}
	}
}

func TestMarkInferReleasedAborted(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, gen, _ := r.Alloc(1)
	s.Fill(gen, sampleRequest())
	s.Transition(gen, StateAllocated, StateQueued)
	// The router drops an aborted request that never ran.
	if err := s.MarkInferReleased(gen, StateQueued, FinishAborted); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Load(); st != StateAborted || FinishStatus(s.FinishStatus.Load()) != FinishAborted {
		t.Fatalf("state %v finish %v", st, FinishStatus(s.FinishStatus.Load()))
	}
	if err := s.MarkInferReleased(gen, StateFinished, FinishStop); !errors.Is(err, ErrState) {
		t.Fatalf("release from finished: %v", err)
	}
}
