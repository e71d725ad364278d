package cuda

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/model"
)

func TestPlanRejectsBadBatches(t *testing.T) {
	ok := func() *model.Batch {
		return &model.Batch{Tokens: []int32{5, 6, 7}, Positions: []int32{0, 1, 4},
			Seqs: []model.Seq{{Start: 0, Len: 2, Slots: []int32{3, 9}, WantLogits: true},
				{Start: 2, Len: 1, Slots: []int32{0, 1, 2, 4, 8}, WantLogits: true}}}
	}
	tests := map[string]struct {
		edit func(b *model.Batch)
		want string
	}{
		"positions count":   {func(b *model.Batch) { b.Positions = b.Positions[:2] }, "3 tokens but 2 positions"},
		"gap between seqs":  {func(b *model.Batch) { b.Seqs[1].Start = 3 }, "must start at 2"},
		"empty seq":         {func(b *model.Batch) { b.Seqs[0].Len = 0 }, "be non-empty"},
		"past the tokens":   {func(b *model.Batch) { b.Seqs[1].Len = 2 }, "end by 3"},
		"uncovered tokens":  {func(b *model.Batch) { b.Seqs = b.Seqs[:1] }, "cover 2 of 3 tokens"},
		"negative position": {func(b *model.Batch) { b.Positions[0] = -1 }, "position -1 outside"},
		"position too far":  {func(b *model.Batch) { b.Positions[2] = 5 }, "position 5 outside its 5 slots"},
		"token id":          {func(b *model.Batch) { b.Tokens[1] = 100 }, "token id 100 outside the vocabulary"},
		"negative token":    {func(b *model.Batch) { b.Tokens[1] = -3 }, "token id -3"},
		"slots too long":    {func(b *model.Batch) { b.Seqs[0].Slots = append(b.Seqs[0].Slots, 1) }, "last new token at position 1 but 3 slots"},
		"slot outside pool": {func(b *model.Batch) { b.Seqs[1].Slots[3] = 10 }, "slot 10 outside the KV pool (10 slots)"},
		"negative slot":     {func(b *model.Batch) { b.Seqs[0].Slots[0] = -1 }, "slot -1 outside"},
	}
	var p plan
	if err := p.build(ok(), 100, 10, 2); err != nil {
		t.Fatalf("valid batch: %v", err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := ok()
			tc.edit(b)
			err := p.build(b, 100, 10, 2)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPlanPacking(t *testing.T) {
	// A prefill of 5 tokens (positions 2..6 after a cached prefix of 2) and
	// a decode step; group 8 gives 2 rows per attention tile.
	b := &model.Batch{
		Tokens:    []int32{10, 11, 12, 13, 14, 20},
		Positions: []int32{2, 3, 4, 5, 6, 3},
		Seqs: []model.Seq{
			{Start: 0, Len: 5, Slots: []int32{40, 41, 7, 8, 9, 30, 31}, WantLogits: true},
			{Start: 5, Len: 1, Slots: []int32{1, 2, 3, 50}, WantLogits: true},
		},
	}
	var p plan
	if err := p.build(b, 100, 64, 8); err != nil {
		t.Fatal(err)
	}
	if p.n != 6 || p.nOut != 2 || p.rows != 2 || p.nTiles != 4 {
		t.Fatalf("n=%d nOut=%d rows=%d tiles=%d, want 6 2 2 4", p.n, p.nOut, p.rows, p.nTiles)
	}
	seg := func(off, n int) []int32 { return p.buf[off : off+n] }
	checks := []struct {
		name      string
		got, want []int32
	}{
		{"tokens", seg(0, 6), b.Tokens},
		{"positions", seg(p.offPos, 6), b.Positions},
		{"write slots", seg(p.offWrite, 6), []int32{7, 8, 9, 30, 31, 50}},
		{"output rows", seg(p.offOut, 2), []int32{4, 5}},
		// {first token, rows, slot offset, context}
		{"tiles", seg(p.offTiles, 16), []int32{0, 2, 0, 4, 2, 2, 0, 6, 4, 1, 0, 7, 5, 1, 7, 4}},
		{"slots", seg(p.offSlots, 11), []int32{40, 41, 7, 8, 9, 30, 31, 1, 2, 3, 50}},
	}
	for _, c := range checks {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(p.buf) != p.offSlots+11 {
		t.Errorf("buffer has %d entries, want %d", len(p.buf), p.offSlots+11)
	}
	if !slices.Equal(p.outSeq, []int{0, 1}) {
		t.Errorf("outSeq = %v", p.outSeq)
	}
	// A pure decode batch reuses the buffers and uses one row per tile.
	d := &model.Batch{Tokens: []int32{1}, Positions: []int32{0}, Seqs: []model.Seq{{Start: 0, Len: 1, Slots: []int32{5}}}}
	if err := p.build(d, 100, 64, 8); err != nil {
		t.Fatal(err)
	}
	if p.rows != 1 || p.nOut != 0 || len(p.outSeq) != 0 || !slices.Equal(p.buf[p.offTiles:p.offTiles+4], []int32{0, 1, 0, 1}) {
		t.Errorf("decode plan: rows=%d nOut=%d outSeq=%v tiles=%v", p.rows, p.nOut, p.outSeq, p.buf[p.offTiles:p.offTiles+4])
	}
}

func TestPlanSteadyStateDoesNotAllocate(t *testing.T) {
	b := &model.Batch{Tokens: []int32{1, 2}, Positions: []int32{7, 3},
		Seqs: []model.Seq{{Start: 0, Len: 1, Slots: make([]int32, 8), WantLogits: true},
			{Start: 1, Len: 1, Slots: make([]int32, 4), WantLogits: true}}}
	var p plan
	if err := p.build(b, 10, 10, 4); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { _ = p.build(b, 10, 10, 4) }); n != 0 {
		t.Errorf("build allocates %v times per call", n)
	}
}

func TestKargs(t *testing.T) {
	var a kargs
	a.reset().ptr(0xdeadbeef12345678).i32(-2).i64(-3).f32(1.5).ptr(0)
	want := []uint64{0xdeadbeef12345678, 0xfffffffe, 0xfffffffffffffffd, uint64(math.Float32bits(1.5)), 0}
	if !slices.Equal(a.v, want) || string(a.types) != "pilfp" {
		t.Fatalf("packed %x (%s), want %x (pilfp)", a.v, a.types, want)
	}
	if a.reset(); len(a.v) != 0 {
		t.Fatal("reset kept arguments")
	}
}
