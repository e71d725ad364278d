package shmbackend

import (
	"reflect"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/shm"
)

// TestEventLogprobs plays infer and the detokenizer for a request that asks
// for 2 alternatives: each event carries its token's logprob, alternatives
// and rank; an entry infer overwrote (here: one of another generation)
// degrades to the chosen token alone; TopRead follows the copies.
func TestEventLogprobs(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	p := greedy(10)
	p.TopLogprobs = 2
	st := submit(t, b, 1, p)
	ref := h.recv().Slots[0]
	s := slotOf(t, h.region, ref)
	if s.Params().TopLogprobs != 2 {
		t.Fatalf("slot asks for %d alternatives", s.Params().TopLogprobs)
	}
	if err := s.Transition(ref.Gen, shm.StateQueued, shm.StateRunning); err != nil {
		t.Fatal(err)
	}
	toks := []int32{40, 41, 42}
	lps := []float32{-0.25, -1.5, -0.125}
	for i, tok := range toks {
		s.SetOutput(i, tok)
		s.SetOutputLogprob(i, lps[i])
		gen := ref.Gen
		if i == 1 {
			gen++ // a stale entry: as good as overwritten
		}
		alts := []shm.TopLogprob{{ID: tok, Logprob: lps[i]}, {ID: 7, Logprob: -3}}
		if err := s.WriteTop(gen, i, 1, alts); err != nil {
			t.Fatal(err)
		}
		fin := shm.FinishNone
		if i == len(toks)-1 {
			fin = shm.FinishLength
		}
		s.Publish(uint32(i+1), fin)
		if err := s.PushText(shm.TextPiece{Text: []byte("x"), SrcIndex: uint32(i), Final: fin != shm.FinishNone}); err != nil {
			t.Fatal(err)
		}
	}
	s.MarkInferReleased(ref.Gen, shm.StateRunning, shm.FinishLength)
	s.DetokDone.Store(1)
	b.bell.Ring()
	evs := collect(t, st)
	if len(evs) != 3 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	want := [][]apiserver.TokenLogprob{
		{{TokenID: 40, Logprob: -0.25}, {TokenID: 7, Logprob: -3}},
		{{TokenID: 41, Logprob: -1.5}},
		{{TokenID: 42, Logprob: -0.125}, {TokenID: 7, Logprob: -3}},
	}
	for i, ev := range evs {
		if !ev.HasLogprob || ev.Logprob != lps[i] || !reflect.DeepEqual(ev.TopLogprobs, want[i]) {
			t.Errorf("event %d: logprob %v (%v) alternatives %+v, want %v %+v", i, ev.Logprob, ev.HasLogprob, ev.TopLogprobs, lps[i], want[i])
		}
		if wantRank := map[bool]int{true: 0, false: 1}[i == 1]; ev.Rank != wantRank {
			t.Errorf("event %d: rank %d, want %d", i, ev.Rank, wantRank)
		}
	}
	waitFree(t, s) // released: TopRead was reset with the slot
}

// TestEventLogprobWithoutTop: a request without alternatives still gets
// every token's logprob, and no alternatives.
func TestEventLogprobWithoutTop(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	st := submit(t, b, 1, greedy(10))
	ref := h.recv().Slots[0]
	s := slotOf(t, h.region, ref)
	for i := range 2 {
		s.SetOutputLogprob(i, float32(-i)-0.5)
	}
	pipelineRun(t, s, ref.Gen, []int32{40, 41}, []string{"a", "b"}, shm.FinishStop)
	b.bell.Ring()
	evs := collect(t, st)
	for i, ev := range evs {
		if !ev.HasLogprob || ev.Logprob != float32(-i)-0.5 || ev.TopLogprobs != nil || ev.Rank != 0 {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
}
