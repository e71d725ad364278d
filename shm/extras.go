package shm

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Extras are a request's variable-size data: what does not fit the fixed
// slot because it has no small bound (stop strings, logit-bias maps,
// grammars and tool schemas). The apiserver writes them into the
// region's extras pool while the slot is Allocated, before publishing it;
// infer and the detokenizer read them from the slot (Slot.ExtrasFor) any
// time while the slot is live, so a restarted reader finds them again; they
// are freed with the slot (Release, or recovery of a dead apiserver's slot).
//
// On the wire (docs/FORMAT.md) extras are a sequence of sections, each
//
//	kind u16 | reserved u16 (0) | len u32 | payload[len] | zero padding to 4 bytes
//
// in increasing kind order, at most one per kind.
//
// Adding a kind (#18's grammar, allowed ids and thinking budget, #22's bias map) is done in this file only: a
// field here, an ExtraKind constant, a case in encode and one in decode, and
// a case in TestExtrasRoundTrip; the reader that needs it gets the field
// from Slot.ExtrasFor. Infer turns the sections it acts on into an
// engine.LogitsProcessor (pkg/infer).
type Extras struct {
	// StopStrings end the request when the decoded text contains one
	// (detokenizer). Payload: count u32, then per string len u32 | bytes.
	StopStrings []string
	// LogitBias is OpenAI's logit_bias: a value added to a token's logit
	// before sampling (infer's bias processor), ids strictly increasing.
	// Payload: count u32, then per entry id i32 | bias f32.
	LogitBias []TokenBias
	// Constraint is the request's structured-output constraint (#18), as
	// pkg/constrain encodes it (JSON); infer turns it into the request's
	// logits processor. Payload: the bytes.
	Constraint []byte
	// AllowedTokenIDs is LightLLM's allowed_token_ids: the only tokens
	// infer may sample (every other logit masked), ids strictly
	// increasing. Payload: count u32, then per id i32.
	AllowedTokenIDs []int32
	// ThinkBudget is vLLM's thinking_token_budget: infer forces the
	// thinking block's end once the block has run Budget tokens. Nil: no
	// budget. Payload: budget u32 | open u32 (0 or 1) | start count u32 |
	// start ids i32... | end count u32 | end ids i32...
	ThinkBudget *ThinkBudget
}

// ThinkBudget bounds a request's thinking block (#18).
type ThinkBudget struct {
	// Budget is how many tokens the block may run before End is forced.
	Budget uint32
	// Open: the prompt opened the block, so it runs from the first token.
	Open bool
	// Start opens the block when the output begins with it (a model that
	// writes its own "<think>"); End closes it. Both non-empty.
	Start, End []int32
}

// TokenBias is one logit_bias entry.
type TokenBias struct {
	ID   int32
	Bias float32
}

// ExtraKind names one section of Extras.
type ExtraKind uint16

const (
	// ExtraStopStrings is Extras.StopStrings.
	ExtraStopStrings ExtraKind = 1
	// ExtraLogitBias is Extras.LogitBias.
	ExtraLogitBias ExtraKind = 2
	// ExtraConstraint is Extras.Constraint.
	ExtraConstraint ExtraKind = 3
	// ExtraAllowedTokens is Extras.AllowedTokenIDs.
	ExtraAllowedTokens ExtraKind = 4
	// ExtraThinkBudget is Extras.ThinkBudget.
	ExtraThinkBudget ExtraKind = 5
)

// extrasAlign is the pool's allocation unit (and each section's offset alignment).
const extrasAlign = 64

// Empty reports whether there is nothing to store.
func (x *Extras) Empty() bool {
	return len(x.StopStrings) == 0 && len(x.LogitBias) == 0 && len(x.Constraint) == 0 && len(x.AllowedTokenIDs) == 0 &&
		x.ThinkBudget == nil
}

// encode returns the sections of x (nil when empty).
func (x *Extras) encode() []byte {
	var b []byte
	section := func(k ExtraKind, payload []byte) {
		b = binary.LittleEndian.AppendUint16(b, uint16(k))
		b = binary.LittleEndian.AppendUint16(b, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
		b = append(b, payload...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	if len(x.StopStrings) > 0 {
		p := binary.LittleEndian.AppendUint32(nil, uint32(len(x.StopStrings)))
		for _, s := range x.StopStrings {
			p = binary.LittleEndian.AppendUint32(p, uint32(len(s)))
			p = append(p, s...)
		}
		section(ExtraStopStrings, p)
	}
	if len(x.LogitBias) > 0 {
		p := binary.LittleEndian.AppendUint32(nil, uint32(len(x.LogitBias)))
		for _, e := range x.LogitBias {
			p = binary.LittleEndian.AppendUint32(p, uint32(e.ID))
			p = binary.LittleEndian.AppendUint32(p, math.Float32bits(e.Bias))
		}
		section(ExtraLogitBias, p)
	}
	if len(x.Constraint) > 0 {
		section(ExtraConstraint, x.Constraint)
	}
	if len(x.AllowedTokenIDs) > 0 {
		p := binary.LittleEndian.AppendUint32(nil, uint32(len(x.AllowedTokenIDs)))
		for _, id := range x.AllowedTokenIDs {
			p = binary.LittleEndian.AppendUint32(p, uint32(id))
		}
		section(ExtraAllowedTokens, p)
	}
	if tb := x.ThinkBudget; tb != nil {
		p := binary.LittleEndian.AppendUint32(nil, tb.Budget)
		open := uint32(0)
		if tb.Open {
			open = 1
		}
		p = binary.LittleEndian.AppendUint32(p, open)
		for _, ids := range [][]int32{tb.Start, tb.End} {
			p = binary.LittleEndian.AppendUint32(p, uint32(len(ids)))
			for _, id := range ids {
				p = binary.LittleEndian.AppendUint32(p, uint32(id))
			}
		}
		section(ExtraThinkBudget, p)
	}
	return b
}

// maxThinkTagTokens bounds each of a thinking budget's tag sequences (a
// tag is one special token in every tokenizer seen; a few when spelt out).
const maxThinkTagTokens = 16

// decodeThinkBudget parses an ExtraThinkBudget payload ("" when bad).
func decodeThinkBudget(p []byte) (*ThinkBudget, string) {
	if len(p) < 8 {
		return nil, "no budget"
	}
	tb := &ThinkBudget{Budget: binary.LittleEndian.Uint32(p)}
	switch binary.LittleEndian.Uint32(p[4:]) {
	case 0:
	case 1:
		tb.Open = true
	default:
		return nil, "open flag not 0 or 1"
	}
	p = p[8:]
	for _, dst := range []*[]int32{&tb.Start, &tb.End} {
		if len(p) < 4 {
			return nil, "no tag count"
		}
		n := uint64(binary.LittleEndian.Uint32(p))
		p = p[4:]
		if n == 0 || n > maxThinkTagTokens || n*4 > uint64(len(p)) {
			return nil, fmt.Sprintf("a tag of %d tokens in %d bytes", n, len(p))
		}
		ids := make([]int32, n)
		for i := range ids {
			if ids[i] = int32(binary.LittleEndian.Uint32(p[4*i:])); ids[i] < 0 {
				return nil, fmt.Sprintf("tag token id %d", ids[i])
			}
		}
		*dst, p = ids, p[4*n:]
	}
	if len(p) != 0 {
		return nil, fmt.Sprintf("%d bytes after the end tag", len(p))
	}
	return tb, ""
}

// decodeExtras parses sections; every byte is checked, so a torn or
// scribbled pool is an ErrCorrupt error, never a panic or garbage.
func decodeExtras(b []byte) (Extras, error) {
	var x Extras
	bad := func(format string, a ...any) (Extras, error) {
		return Extras{}, fmt.Errorf("extras: %s: %w", fmt.Sprintf(format, a...), ErrCorrupt)
	}
	last := ExtraKind(0)
	for len(b) > 0 {
		if len(b) < 8 {
			return bad("%d trailing bytes", len(b))
		}
		k := ExtraKind(binary.LittleEndian.Uint16(b))
		n := uint64(binary.LittleEndian.Uint32(b[4:]))
		if k <= last {
			return bad("section kind %d after %d", k, last)
		}
		last = k
		if n > uint64(len(b)-8) {
			return bad("section %d of %d bytes, %d left", k, n, len(b)-8)
		}
		payload := b[8 : 8+n]
		b = b[min(uint64(len(b)), (8+n+3)/4*4):]
		switch k {
		case ExtraStopStrings:
			if len(payload) < 4 {
				return bad("stop strings: no count")
			}
			count := binary.LittleEndian.Uint32(payload)
			payload = payload[4:]
			if uint64(count) > uint64(len(payload))/4 {
				return bad("stop strings: %d strings in %d bytes", count, len(payload))
			}
			x.StopStrings = make([]string, 0, count)
			for range count {
				if len(payload) < 4 {
					return bad("stop strings: truncated")
				}
				sn := uint64(binary.LittleEndian.Uint32(payload))
				if sn > uint64(len(payload)-4) {
					return bad("stop string of %d bytes, %d left", sn, len(payload)-4)
				}
				x.StopStrings = append(x.StopStrings, string(payload[4:4+sn]))
				payload = payload[4+sn:]
			}
			if len(payload) != 0 {
				return bad("stop strings: %d bytes after the last string", len(payload))
			}
		case ExtraLogitBias:
			if len(payload) < 4 {
				return bad("logit bias: no count")
			}
			count := uint64(binary.LittleEndian.Uint32(payload))
			payload = payload[4:]
			if count == 0 || count*8 != uint64(len(payload)) {
				return bad("logit bias: %d entries in %d bytes", count, len(payload))
			}
			x.LogitBias = make([]TokenBias, count)
			for i := range x.LogitBias {
				e := TokenBias{ID: int32(binary.LittleEndian.Uint32(payload[8*i:])),
					Bias: math.Float32frombits(binary.LittleEndian.Uint32(payload[8*i+4:]))}
				if e.ID < 0 || (i > 0 && e.ID <= x.LogitBias[i-1].ID) || !finite32(e.Bias) {
					return bad("logit bias entry %d: id %d bias %g", i, e.ID, e.Bias)
				}
				x.LogitBias[i] = e
			}
		case ExtraConstraint:
			if len(payload) == 0 {
				return bad("empty constraint")
			}
			x.Constraint = append([]byte(nil), payload...)
		case ExtraAllowedTokens:
			if len(payload) < 4 {
				return bad("allowed tokens: no count")
			}
			count := uint64(binary.LittleEndian.Uint32(payload))
			payload = payload[4:]
			if count == 0 || count*4 != uint64(len(payload)) {
				return bad("allowed tokens: %d ids in %d bytes", count, len(payload))
			}
			x.AllowedTokenIDs = make([]int32, count)
			for i := range x.AllowedTokenIDs {
				id := int32(binary.LittleEndian.Uint32(payload[4*i:]))
				if id < 0 || (i > 0 && id <= x.AllowedTokenIDs[i-1]) {
					return bad("allowed token %d: id %d", i, id)
				}
				x.AllowedTokenIDs[i] = id
			}
		case ExtraThinkBudget:
			tb, why := decodeThinkBudget(payload)
			if tb == nil {
				return bad("thinking budget: %s", why)
			}
			x.ThinkBudget = tb
		default:
			return bad("unknown section kind %d", k)
		}
	}
	return x, nil
}

// validateExtras checks what the encoder cannot represent.
func (x *Extras) validate() error {
	for _, s := range x.StopStrings {
		if s == "" || !utf8.ValidString(s) {
			return fmt.Errorf("stop string %q: empty or not UTF-8", s)
		}
	}
	for i, e := range x.LogitBias {
		if e.ID < 0 || (i > 0 && e.ID <= x.LogitBias[i-1].ID) || !finite32(e.Bias) {
			return fmt.Errorf("logit bias entry %d (id %d, bias %g): ids must increase, biases be finite", i, e.ID, e.Bias)
		}
	}
	for i, id := range x.AllowedTokenIDs {
		if id < 0 || (i > 0 && id <= x.AllowedTokenIDs[i-1]) {
			return fmt.Errorf("allowed token %d (id %d): ids must be non-negative and increase", i, id)
		}
	}
	if tb := x.ThinkBudget; tb != nil {
		for _, ids := range [][]int32{tb.Start, tb.End} {
			if len(ids) == 0 || len(ids) > maxThinkTagTokens || slices.ContainsFunc(ids, func(id int32) bool { return id < 0 }) {
				return fmt.Errorf("thinking budget tag %v: 1 to %d non-negative ids", ids, maxThinkTagTokens)
			}
		}
	}
	return nil
}

func finite32(f float32) bool { return !math.IsInf(float64(f), 0) && !math.IsNaN(float64(f)) }

// extrasPool is the region's extras section and the allocator over it.
// The allocator keeps no state of its own between calls: every allocation
// and free rebuilds the free spans from the slot table (every non-free
// slot's ExtrasOff/ExtrasLen is in use), so neither a crash nor a restart
// can leak pool space (what no slot names is free), and two apiserver
// processes may write the pool at once (a zero-gap restart: the old one
// drains while the new one admits). An flock on the region's file makes
// that rebuild-allocate-publish (or rebuild-free) one step across
// processes; mu does the same between goroutines.
type extrasPool struct {
	mem []byte

	mu   sync.Mutex
	lock *os.File // the region's file, opened for flock on first use; nil if none
	free []span   // sorted by offset, coalesced; valid under mu
}

type span struct{ off, n uint64 }

// roundExtras is n rounded up to the allocation unit.
func roundExtras(n uint64) uint64 { return (n + extrasAlign - 1) / extrasAlign * extrasAlign }

// lockExtras takes the pool across processes and goroutines and computes
// the free spans from the slot table; the caller defers unlockExtras.
func (r *Region) lockExtras() {
	p := &r.extras
	p.mu.Lock()
	if p.lock == nil && r.path != "" && !r.closed.Load() {
		if f, err := os.Open(r.path); err == nil {
			p.lock = f
		}
	}
	if p.lock != nil {
		// EINTR is retried; another error (none is expected on a regular
		// file) leaves only mu, as for a region without a file.
		for unix.Flock(int(p.lock.Fd()), unix.LOCK_EX) == unix.EINTR {
		}
	}
	p.free = append(p.free[:0], span{0, uint64(len(p.mem))})
	for i := range r.slots {
		s := &r.slots[i]
		if st, _ := s.Load(); st == StateFree {
			continue
		}
		if n := uint64(s.ExtrasLen.Load()); n > 0 {
			p.take(s.ExtrasOff.Load(), roundExtras(n))
		}
	}
}

func (r *Region) unlockExtras() {
	p := &r.extras
	if p.lock != nil {
		_ = unix.Flock(int(p.lock.Fd()), unix.LOCK_UN)
	}
	p.mu.Unlock()
}

// closeExtras drops the flock file (Region.Close).
func (r *Region) closeExtras() {
	p := &r.extras
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lock != nil {
		_ = p.lock.Close()
		p.lock = nil
	}
}

// take removes [off, off+n) from the free spans (what is not free is ignored).
func (p *extrasPool) take(off, n uint64) {
	end := off + n
	var out []span
	for _, f := range p.free {
		fe := f.off + f.n
		if fe <= off || f.off >= end {
			out = append(out, f)
			continue
		}
		if f.off < off {
			out = append(out, span{f.off, off - f.off})
		}
		if fe > end {
			out = append(out, span{end, fe - end})
		}
	}
	p.free = out
}

// alloc returns the offset of n free bytes (n a multiple of the unit), first fit.
func (p *extrasPool) alloc(n uint64) (uint64, bool) {
	for i, f := range p.free {
		if f.n < n {
			continue
		}
		if f.n == n {
			p.free = append(p.free[:i], p.free[i+1:]...)
		} else {
			p.free[i] = span{f.off + n, f.n - n}
		}
		return f.off, true
	}
	return 0, false
}

// release returns [off, off+n) to the free spans, merging neighbours.
func (p *extrasPool) release(off, n uint64) {
	if n == 0 || off+n > uint64(len(p.mem)) {
		return
	}
	i := 0
	for i < len(p.free) && p.free[i].off < off {
		i++
	}
	p.free = append(p.free, span{})
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = span{off, n}
	if i+1 < len(p.free) && p.free[i].off+p.free[i].n == p.free[i+1].off {
		p.free[i].n += p.free[i+1].n
		p.free = append(p.free[:i+1], p.free[i+2:]...)
	}
	if i > 0 && p.free[i-1].off+p.free[i-1].n == p.free[i].off {
		p.free[i-1].n += p.free[i].n
		p.free = append(p.free[:i], p.free[i+1:]...)
	}
}

// putExtras stores x for a slot this process holds Allocated (Fill).
func (s *Slot) putExtras(x *Extras) error {
	if x.Empty() {
		return nil
	}
	if err := x.validate(); err != nil {
		return fmt.Errorf("slot %d: %v: %w", s.Index, err, ErrTooLong)
	}
	b := x.encode()
	p := &s.region.extras
	if uint64(len(b)) > uint64(len(p.mem)) {
		return fmt.Errorf("slot %d: %d bytes of extras, the pool holds %d: %w", s.Index, len(b), len(p.mem), ErrTooLong)
	}
	s.region.lockExtras()
	defer s.region.unlockExtras()
	if old := uint64(s.ExtrasLen.Load()); old > 0 { // a second Fill replaces the first
		p.release(s.ExtrasOff.Load(), roundExtras(old))
		s.ExtrasLen.Store(0)
	}
	off, ok := p.alloc(roundExtras(uint64(len(b))))
	if !ok {
		return fmt.Errorf("slot %d: %d bytes of extras: %w", s.Index, len(b), ErrExtrasFull)
	}
	copy(p.mem[off:], b)
	s.ExtrasOff.Store(off)
	s.ExtrasLen.Store(uint32(len(b))) // last: a non-zero length names written bytes
	return nil
}

// dropExtras frees the slot's extras (Release, recovery); the caller holds
// the slot (Allocated, about to be zeroed).
func (s *Slot) dropExtras() {
	n := uint64(s.ExtrasLen.Load())
	if n == 0 {
		return
	}
	// Under the pool's lock so that no allocation sees the bytes as free
	// while the length still names them; the spans need no update.
	s.region.lockExtras()
	defer s.region.unlockExtras()
	s.ExtrasLen.Store(0)
	s.ExtrasOff.Store(0)
}

// ExtrasFor decodes the extras of generation gen of the slot (any reader,
// while the slot is live: Queued to Finished/Aborted). The result is a copy;
// it fails with ErrStale if the slot was released meanwhile and ErrCorrupt
// if the bytes do not parse.
func (s *Slot) ExtrasFor(gen uint32) (Extras, error) {
	if _, g := s.Load(); g != gen {
		return Extras{}, fmt.Errorf("slot %d extras: generation %d, want %d: %w", s.Index, g, gen, ErrStale)
	}
	n, off := uint64(s.ExtrasLen.Load()), s.ExtrasOff.Load()
	if n == 0 {
		return Extras{}, nil
	}
	mem := s.region.extras.mem
	if off%extrasAlign != 0 || off > uint64(len(mem)) || n > uint64(len(mem))-off {
		return Extras{}, fmt.Errorf("slot %d: extras at %d+%d in a %d-byte pool: %w", s.Index, off, n, len(mem), ErrCorrupt)
	}
	x, err := decodeExtras(mem[off : off+n])
	if err != nil {
		return Extras{}, fmt.Errorf("slot %d: %w", s.Index, err)
	}
	if _, g := s.Load(); g != gen {
		return Extras{}, fmt.Errorf("slot %d extras: released while read: %w", s.Index, ErrStale)
	}
	return x, nil
}
