package infer

import (
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/sampler"
	"github.com/lightllm-go/lightllm/shm"
)

// waveModel is a test double: a Forwarder whose logits are a fixed smooth
// function of the last token and its position, so every position has a
// different, spread-out distribution that a test can recompute.
type waveModel struct{ vocab int }

func (m waveModel) Config() engine.ModelConfig {
	return engine.ModelConfig{Arch: "wave", Vocab: m.vocab, MaxPos: 128, BOS: 1, EOS: []int32{2}}
}

func (m waveModel) NewKV(int) *engine.KV { return nil }

func (m waveModel) Forward(b *engine.Batch, _ *engine.KV, logits [][]float32) error {
	for i, s := range b.Seqs {
		if s.WantLogits {
			last := s.Start + s.Len - 1
			waveRow(logits[i], b.Tokens[last], b.Positions[last])
		}
	}
	return nil
}

func waveRow(row []float32, tok, pos int32) {
	for id := range row {
		row[id] = 3 * float32(math.Sin(float64(id*7+int(tok)*13+int(pos)*3)*0.37))
	}
	row[2] = -50 // EOS: never chosen, so requests run to max_new_tokens
}

// bruteTop is the reference: log_softmax(row*invT), all ids best first.
func bruteTop(row []float32, invT float64) ([]int32, []float64) {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	var z float64
	for _, v := range row {
		z += math.Exp((float64(v) - m) * invT)
	}
	ids := make([]int32, len(row))
	lps := make([]float64, len(row))
	for i := range ids {
		ids[i] = int32(i)
		lps[i] = (float64(row[i])-m)*invT - math.Log(z)
	}
	sort.SliceStable(ids, func(a, b int) bool { return row[ids[a]] > row[ids[b]] })
	return ids, lps
}

// TestWorkerLogprobs runs requests with and without alternatives, greedy
// and sampled, next to one that is aborted (so the step outputs carry
// token-less entries too), and checks every published logprob, rank and
// alternative against the model's distribution.
func TestWorkerLogprobs(t *testing.T) {
	const vocab = 48
	r := newRegion(t)
	eng, err := engine.New(waveModel{vocab}, engine.Options{MaxTotalTokens: 512, MaxReqTotalLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(r, eng, WorkerOptions{MaxTotalTokens: 512, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		prompt []int32
		p      sampler.Params
		invT   float64
	}
	greedy := func(n int, top int) sampler.Params {
		return sampler.Params{MaxNewTokens: n, TopK: 1, Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: 3, TopLogprobs: top}
	}
	sampled := sampler.Params{MaxNewTokens: 12, TopK: -1, Temperature: 0.7, TopP: 1, RepetitionPenalty: 1, Seed: 11,
		DoSample: true, TopLogprobs: 4}
	reqs := []req{
		{[]int32{1, 5, 6}, greedy(10, 5), 1},
		{[]int32{1, 9}, sampled, 1 / 0.7},
		{[]int32{1, 30}, greedy(12, 0), 1},
		{[]int32{1, 20, 21}, greedy(40, 20), 1}, // aborted after a few steps
	}
	var slots []*shm.Slot
	var gens []uint32
	for _, q := range reqs {
		s, gen := submit(t, r, q.prompt, q.p)
		slots, gens = append(slots, s), append(gens, gen)
	}
	for range 4 {
		if _, err := w.Iterate(); err != nil {
			t.Fatal(err)
		}
	}
	slots[3].Abort.Store(1)
	runUntil(t, w, 100, func() bool { return w.Live() == 0 })

	row := make([]float32, vocab)
	var buf []shm.TopLogprob
	for i, q := range reqs {
		s, gen := slots[i], gens[i]
		outs := outputs(t, s)
		if i < 3 && len(outs) != q.p.MaxNewTokens {
			t.Fatalf("request %d: %d outputs, want %d", i, len(outs), q.p.MaxNewTokens)
		}
		seq := append(slices.Clone(q.prompt), outs...)
		for k, tok := range outs {
			pos := len(q.prompt) + k - 1
			waveRow(row, seq[pos], int32(pos))
			ids, lps := bruteTop(row, q.invT)
			lp, err := s.OutputLogprob(uint32(k))
			if err != nil || math.Abs(float64(lp)-lps[tok]) > 1e-4 {
				t.Fatalf("request %d token %d: logprob %v (%v), want %v", i, k, lp, err, lps[tok])
			}
			alts, rank, ok := s.ReadTop(gen, uint32(k), buf)
			buf = alts
			if q.p.TopLogprobs == 0 {
				continue
			}
			if !ok || len(alts) != q.p.TopLogprobs {
				t.Fatalf("request %d token %d: %d alternatives (ok %v), want %d", i, k, len(alts), ok, q.p.TopLogprobs)
			}
			if want := slices.Index(ids, tok) + 1; rank != want {
				t.Errorf("request %d token %d: rank %d, want %d", i, k, rank, want)
			}
			for j, a := range alts {
				if a.ID != ids[j] || math.Abs(float64(a.Logprob)-lps[a.ID]) > 1e-4 {
					t.Errorf("request %d token %d alternative %d: %+v, want %d %v", i, k, j, a, ids[j], lps[ids[j]])
				}
				if a.ID == tok && a.Logprob != lp {
					t.Errorf("request %d token %d: chosen token's alternative %v differs from its logprob %v", i, k, a.Logprob, lp)
				}
			}
		}
		if i == 1 {
			// Sampling at temperature 0.7 does not always pick the best token.
			picks := 0
			for k := range outs {
				if _, rank, _ := s.ReadTop(gen, uint32(k), buf); rank > 1 {
					picks++
				}
			}
			if picks == 0 {
				t.Error("the sampled request always took the most likely token: the temperature did not reach the sampler?")
			}
		}
	}
}

// TestWorkerTopRingFull: with nobody copying entries out, infer waits for
// the apiserver at most topWaitBudget per request, then overwrites; with a
// reader advancing TopRead every entry arrives.
func TestWorkerTopRingFull(t *testing.T) {
	for _, reader := range []bool{false, true} {
		r, err := shm.Create(shm.CreateOptions{BaseDir: t.TempDir(), Instance: "t", NoReserve: true,
			Sizes: shm.Sizes{Slots: 2, MaxReqTotalLen: 64, TopRingEntries: 4}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Destroy()
		eng, err := engine.New(waveModel{32}, engine.Options{MaxTotalTokens: 256, MaxReqTotalLen: 64})
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWorker(r, eng, WorkerOptions{MaxTotalTokens: 256, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		const n = 10
		s, gen := submit(t, r, []int32{1, 4}, sampler.Params{MaxNewTokens: n, TopK: 1, Temperature: 1, TopP: 1,
			RepetitionPenalty: 1, Seed: 1, TopLogprobs: 2})
		got := 0
		var buf []shm.TopLogprob
		copyOut := func() { // the apiserver's side
			for i := s.TopRead.Load(); i < s.CandetokenOutLen.Load(); i++ {
				if alts, _, ok := s.ReadTop(gen, i, buf); ok && len(alts) == 2 {
					got++
				}
				s.TopRead.Store(i + 1)
			}
		}
		start := time.Now()
		for i := 0; i < 100 && s.InferReleased.Load() == 0; i++ {
			if _, err := w.Iterate(); err != nil {
				t.Fatal(err)
			}
			if reader {
				copyOut()
			}
		}
		took := time.Since(start)
		if !reader {
			s.TopRead.Store(0)
			copyOut()
		}
		switch {
		case reader && (got != n || took >= topWaitBudget):
			t.Errorf("with a reader: %d of %d entries in %s", got, n, took)
		case !reader && (got != 4 || took < topWaitBudget*3/4 || took > 10*topWaitBudget):
			t.Errorf("without a reader: %d entries left (want the last 4) after %s (budget %s)", got, took, topWaitBudget)
		}
	}
}
