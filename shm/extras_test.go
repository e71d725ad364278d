package shm

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestExtrasRoundTrip(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	big := strings.Repeat("x", 100<<10) // a 100 KB string: no small cap
	for name, x := range map[string]Extras{
		"none":          {},
		"stop strings":  {StopStrings: []string{"\n\n", "User:", "é"}},
		"one 100 KB":    {StopStrings: []string{big}},
		"logit bias":    {LogitBias: []TokenBias{{0, -100}, {7, 0.5}, {31999, 100}}},
		"all three":     {StopStrings: []string{"x"}, LogitBias: []TokenBias{{3, -1}}, Constraint: []byte(`{}`)},
		"allowed ids":   {AllowedTokenIDs: []int32{0, 5, 127999}},
		"all four":      {StopStrings: []string{"x"}, LogitBias: []TokenBias{{3, -1}}, Constraint: []byte(`{}`), AllowedTokenIDs: []int32{2, 3}},
		"constraint":    {StopStrings: []string{"x"}, Constraint: []byte(`{"grammar":{"Kind":"regex","Text":"a+"}}`)},
		"100 KB schema": {Constraint: []byte(big)},
		"think budget":  {ThinkBudget: &ThinkBudget{Budget: 7, Start: []int32{151667}, End: []int32{151668}}},
		"open, spelt":   {StopStrings: []string{"x"}, ThinkBudget: &ThinkBudget{Open: true, Start: []int32{1, 2}, End: []int32{3, 4, 5}}},
	} {
		t.Run(name, func(t *testing.T) {
			s, gen, err := r.Alloc(1)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Fill(gen, Request{Prompt: []int32{1}, Params: sampleRequest().Params, Extras: x}); err != nil {
				t.Fatal(err)
			}
			got, err := s.ExtrasFor(gen)
			if err != nil || !reflect.DeepEqual(got, x) {
				t.Fatalf("extras %v (%v), want %v", len(got.StopStrings), err, len(x.StopStrings))
			}
			if _, err := s.ExtrasFor(gen + 1); !errors.Is(err, ErrStale) {
				t.Errorf("another generation: %v, want ErrStale", err)
			}
			if err := s.Release(gen); err != nil {
				t.Fatal(err)
			}
			if free := r.extrasFree(); free != DefaultExtrasBytes {
				t.Errorf("after release %d bytes free, want all %d", free, DefaultExtrasBytes)
			}
		})
	}
}

// TestExtrasPool fills the pool, frees out of order and checks that the
// space coalesces, that a full pool is ErrExtrasFull and an oversized
// request ErrTooLong, and that a new process (Attach) rebuilds the same
// free space from the slot table, including after a dead apiserver's
// half-written slots are reclaimed.
func TestExtrasPool(t *testing.T) {
	sz := smallSizes
	sz.Slots = 6
	sz.ExtrasBytes = MinExtrasBytes
	r := newTestRegion(t, sz)
	fill := func(n int) (*Slot, uint32, error) {
		s, gen, err := r.Alloc(1)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Fill(gen, Request{Prompt: []int32{1}, Params: sampleRequest().Params,
			Extras: Extras{StopStrings: []string{strings.Repeat("a", n)}}})
		return s, gen, err
	}
	// Each takes 1 KiB of the 4 KiB pool (1000 bytes + 16 of headers, rounded to 64).
	var held []*Slot
	var gens []uint32
	for range 4 {
		s, gen, err := fill(1000)
		if err != nil {
			t.Fatal(err)
		}
		held, gens = append(held, s), append(gens, gen)
	}
	s, gen, err := fill(10)
	if !errors.Is(err, ErrExtrasFull) {
		t.Fatalf("fifth request: %v, want ErrExtrasFull", err)
	}
	s.Release(gen)
	s, gen, err = fill(MinExtrasBytes)
	if !errors.Is(err, ErrTooLong) {
		t.Fatalf("request larger than the pool: %v, want ErrTooLong", err)
	}
	s.Release(gen)

	// Another process sees slots 0..3 in use.
	a, err := AttachFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if free := a.extrasFree(); free != 0 {
		t.Errorf("attached process: %d bytes free, want 0", free)
	}
	held[1].Release(gens[1])
	held[2].Release(gens[2])
	if s, gen, err := fill(2000); err != nil { // needs the two freed neighbours merged
		t.Fatalf("2 KiB after freeing two adjacent 1 KiB blocks: %v", err)
	} else {
		held[1], gens[1] = s, gen
	}
	held[0].Release(gens[0])
	held[3].Release(gens[3])
	held[1].Release(gens[1])
	if free := r.extrasFree(); free != MinExtrasBytes {
		t.Errorf("all released: %d bytes free, want %d", free, MinExtrasBytes)
	}

	// A dead apiserver's Allocated slot with extras is reclaimed by the
	// next one, and its space is free there.
	s, _, err = fill(500)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AttachFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if free := b.extrasFree(); free != MinExtrasBytes-576 {
		t.Errorf("new apiserver before recovery: %d free, want %d", free, MinExtrasBytes-576)
	}
	rec := b.RecoverSlots(2)
	if len(rec) != 1 || rec[0].Slot != s.Index || rec[0].Action != ActionReclaimed {
		t.Fatalf("recovery: %+v", rec)
	}
	if free := b.extrasFree(); free != MinExtrasBytes {
		t.Errorf("after recovery: %d free, want %d", free, MinExtrasBytes)
	}
}

// TestExtrasCorrupt: a scribbled pool or slot is an error, never a panic.
func TestExtrasCorrupt(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	s, gen, _ := r.Alloc(1)
	if err := s.Fill(gen, Request{Prompt: []int32{1}, Params: sampleRequest().Params,
		Extras: Extras{StopStrings: []string{"stop"}}}); err != nil {
		t.Fatal(err)
	}
	off := s.ExtrasOff.Load()
	good := append([]byte(nil), r.extras.mem[off:off+uint64(s.ExtrasLen.Load())]...)
	for name, mut := range map[string]func(b []byte){
		"unknown kind":   func(b []byte) { b[0] = 99 },
		"long section":   func(b []byte) { b[4] = 0xff },
		"many strings":   func(b []byte) { b[8] = 0xff },
		"long string":    func(b []byte) { b[12] = 0xff },
		"trailing bytes": func(b []byte) { b[4]-- },
	} {
		b := append([]byte(nil), good...)
		mut(b)
		if _, err := decodeExtras(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	s.ExtrasOff.Store(uint64(len(r.extras.mem)))
	if _, err := s.ExtrasFor(gen); !errors.Is(err, ErrCorrupt) {
		t.Errorf("offset past the pool: %v", err)
	}
	if err := s.Transition(gen, StateAllocated, StateQueued); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Validate with extras past the pool: %v", err)
	}
	s.ExtrasOff.Store(off)
}

func FuzzDecodeExtras(f *testing.F) {
	f.Add((&Extras{StopStrings: []string{"a", "bc"}}).encode())
	f.Add((&Extras{ThinkBudget: &ThinkBudget{Budget: 3, Open: true, Start: []int32{1}, End: []int32{2, 3}}}).encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeExtras(b)
		if err != nil {
			return
		}
		// What parses re-encodes to the same bytes (one encoding per value).
		if got := x.encode(); string(got) != string(b) && !(x.Empty() && len(b) == 0) {
			// Padding bytes are not checked on decode; compare re-decoded values.
			y, err := decodeExtras(got)
			if err != nil || !reflect.DeepEqual(x, y) {
				t.Fatalf("re-encoding %x gives %x (%v)", b, got, err)
			}
		}
	})
}

// TestExtrasLogitBiasRejects: a bias map the decoder would refuse is never
// written, and a written one that was scribbled on does not decode.
func TestExtrasLogitBiasRejects(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	for name, bias := range map[string][]TokenBias{
		"negative id":   {{-1, 1}},
		"ids unsorted":  {{5, 1}, {4, 1}},
		"id twice":      {{5, 1}, {5, 2}},
		"infinite bias": {{5, float32(math.Inf(1))}},
		"not-a-number":  {{5, float32(math.NaN())}},
	} {
		s, gen, err := r.Alloc(1)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Fill(gen, Request{Prompt: []int32{1}, Params: sampleRequest().Params, Extras: Extras{LogitBias: bias}})
		if !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: %v, want ErrTooLong (refused before writing)", name, err)
		}
		s.Release(gen)
	}
	good := (&Extras{LogitBias: []TokenBias{{1, 1}, {2, 2}}}).encode()
	for name, mut := range map[string]func(b []byte){
		"zero count":    func(b []byte) { b[8] = 0 },
		"count too big": func(b []byte) { b[8] = 3 },
		"ids reversed":  func(b []byte) { b[12], b[20] = 2, 1 },
		"NaN bias":      func(b []byte) { copy(b[16:], []byte{0, 0, 0xc0, 0x7f}) },
	} {
		b := append([]byte(nil), good...)
		mut(b)
		if _, err := decodeExtras(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// TestExtrasThinkBudgetRejects: tags the decoder would refuse are never
// written, and scribbled payloads do not decode.
func TestExtrasThinkBudgetRejects(t *testing.T) {
	r := newTestRegion(t, smallSizes)
	long := make([]int32, maxThinkTagTokens+1)
	for name, tb := range map[string]*ThinkBudget{
		"no start":     {End: []int32{2}},
		"no end":       {Start: []int32{1}},
		"negative id":  {Start: []int32{-1}, End: []int32{2}},
		"17-token tag": {Start: []int32{1}, End: long},
	} {
		s, gen, err := r.Alloc(1)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Fill(gen, Request{Prompt: []int32{1}, Params: sampleRequest().Params, Extras: Extras{ThinkBudget: tb}})
		if !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: Fill %v, want ErrTooLong", name, err)
		}
		_ = s.Release(gen)
	}
	good := (&Extras{ThinkBudget: &ThinkBudget{Budget: 1, Start: []int32{1}, End: []int32{2}}}).encode()
	for name, mut := range map[string]func(b []byte){
		"open flag 2":   func(b []byte) { b[12] = 2 },
		"no start ids":  func(b []byte) { b[16] = 0 },
		"start ids 200": func(b []byte) { b[16] = 200 },
	} {
		b := append([]byte(nil), good...)
		mut(b)
		if _, err := decodeExtras(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decode %v, want ErrCorrupt", name, err)
		}
	}
}
