package engine_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/engine/enginetest"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// sumMod4 is a stateful test processor: it allows only the tokens t with
// t%4 == (n + sum of the n tokens accepted so far)%4, so every token
// depends on the whole history it was shown. A processor rebuilt without replay, or
// replayed wrongly, allows other tokens than an uninterrupted one.
type sumMod4 struct {
	sum, n   int
	accepted *[]int32 // every Accept, for the test to inspect (nil: not recorded)
	failAt   int      // Process fails once this many tokens were accepted (0: never)
}

func (p *sumMod4) Process(row []float32) error {
	n := 0
	if p.accepted != nil {
		n = len(*p.accepted)
	}
	if p.failAt > 0 && n >= p.failAt {
		return errors.New("grammar exhausted")
	}
	for t := range row {
		if t%4 != (p.sum+p.n)%4 {
			row[t] = float32(math.Inf(-1))
		}
	}
	return nil
}

func (p *sumMod4) Accept(tok int32) error {
	if int(tok)%4 != (p.sum+p.n)%4 {
		return fmt.Errorf("token %d not allowed after %d tokens summing to %d", tok, p.n, p.sum)
	}
	p.sum += int(tok)
	p.n++
	if p.accepted != nil {
		*p.accepted = append(*p.accepted, tok)
	}
	return nil
}

func withProcessor(reqs []engine.Request) []engine.Request {
	out := slices.Clone(reqs)
	for i := range out {
		out[i].NewProcessor = func() (engine.LogitsProcessor, error) { return &sumMod4{}, nil }
	}
	return out
}

// allowed checks the processor's rule over a whole stream.
func allowed(t *testing.T, id uint64, toks []int32) {
	t.Helper()
	sum := 0
	for k, tok := range toks {
		if int(tok)%4 != (sum+k)%4 {
			t.Fatalf("request %d token %d = %d: not allowed after sum %d (Process did not reach the sampler)", id, k, tok, sum)
		}
		sum += int(tok)
	}
}

// TestLogitsProcessorReplay: with a history-dependent processor, the token
// streams of 16 requests are the same run together with KV for all, run
// one at a time, run under KV pressure (evictions drop and rebuild the
// processors) and resumed from their generated tokens on a fresh engine.
func TestLogitsProcessorReplay(t *testing.T) {
	reqs := withProcessor(chunkRequests(16))
	fake := func() *enginetest.FakeModel {
		f := enginetest.NewFakeModel(100, 256)
		f.ChunkRounding = true
		return f
	}
	base := engine.Options{ChunkedPrefillSize: 7, BatchMaxTokens: 10, MaxReqTotalLen: 100}
	big := base
	big.MaxTotalTokens = 4096
	want, _ := runStreams(t, fake(), big, reqs)
	for id, toks := range want {
		allowed(t, id, toks)
	}
	alone := map[uint64][]int32{}
	for _, r := range reqs {
		got, _ := runStreams(t, fake(), big, []engine.Request{r})
		alone[r.ID] = got[r.ID]
	}
	sameStreams(t, "one at a time", want, alone)

	tiny := base
	tiny.MaxTotalTokens = 100
	got, st := runStreams(t, fake(), tiny, reqs)
	if st.Evictions == 0 {
		t.Fatal("tiny pool: no evictions")
	}
	sameStreams(t, fmt.Sprintf("tiny pool (%d evictions)", st.Evictions), want, got)

	resumed := slices.Clone(reqs)
	for i := range resumed {
		r := &resumed[i]
		r.AlreadyGenerated = want[r.ID][:1+i*5%(len(want[r.ID])-1)]
	}
	rest, _ := runStreams(t, fake(), tiny, resumed)
	for _, r := range resumed {
		rest[r.ID] = append(slices.Clone(r.AlreadyGenerated), rest[r.ID]...)
	}
	sameStreams(t, "resumed", want, rest)
}

// TestLogitsProcessorAccepts: a rebuilt processor is shown the generated
// tokens again, in order, and the live one every new token once.
func TestLogitsProcessorAccepts(t *testing.T) {
	var builds [][]int32
	req := engine.Request{ID: 1, Prompt: prompt(2, 5), Params: greedy(12), AlreadyGenerated: []int32{8, 13}}
	req.Params.IgnoreEOS = true
	req.NewProcessor = func() (engine.LogitsProcessor, error) {
		builds = append(builds, nil)
		return &sumMod4{accepted: &builds[len(builds)-1]}, nil
	}
	e := newEngine(t, enginetest.NewFakeModel(100, 256), engine.Options{MaxTotalTokens: 512})
	if err := e.Add(req); err != nil {
		t.Fatal(err)
	}
	res := runAll(t, e)[1]
	all := append([]int32{8, 13}, res.tokens...)
	if len(builds) != 1 || !slices.Equal(builds[0], all) {
		t.Fatalf("processor built %d times, accepted %v; want once, %v", len(builds), builds, all)
	}
	allowed(t, 1, all)
}

// TestLogitsProcessorErrors: a factory error refuses the request in Add; a
// Process error ends it with FinishError and frees its KV; a replay that
// the processor refuses also fails Add.
func TestLogitsProcessorErrors(t *testing.T) {
	e := newEngine(t, enginetest.NewFakeModel(100, 256), engine.Options{MaxTotalTokens: 512})
	bad := engine.Request{ID: 1, Prompt: prompt(1, 4), Params: greedy(5),
		NewProcessor: func() (engine.LogitsProcessor, error) { return nil, errors.New("bad schema") }}
	if err := e.Add(bad); !errors.Is(err, engine.ErrBadRequest) {
		t.Errorf("factory error: %v, want ErrBadRequest", err)
	}
	refused := engine.Request{ID: 2, Prompt: prompt(1, 4), Params: greedy(5), AlreadyGenerated: []int32{3}, // 3%4 != 0
		NewProcessor: func() (engine.LogitsProcessor, error) { return &sumMod4{}, nil }}
	if err := e.Add(refused); !errors.Is(err, engine.ErrBadRequest) {
		t.Errorf("replay of a refused token: %v, want ErrBadRequest", err)
	}
	var acc []int32
	failing := engine.Request{ID: 3, Prompt: prompt(1, 4), Params: greedy(20),
		NewProcessor: func() (engine.LogitsProcessor, error) { return &sumMod4{accepted: &acc, failAt: 3}, nil }}
	failing.Params.IgnoreEOS = true
	if err := e.Add(failing); err != nil {
		t.Fatal(err)
	}
	var last engine.Output
	for e.HasWork() {
		outs, err := e.Step()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			last = o
		}
	}
	if !last.Finished || last.Reason != engine.FinishError || last.Err == nil || last.Token != -1 || len(acc) != 3 {
		t.Fatalf("last output %+v after %d tokens, want FinishError after 3", last, len(acc))
	}
	checkIdleKV(t, e)
}

// TestOutputTop: alternatives come from the row the token was drawn from
// (the processor's mask applied), best first, with the chosen token's rank
// and its logprob equal to Output.LogProb; none unless asked.
func TestOutputTop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params sampler.Params
		proc   bool
	}{
		{"greedy", greedy(10), false},
		{"seeded", seeded(10, 5), false},
		{"masked", seeded(10, 6), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.params
			p.TopLogprobs, p.IgnoreEOS = 5, true
			e := newEngine(t, enginetest.NewFakeModel(100, 256), engine.Options{MaxTotalTokens: 512})
			reqs := []engine.Request{{ID: 1, Prompt: prompt(3, 6), Params: p}, {ID: 2, Prompt: prompt(4, 6), Params: greedy(10)}}
			if tc.proc {
				reqs[0].NewProcessor = func() (engine.LogitsProcessor, error) { return &sumMod4{}, nil }
			}
			for _, r := range reqs {
				if err := e.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			sum, n := 0, 0
			for e.HasWork() {
				outs, err := e.Step()
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					if o.ID == 2 {
						if o.Top != nil || o.Rank != 0 {
							t.Fatalf("request without top_logprobs got %v rank %d", o.Top, o.Rank)
						}
						continue
					}
					n++
					if len(o.Top) != 5 || o.Rank < 1 {
						t.Fatalf("output %+v: want 5 alternatives and a rank", o)
					}
					for k, a := range o.Top {
						if k > 0 && a.Logprob > o.Top[k-1].Logprob {
							t.Errorf("alternatives not best first: %v", o.Top)
						}
						if tc.proc && int(a.ID)%4 != (sum+n-1)%4 {
							t.Errorf("alternative %d is masked by the processor", a.ID)
						}
						if a.ID == o.Token && (a.Logprob != o.LogProb || o.Rank != k+1) {
							t.Errorf("chosen token at %d (rank %d) logprob %v, Output.LogProb %v", k, o.Rank, a.Logprob, o.LogProb)
						}
					}
					if !tc.params.DoSample && o.Top[0].ID != o.Token {
						t.Errorf("greedy token %d is not the best alternative %v", o.Token, o.Top)
					}
					sum += int(o.Token)
				}
			}
			if n != 10 {
				t.Fatalf("%d outputs, want 10", n)
			}
		})
	}
}
