package shm

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// State is a slot's life stage, kept in the low 8 bits of Req.StateGen; the
// high 32 bits are the generation, bumped by every Alloc so that a stale
// (index, gen) reference from a message or a command is detectable.
//
//	Free ─Alloc(apiserver)→ Allocated ─Transition(apiserver)→ Queued ─(router)→ Running
//	Running ─MarkInferReleased(infer)→ Finished | Aborted
//	Queued ─MarkInferReleased(router, never scheduled)→ Aborted
//	Finished | Aborted | Allocated ─Release(apiserver)→ Free
type State uint8

const (
	StateFree      State = iota // in the pool
	StateAllocated              // private to the apiserver, being filled
	StateQueued                 // published to the router, waiting for admission
	StateRunning                // admitted: a NEW command was (or is being) written
	StateFinished               // infer finished it and freed its KV
	StateAborted                // aborted; infer (or the router) has freed its KV
	numStates
)

var stateNames = [numStates]string{"free", "allocated", "queued", "running", "finished", "aborted"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

func packStateGen(s State, gen uint32) uint64 { return uint64(gen)<<32 | uint64(s) }

func unpackStateGen(v uint64) (State, uint32) { return State(v & 0xff), uint32(v >> 32) }

// FinishStatus values, as LightLLM's.
type FinishStatus uint32

const (
	FinishNone FinishStatus = iota
	FinishStop
	FinishLength
	FinishAborted
	FinishError
	numFinish
)

var finishNames = [numFinish]string{"", "stop", "length", "abort", "error"}

func (f FinishStatus) String() string {
	if f < numFinish {
		return finishNames[f]
	}
	return fmt.Sprintf("finish(%d)", uint32(f))
}

// Req.Flags bits.
const (
	FlagIgnoreEOS uint32 = 1 << iota
	FlagDoSample
	FlagSkipSpecialTokens
	FlagSpacesBetweenSpecialTokens
	FlagInputPenalty
	FlagDisablePromptCache
	FlagNoLogProb
	// FlagEmbed: the request computes an embedding of its prompt (the
	// pooled final hidden state, in the logprob array, EmbedLen floats)
	// and generates no token.
	FlagEmbed
)

// Req.RouterMarks bits: the commands the router already wrote for this
// generation, so that a restarted router does not send them twice.
const (
	MarkNewSent uint32 = 1 << iota
)

// Request is what the apiserver writes into a freshly allocated slot.
type Request struct {
	RequestID uint64
	GroupID   uint64
	Arrival   time.Time
	// Params are stored field by field (Seed must be concrete, >= 0, for
	// a restarted infer to resume the same draws; -1 is kept as is).
	Params sampler.Params
	Prompt []int32
	// Extras go to the region's extras pool (extras.go).
	Extras Extras
}

// Slot is a handle on one request slot: the shared fields (embedded *Req,
// all atomic) plus the slot's token array and text queue. Handles are
// created once per Region; fetch them with Region.Slot.
type Slot struct {
	*Req
	Index  int
	region *Region
	tokens []int32 // MaxReqTotalLen ids: prompt, then outputs
	// logprobs parallels tokens: the log-probability of each output token
	// (prompt positions unused).
	logprobs []float32
	text     []byte     // TextQueueBytes ring
	top      []TopEntry // TopRingEntries ring of top-logprob entries
}

// Load returns the state and generation, read together.
func (s *Slot) Load() (State, uint32) { return unpackStateGen(s.StateGen.Load()) }

// Transition moves the slot from one state to another with one CAS, only if
// it is still generation gen. It fails with ErrStale if the slot was
// reused, ErrState if it is in another state.
func (s *Slot) Transition(gen uint32, from, to State) error {
	if from >= numStates || to >= numStates {
		return fmt.Errorf("slot %d: transition %v→%v: %w", s.Index, from, to, ErrState)
	}
	if s.StateGen.CompareAndSwap(packStateGen(from, gen), packStateGen(to, gen)) {
		return nil
	}
	return s.mismatch(gen, from)
}

func (s *Slot) mismatch(gen uint32, want State) error {
	st, g := s.Load()
	if g != gen {
		return fmt.Errorf("slot %d: generation %d, want %d: %w", s.Index, g, gen, ErrStale)
	}
	return fmt.Errorf("slot %d: state %v, want %v: %w", s.Index, st, want, ErrState)
}

// Check returns nil if the slot is generation gen in state want.
func (s *Slot) Check(gen uint32, want State) error {
	if s.StateGen.Load() == packStateGen(want, gen) {
		return nil
	}
	return s.mismatch(gen, want)
}

// Alloc takes a free slot for the apiserver whose epoch is ownerEpoch (from
// BeginEpoch(RoleAPIServer)). The slot comes back zeroed, in state
// Allocated with a new generation; fill it with Fill and publish it with
// Transition(gen, StateAllocated, StateQueued). It is lock-free: a CAS on the
// state word decides between racing allocators.
func (r *Region) Alloc(ownerEpoch uint32) (*Slot, uint32, error) {
	n := uint32(len(r.slots))
	start := r.allocHint.Add(1)
	for k := range n {
		s := &r.slots[(start+k)%n]
		v := s.StateGen.Load()
		st, gen := unpackStateGen(v)
		if st != StateFree {
			continue
		}
		gen++
		if gen == 0 { // 0 never names a live allocation
			gen = 1
		}
		if !s.StateGen.CompareAndSwap(v, packStateGen(StateAllocated, gen)) {
			continue
		}
		s.reset()
		s.OwnerPid.Store(uint32(os.Getpid()))
		s.OwnerEpoch.Store(ownerEpoch)
		return s, gen, nil
	}
	return nil, 0, ErrNoFreeSlot
}

// Prompt is a view of the prompt ids (valid until the slot is released).
func (s *Slot) Prompt() ([]int32, error) {
	n := s.PromptLen.Load()
	if n == 0 || uint64(n) > uint64(len(s.tokens)) {
		return nil, fmt.Errorf("slot %d: prompt length %d of %d: %w", s.Index, n, len(s.tokens), ErrCorrupt)
	}
	return s.tokens[:n:n], nil
}

// Sequence is a view of the prompt followed by the published output ids
// (the first CandetokenOutLen of them), what the detokenizer decodes.
func (s *Slot) Sequence() ([]int32, error) {
	out := s.CandetokenOutLen.Load() // load first: it only grows, PromptLen is fixed
	p := s.PromptLen.Load()
	if end := uint64(p) + uint64(out); p == 0 || end > uint64(len(s.tokens)) {
		return nil, fmt.Errorf("slot %d: prompt %d + output %d exceeds %d: %w", s.Index, p, out, len(s.tokens), ErrCorrupt)
	}
	return s.tokens[: p+out : p+out], nil
}

// Outputs is a view of the published output ids.
func (s *Slot) Outputs() ([]int32, error) {
	seq, err := s.Sequence()
	if err != nil {
		return nil, err
	}
	return seq[s.PromptLen.Load():], nil
}

// SetOutput stores output token i (infer). It becomes visible to readers
// only after Publish covers it.
func (s *Slot) SetOutput(i int, tok int32) error {
	idx := uint64(s.PromptLen.Load()) + uint64(i)
	if i < 0 || idx >= uint64(len(s.tokens)) {
		return fmt.Errorf("slot %d: output %d past max_req_total_len %d: %w", s.Index, i, len(s.tokens), ErrTooLong)
	}
	s.tokens[idx] = tok
	return nil
}

// Publish makes the first outLen output tokens visible (infer), in
// LightLLM's order: output length, then the finish index and status if
// finished, and CandetokenOutLen last as the release store that readers
// synchronise on.
func (s *Slot) Publish(outLen uint32, finish FinishStatus) error {
	p := s.PromptLen.Load()
	if uint64(p)+uint64(outLen) > uint64(len(s.tokens)) || finish >= numFinish {
		return fmt.Errorf("slot %d: publish %d outputs (%v) after a %d-token prompt: %w", s.Index, outLen, finish, p, ErrTooLong)
	}
	s.OutputLen.Store(outLen)
	if finish != FinishNone {
		s.FinishTokenIndex.Store(p + outLen - 1)
		s.FinishStatus.Store(uint32(finish))
	}
	s.CandetokenOutLen.Store(outLen)
	return nil
}

// MarkInferReleased ends a request's life on the inference side: called by
// infer after it has freed the KV of a Running request, or by the router
// for a Queued request it drops without scheduling (an abort before
// admission, or a slot that failed Validate). A request with no finish
// status yet gets status; the state becomes Finished, or Aborted for
// FinishAborted/FinishError.
func (s *Slot) MarkInferReleased(gen uint32, from State, status FinishStatus) error {
	if from != StateRunning && from != StateQueued {
		return fmt.Errorf("slot %d: release from %v: %w", s.Index, from, ErrState)
	}
	if err := s.Check(gen, from); err != nil {
		return err
	}
	if s.FinishStatus.Load() == uint32(FinishNone) {
		if status == FinishNone || status >= numFinish {
			status = FinishAborted
		}
		out := s.CandetokenOutLen.Load()
		s.FinishTokenIndex.Store(s.PromptLen.Load() + out - 1)
		s.FinishStatus.Store(uint32(status))
	}
	s.InferReleased.Store(1)
	to := StateFinished
	if fs := FinishStatus(s.FinishStatus.Load()); fs == FinishAborted || fs == FinishError {
		to = StateAborted
	}
	return s.Transition(gen, from, to)
}

// Release returns a Finished, Aborted or never-published (Allocated) slot to
// the pool (apiserver). The slot is taken back to Allocated, zeroed, then
// stored Free, so a release cut short by a crash leaves an Allocated slot
// that recovery reclaims.
func (s *Slot) Release(gen uint32) error {
	st, g := s.Load()
	if g != gen {
		return fmt.Errorf("release: %w", s.mismatch(gen, st))
	}
	switch st {
	case StateFinished, StateAborted:
		if err := s.Transition(gen, st, StateAllocated); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	case StateAllocated:
	default:
		return fmt.Errorf("release slot %d in state %v: %w", s.Index, st, ErrState)
	}
	s.dropExtras()
	s.reset()
	s.StateGen.Store(packStateGen(StateFree, gen))
	return nil
}

// reset zeroes every field but StateGen, word by word with atomic stores
// (every Req field is a 4- or 8-byte atomic, 4-byte aligned), so a field
// added to Req is zeroed without being listed. Token, logprob and top arrays
// are not cleared: PromptLen and CandetokenOutLen bound what is valid, and a
// top entry names the generation it belongs to.
func (s *Slot) reset() {
	words := unsafe.Slice((*uint32)(unsafe.Pointer(s.Req)), SlotSize/4)
	for i := 2; i < len(words); i++ { // words 0 and 1 are StateGen
		atomic.StoreUint32(&words[i], 0)
	}
}
