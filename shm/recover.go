package shm

import (
	"errors"
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Validate checks the invariants of a slot that any reader relies on; a slot
// that fails is torn (its writer died mid-update, or memory was scribbled)
// and must be aborted, never read as data. Free and Allocated slots are
// private to the apiserver and always pass. Lengths are loaded in the
// order their writers publish them, so a concurrent writer cannot make a
// healthy slot fail.
func (s *Slot) Validate() error {
	st, _ := s.Load()
	if st >= numStates {
		return fmt.Errorf("slot %d: state byte %d: %w", s.Index, uint8(st), ErrCorrupt)
	}
	if st == StateFree || st == StateAllocated {
		return nil
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("slot %d (%v): %s: %w", s.Index, st, fmt.Sprintf(format, a...), ErrCorrupt)
	}
	capTok := uint64(len(s.tokens))
	emitted := s.EmittedOutLen.Load()
	cand := s.CandetokenOutLen.Load()
	out := s.OutputLen.Load()
	prompt, maxNew := s.PromptLen.Load(), s.MaxNewTokens.Load()
	switch {
	case prompt == 0 || uint64(prompt)+uint64(maxNew) > capTok:
		return bad("prompt %d + max_new_tokens %d vs max_req_total_len %d", prompt, maxNew, capTok)
	case cand > out || uint64(prompt)+uint64(out) > capTok:
		return bad("candetoken_out_len %d, output_len %d, prompt %d", cand, out, prompt)
	case emitted > cand:
		return bad("emitted %d of %d published tokens", emitted, cand)
	case s.NumStopTokenIDs.Load() > MaxStopTokenIDs:
		return bad("%d stop ids", s.NumStopTokenIDs.Load())
	case s.NumBannedTokenIDs.Load() > MaxBannedTokenIDs:
		return bad("%d banned ids", s.NumBannedTokenIDs.Load())
	case s.TopLogprobs.Load() > MaxTopLogprobs:
		return bad("%d top logprobs", s.TopLogprobs.Load())
	case s.ExtrasLen.Load() > 0 && (s.ExtrasOff.Load()%extrasAlign != 0 ||
		s.ExtrasOff.Load()+uint64(s.ExtrasLen.Load()) > uint64(len(s.region.extras.mem))):
		return bad("extras at %d+%d in a %d-byte pool", s.ExtrasOff.Load(), s.ExtrasLen.Load(), len(s.region.extras.mem))
	case s.FinishStatus.Load() >= uint32(numFinish):
		return bad("finish status %d", s.FinishStatus.Load())
	}
	for _, f := range []struct {
		name string
		v    uint32
	}{{"temperature", s.Temperature.Load()}, {"top_p", s.TopP.Load()}, {"repetition_penalty", s.RepetitionPenalty.Load()},
		{"presence_penalty", s.PresencePenalty.Load()}, {"frequency_penalty", s.FrequencyPenalty.Load()}} {
		if x := float64(math.Float32frombits(f.v)); math.IsNaN(x) || math.IsInf(x, 0) {
			return bad("%s is %v", f.name, x)
		}
	}
	if po, ro := s.PrefixOffset.Load(), s.ReadOffset.Load(); po > ro || uint64(ro) > capTok {
		return bad("detokenizer offsets prefix %d read %d", po, ro)
	}
	head, tail := s.TextHead.Load(), s.TextTail.Load()
	if head > tail || tail-head > uint64(len(s.text)) {
		return bad("text queue head %d tail %d", head, tail)
	}
	return nil
}

// Validate checks the region-wide structures (ring counters) and every
// slot, returning all problems found; nil means healthy.
func (r *Region) Validate() error {
	var errs []error
	// Head may pass Tail by up to cap entries: a producer that died after
	// publishing entries but before storing Tail.
	h, t, capN := r.ring.hdr.Head.Load(), r.ring.hdr.Tail.Load(), uint64(len(r.ring.entries))
	if h > t+capN || t > h+capN {
		errs = append(errs, fmt.Errorf("command ring head %d tail %d cap %d: %w", h, t, len(r.ring.entries), ErrCorrupt))
	}
	for i := range r.slots {
		if err := r.slots[i].Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Action is what RecoverSlots did to a slot.
type Action uint8

const (
	// ActionReclaimed: the slot was Allocated by a dead apiserver (half
	// written) or had an unknown state byte; it is Free again.
	ActionReclaimed Action = iota + 1
	// ActionAborted: the request was in flight for a dead apiserver (or is
	// torn); Abort is set so the router and infer wind it down, and the
	// caller now owns it: release it once it is Finished/Aborted and the
	// detokenizer is done (DetokDone), like any request whose client left.
	ActionAborted
	// ActionAdopted: already Finished/Aborted for a dead apiserver; the
	// caller now owns it and releases it once DetokDone is set.
	ActionAdopted
)

func (a Action) String() string {
	switch a {
	case ActionReclaimed:
		return "reclaimed"
	case ActionAborted:
		return "aborted"
	case ActionAdopted:
		return "adopted"
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// Recovered describes one slot RecoverSlots acted on.
type Recovered struct {
	Slot   int
	Gen    uint32
	State  State // before recovery
	Action Action
	Err    error // the Validate error, for a torn slot
}

// RecoverSlots is run by an apiserver at start, after BeginEpoch, with its
// new epoch: every slot owned by an earlier apiserver epoch whose process
// is gone has no live client any more. It reclaims half-written slots,
// aborts in-flight ones and adopts finished ones, so that within a few
// steps every slot returns to the pool. A torn slot (Validate fails) is
// aborted whatever its epoch.
//
// Slots of an earlier apiserver that still runs (OwnerPid alive, another
// process) are left alone: in a zero-gap restart the old apiserver drains
// its streams while the new one serves, and its slots are its own until it
// exits. RecoverOrphans, called now and then, takes them over then. (A
// recycled pid keeps a dead owner's slots until that process exits too;
// pids are not reused that fast.)
func (r *Region) RecoverSlots(epoch uint32) []Recovered { return r.recoverSlots(epoch, false) }

// RecoverOrphans is RecoverSlots for a running apiserver: it acts only on
// slots of other epochs whose process has gone since (a drained or killed
// predecessor), never on its own, so repeating it is harmless.
func (r *Region) RecoverOrphans(epoch uint32) []Recovered { return r.recoverSlots(epoch, true) }

func (r *Region) recoverSlots(epoch uint32, othersOnly bool) []Recovered {
	var out []Recovered
	pid := uint32(os.Getpid())
	for i := range r.slots {
		s := &r.slots[i]
		v := s.StateGen.Load()
		st, gen := unpackStateGen(v)
		if st == StateFree {
			continue
		}
		ownerEpoch := s.OwnerEpoch.Load()
		owned := ownerEpoch == epoch
		if owned && othersOnly {
			continue
		}
		owner := s.OwnerPid.Load()
		if !owned && owner != pid && processAlive(owner) {
			continue // a live predecessor's, draining
		}
		if st == StateAllocated && owner == 0 {
			// Between Alloc's claim and its owner stores, or Release's reset
			// and its free: a live process is on it (one that died in those
			// few instructions leaks the slot).
			continue
		}
		// claim makes this apiserver the owner; of two apiservers recovering
		// the same dead predecessor's slot, one wins.
		claim := func() bool {
			if !s.OwnerEpoch.CompareAndSwap(ownerEpoch, epoch) {
				return false
			}
			s.OwnerPid.Store(pid)
			return true
		}
		verr := s.Validate()
		switch {
		case st >= numStates || st == StateAllocated && !owned:
			// Nobody can be working on it: unknown states are meaningless to
			// every role, and Allocated slots are invisible outside the
			// apiserver that died.
			if s.StateGen.CompareAndSwap(v, packStateGen(StateAllocated, gen)) {
				s.dropExtras()
				s.reset()
				s.StateGen.Store(packStateGen(StateFree, gen+1))
				out = append(out, Recovered{Slot: i, Gen: gen, State: st, Action: ActionReclaimed, Err: verr})
			}
		case owned && verr == nil:
			continue
		case st == StateQueued || st == StateRunning || verr != nil && st != StateAllocated:
			if owned || claim() {
				s.Abort.Store(1)
				out = append(out, Recovered{Slot: i, Gen: gen, State: st, Action: ActionAborted, Err: verr})
			}
		case st == StateFinished || st == StateAborted:
			if claim() {
				out = append(out, Recovered{Slot: i, Gen: gen, State: st, Action: ActionAdopted})
			}
		}
	}
	return out
}

// processAlive reports whether pid names a process (a zombie counts until
// it is reaped).
func processAlive(pid uint32) bool {
	if pid == 0 {
		return false
	}
	err := unix.Kill(int(pid), 0)
	return err == nil || err == unix.EPERM
}
