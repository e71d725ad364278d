package shmbackend

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/constrain"
	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

type harness struct {
	t      *testing.T
	region *shm.Region
	taken  [][]shm.SlotGen // announced groups not yet returned by recv
}

// announced is one group as the router takes it from its intake ring.
type announced struct {
	GroupID uint64
	Slots   []shm.SlotGen
}

func newHarness(t *testing.T, slots uint32) *harness {
	t.Helper()
	dir := t.TempDir()
	r, err := shm.Create(shm.CreateOptions{BaseDir: dir, Instance: "t", NoReserve: true,
		Sizes: shm.Sizes{Slots: slots, MaxReqTotalLen: 64}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy() })
	return &harness{t: t, region: r}
}

func (h *harness) backend() *Backend {
	h.t.Helper()
	b, err := New(Options{Region: h.region, MaxTotalTokens: 1000, Log: zerolog.Nop(),
		DecodeIDs: func(ids []int32) string { return "<decoded>" }})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(b.Close)
	return b
}

// recv plays the router: it waits on the router's bell for the next group
// announced on the intake ring, and checks that the detokenizer's ring
// already holds the same group (it is announced there first).
func (h *harness) recv() announced {
	h.t.Helper()
	rs, _ := h.region.Role(shm.RoleRouter)
	bell := h.region.Bell(rs)
	for deadline := time.Now().Add(5 * time.Second); len(h.taken) == 0; {
		seen := bell.Seq()
		var st shm.IntakeStats
		if h.taken, st = h.region.Intake().Take(h.taken); st != (shm.IntakeStats{}) {
			h.t.Fatalf("intake stepped over %+v", st)
		}
		if len(h.taken) == 0 && !bell.Wait(seen, time.Until(deadline)) {
			h.t.Fatal("no group announced within 5s")
		}
	}
	g := h.taken[0]
	h.taken = h.taken[1:]
	if d, st := h.region.DetokIntake().Take(nil); len(d) != 1 || !slices.Equal(d[0], g) || st != (shm.IntakeStats{}) {
		h.t.Fatalf("the detokenizer's ring holds %v %+v, the router's %v", d, st, g)
	}
	s, err := h.region.Slot(int(g[0].Slot))
	if err != nil {
		h.t.Fatal(err)
	}
	return announced{GroupID: s.GroupID.Load(), Slots: g}
}

func greedy(maxNew int) apiserver.SamplingParams {
	return apiserver.SamplingParams{Params: sampler.Params{Temperature: 1, TopP: 1, TopK: 1, RepetitionPenalty: 1, MaxNewTokens: maxNew,
		MinNewTokens: 1, Seed: -1, DecayStart: 1, DecayFactor: 1}}
}

func submit(t *testing.T, b *Backend, n int, p apiserver.SamplingParams) *apiserver.Stream {
	t.Helper()
	st, err := b.Submit(context.Background(), &apiserver.Group{Prompt: []int32{1, 5, 6}, N: n, Params: p, Arrival: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func slotOf(t *testing.T, r *shm.Region, ref shm.SlotGen) *shm.Slot {
	t.Helper()
	s, err := r.Slot(int(ref.Slot))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSubmitFillsSlots(t *testing.T) {
	h := newHarness(t, 4)
	b := h.backend()
	p := greedy(10)
	p.StopSequences = []apiserver.StopSequence{{Text: "The end", IDs: []int32{9, 10}}, {IDs: []int32{7}}, {IDs: []int32{3, 4}}}
	p.BannedTokenIDs = []int32{4, 2}
	p.DecayStart, p.DecayFactor = 3, 1.5
	p.LogitBias = map[int32]float32{9: -100, 3: 0.5, 60: 100}
	st := submit(t, b, 2, p)
	g := h.recv()
	if g.GroupID != st.ID || len(g.Slots) != 2 {
		t.Fatalf("message %+v for group %d", g, st.ID)
	}
	var seeds []int64
	for i, ref := range g.Slots {
		s := slotOf(t, h.region, ref)
		if err := s.Check(ref.Gen, shm.StateQueued); err != nil {
			t.Fatal(err)
		}
		prompt, _ := s.Prompt()
		sp := s.Params()
		if !slices.Equal(prompt, []int32{1, 5, 6}) || sp.MaxNewTokens != 10 || sp.TopK != 1 || !slices.Equal(sp.StopTokenIDs, []int32{7}) ||
			!slices.Equal(sp.BannedTokenIDs, []int32{4, 2}) || sp.DecayStart != 3 || sp.DecayFactor != 1.5 {
			t.Errorf("slot %d: prompt %v params %+v", i, prompt, sp)
		}
		if s.RequestID.Load() != st.ID+uint64(i) || s.GroupID.Load() != st.ID || s.OwnerEpoch.Load() != b.Epoch() {
			t.Errorf("slot %d: ids %d/%d epoch %d", i, s.RequestID.Load(), s.GroupID.Load(), s.OwnerEpoch.Load())
		}
		x, err := s.ExtrasFor(ref.Gen)
		if stops := x.StopStrings; err != nil || !slices.Equal(stops, []string{"The end", "<decoded>"}) {
			t.Errorf("slot %d: stop strings %q, %v", i, stops, err)
		}
		if want := []shm.TokenBias{{ID: 3, Bias: 0.5}, {ID: 9, Bias: -100}, {ID: 60, Bias: 100}}; !slices.Equal(x.LogitBias, want) {
			t.Errorf("slot %d: logit bias %v, want %v (ids increasing)", i, x.LogitBias, want)
		}
		seeds = append(seeds, sp.Seed)
	}
	if seeds[0] < 0 || seeds[1] < 0 || seeds[0] == seeds[1] {
		t.Errorf("seeds %v: want two different concrete seeds", seeds)
	}
}

func TestSubmitRefuses(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	cases := []struct {
		name string
		n    int
		edit func(p *apiserver.SamplingParams)
		want error
	}{
		{"more sequences than slots", 3, nil, apiserver.ErrOverloaded},
		{"logit_bias over a slot's room", 1, func(p *apiserver.SamplingParams) {
			p.BannedTokenIDs = make([]int32, shm.MaxBannedTokenIDs+1)
		}, apiserver.ErrInvalidRequest},
		{"top logprobs", 1, func(p *apiserver.SamplingParams) { p.TopLogprobs = shm.MaxTopLogprobs + 1 }, apiserver.ErrInvalidRequest},
		{"too long for a slot", 1, func(p *apiserver.SamplingParams) { p.MaxNewTokens = 100 }, apiserver.ErrInvalidRequest},
		{"n out of range", 9, nil, apiserver.ErrInvalidRequest},
	}
	for _, c := range cases {
		p := greedy(10)
		if c.edit != nil {
			c.edit(&p)
		}
		_, err := b.Submit(context.Background(), &apiserver.Group{Prompt: []int32{1}, N: c.n, Params: p, Arrival: time.Now()})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	p := greedy(10)
	p.AllowedTokenIDs = []int32{3, 4}
	_, err := b.Submit(context.Background(), &apiserver.Group{Prompt: []int32{1}, N: 1, Params: p, Arrival: time.Now(),
		Constraint: &apiserver.Constraint{Spec: constrain.Spec{Grammar: grammar.Spec{Kind: grammar.KindRegex, Text: "a+"}}}})
	if !errors.Is(err, apiserver.ErrInvalidRequest) || !strings.Contains(err.Error(), "allowed_token_ids") {
		t.Errorf("allowed_token_ids with a constraint: %v, want an invalid request naming it", err)
	}
	for i := 0; i < h.region.NumSlots(); i++ {
		if s, _ := h.region.Slot(i); s != nil {
			if st, _ := s.Load(); st != shm.StateFree {
				t.Errorf("slot %d left %v by a refused submit", i, st)
			}
		}
	}
}

// pipelineRun plays router, infer and detokenizer for one slot: tokens,
// one piece each (the second one queued twice, as a restarted
// detokenizer may), and the finish.
func pipelineRun(t *testing.T, s *shm.Slot, gen uint32, toks []int32, texts []string, fin shm.FinishStatus) {
	t.Helper()
	if err := s.Transition(gen, shm.StateQueued, shm.StateRunning); err != nil {
		t.Fatal(err)
	}
	for i, tok := range toks {
		s.SetOutput(i, tok)
		st := shm.FinishNone
		if i == len(toks)-1 {
			st = fin
		}
		s.Publish(uint32(i+1), st)
		piece := shm.TextPiece{Text: []byte(texts[i]), SrcIndex: uint32(i), Final: i == len(toks)-1}
		if err := s.PushText(piece); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			s.PushText(piece) // the repeat
		}
	}
	if err := s.MarkInferReleased(gen, shm.StateRunning, fin); err != nil {
		t.Fatal(err)
	}
	s.DetokDone.Store(1)
}

func collect(t *testing.T, st *apiserver.Stream) []apiserver.Event {
	t.Helper()
	var evs []apiserver.Event
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-st.Events:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("events channel not closed")
		}
	}
}

// waitFree waits until slot s is free again.
func waitFree(t *testing.T, s *shm.Slot) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st, _ := s.Load(); st == shm.StateFree {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := s.Load()
	t.Fatalf("slot %d still %v", s.Index, st)
}

func TestEventsAndRelease(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	p := greedy(10)
	p.StopSequences = []apiserver.StopSequence{{Text: "zz"}}
	st := submit(t, b, 1, p)
	ref := h.recv().Slots[0]
	s := slotOf(t, h.region, ref)
	pipelineRun(t, s, ref.Gen, []int32{40, 41, 42}, []string{"a", "b", "c"}, shm.FinishLength)
	b.bell.Ring()
	evs := collect(t, st)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3 (the repeat dropped): %+v", len(evs), evs)
	}
	for i, ev := range evs {
		if ev.TokenID != int32(40+i) || ev.Text != string(rune('a'+i)) || ev.CountOutputTokens != i+1 || ev.Finished != (i == 2) {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	if evs[2].Reason != apiserver.FinishLength {
		t.Errorf("finish reason %q", evs[2].Reason)
	}
	waitFree(t, s)
	if s.ExtrasLen.Load() != 0 {
		t.Errorf("released slot still names %d bytes of extras", s.ExtrasLen.Load())
	}
	if b.Active() != 0 {
		t.Errorf("%d groups still active", b.Active())
	}
}

// TestFailedRequestSaysWhere: a request infer or the router ended with an
// error reaches the client with a message naming the slot and the logs
// that hold the cause, not an empty "generation failed: ".
func TestFailedRequestSaysWhere(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	st := submit(t, b, 1, greedy(10))
	ref := h.recv().Slots[0]
	s := slotOf(t, h.region, ref)
	pipelineRun(t, s, ref.Gen, []int32{40}, []string{"a"}, shm.FinishError)
	b.bell.Ring()
	evs := collect(t, st)
	last := evs[len(evs)-1]
	if want := fmt.Sprintf("slot %d;", s.Index); last.Reason != apiserver.FinishError || !strings.Contains(last.Err, want) || !strings.Contains(last.Err, "infer") {
		t.Fatalf("last event %+v, want an error naming %q and the infer log", last, want)
	}
}

func TestAbort(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	st := submit(t, b, 1, greedy(10))
	ref := h.recv().Slots[0]
	s := slotOf(t, h.region, ref)
	b.Abort(st.ID)
	b.Abort(st.ID) // idempotent
	b.Abort(12345) // unknown
	if s.Abort.Load() != 1 {
		t.Fatal("abort flag not set")
	}
	collect(t, st)
	// the router drops it, the detokenizer queues its finish marker
	if err := s.MarkInferReleased(ref.Gen, shm.StateQueued, shm.FinishAborted); err != nil {
		t.Fatal(err)
	}
	s.PushText(shm.TextPiece{Final: true})
	s.DetokDone.Store(1)
	b.bell.Ring()
	waitFree(t, s)
}

// TestRecovery: a new apiserver aborts and frees the slots of the one
// before it.
func TestRecovery(t *testing.T) {
	h := newHarness(t, 4)
	old := h.backend()
	submit(t, old, 2, greedy(10))
	g := h.recv()
	old.Close() // the old apiserver dies with its slots in flight
	b := h.backend()
	if b.Epoch() != old.Epoch()+1 {
		t.Errorf("epoch %d after %d", b.Epoch(), old.Epoch())
	}
	for _, ref := range g.Slots {
		s := slotOf(t, h.region, ref)
		if s.Abort.Load() != 1 || s.OwnerEpoch.Load() != b.Epoch() {
			t.Fatalf("slot %d: abort %d owner epoch %d", s.Index, s.Abort.Load(), s.OwnerEpoch.Load())
		}
		s.MarkInferReleased(ref.Gen, shm.StateQueued, shm.FinishAborted)
		s.PushText(shm.TextPiece{Final: true})
		s.DetokDone.Store(1)
	}
	b.bell.Ring()
	for _, ref := range g.Slots {
		waitFree(t, slotOf(t, h.region, ref))
	}
}

func TestStatus(t *testing.T) {
	h := newHarness(t, 2)
	b := h.backend()
	if b.Ready() {
		t.Error("ready before router and infer started")
	}
	if b.MaxTotalTokens() != 1000 {
		t.Errorf("max total tokens %d before infer published it", b.MaxTotalTokens())
	}
	h.region.BeginEpoch(shm.RoleRouter)
	h.region.BeginEpoch(shm.RoleInfer)
	l := h.region.Load()
	l.MaxTotalTokenNum.Store(800)
	l.FreeKVTokens.Store(600)
	l.EvictableKVTokens.Store(100)
	l.EstimatedPeak.Store(400)
	if !b.Ready() || b.MaxTotalTokens() != 800 {
		t.Errorf("ready %v max %d", b.Ready(), b.MaxTotalTokens())
	}
	tl := b.TokenLoad()
	if tl.CurrentLoad[0] != 0.125 || tl.DynamicMaxLoad[0] != 0.5 {
		t.Errorf("token load %+v", tl)
	}
	if !b.Healthy() {
		t.Error("idle server not healthy")
	}
	l.Running.Store(1)
	l.LastProgressUnixNano.Store(time.Now().Add(-time.Hour).UnixNano())
	if b.Healthy() {
		t.Error("healthy with requests in flight and no progress for an hour")
	}
	l.Running.Store(0)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	inferState, _ := h.region.Role(shm.RoleInfer)
	inferState.Pid.Store(uint32(dead.Process.Pid)) // infer died; its successor is still loading
	if b.Healthy() {
		t.Error("healthy while infer's process is gone")
	}
}
