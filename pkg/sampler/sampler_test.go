package sampler

import (
	"errors"
	"math"
	"testing"
)

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		mod  func(*Params)
		ok   bool
	}{
		{"defaults", func(*Params) {}, true},
		{"sampling", func(p *Params) { p.DoSample, p.Temperature, p.TopK, p.TopP = true, 0.7, 40, 0.9 }, true},
		{"temperature 0 is greedy", func(p *Params) { p.Temperature = 0 }, true},
		{"negative temperature", func(p *Params) { p.Temperature = -0.1 }, false},
		{"NaN temperature", func(p *Params) { p.Temperature = nan }, false},
		{"infinite temperature", func(p *Params) { p.Temperature = inf }, false},
		{"top_k 0", func(p *Params) { p.TopK = 0 }, false},
		{"top_k -2", func(p *Params) { p.TopK = -2 }, false},
		{"top_p 0", func(p *Params) { p.TopP = 0 }, false},
		{"top_p 1.01", func(p *Params) { p.TopP = 1.01 }, false},
		{"top_p NaN", func(p *Params) { p.TopP = nan }, false},
		{"repetition 0.9", func(p *Params) { p.RepetitionPenalty = 0.9 }, false},
		{"repetition NaN", func(p *Params) { p.RepetitionPenalty = nan }, false},
		{"presence -1 (OpenAI allows down to -2)", func(p *Params) { p.PresencePenalty = -1 }, true},
		{"presence NaN", func(p *Params) { p.PresencePenalty = nan }, false},
		{"frequency NaN", func(p *Params) { p.FrequencyPenalty = nan }, false},
		{"frequency inf", func(p *Params) { p.FrequencyPenalty = inf }, false},
		{"seed -2", func(p *Params) { p.Seed = -2 }, false},
		{"seed 0", func(p *Params) { p.Seed = 0 }, true},
		{"max_new 0", func(p *Params) { p.MaxNewTokens = 0 }, false},
		{"min > max", func(p *Params) { p.MinNewTokens, p.MaxNewTokens = 5, 4 }, false},
		{"min negative", func(p *Params) { p.MinNewTokens = -1 }, false},
		{"stop id negative", func(p *Params) { p.StopTokenIDs = []int32{-3} }, false},
		{"stop id beyond vocab", func(p *Params) { p.StopTokenIDs = []int32{100} }, false},
		{"banned id beyond vocab", func(p *Params) { p.BannedTokenIDs = []int32{100} }, false},
		{"stop id in vocab", func(p *Params) { p.StopTokenIDs = []int32{99} }, true},
		{"too many stop ids", func(p *Params) { p.StopTokenIDs = make([]int32, MaxStopTokenIDs+1) }, false},
		{"decay factor 0.5", func(p *Params) { p.DecayFactor = 0.5 }, false},
		{"decay factor NaN", func(p *Params) { p.DecayFactor = nan }, false},
		{"decay start -1", func(p *Params) { p.DecayStart, p.DecayFactor = -1, 2 }, false},
		{"decay (3, 1.5)", func(p *Params) { p.DecayStart, p.DecayFactor = 3, 1.5 }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultParams()
			c.mod(&p)
			err := p.Validate(100)
			if (err == nil) != c.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, c.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("error %v does not wrap ErrInvalidParams", err)
			}
		})
	}
}

func TestGreedy(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1}
	s := mustNew(t, len(logits))
	for _, mod := range []func(*Params){
		func(*Params) {}, // do_sample false
		func(p *Params) { p.DoSample, p.Temperature = true, 0 },            // temperature 0
		func(p *Params) { p.DoSample, p.Temperature, p.TopK = true, 1, 1 }, // top_k 1
	} {
		p := DefaultParams()
		mod(&p)
		for seed := uint64(0); seed < 20; seed++ {
			r, err := s.Sample(clone(logits), &Input{Params: &p, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if r.Token != 1 {
				t.Fatalf("greedy picked %d, want the first maximum 1", r.Token)
			}
			want := 2 - logSumExpRef(logits)
			if math.Abs(float64(r.LogProb)-want) > 1e-5 {
				t.Fatalf("logprob %v, want %v", r.LogProb, want)
			}
		}
	}
	p := DefaultParams()
	if r, _ := s.Sample(clone(logits), &Input{Params: &p, SkipLogProb: true}); r.Token != 1 || r.LogProb != 0 {
		t.Fatalf("greedy without logprob: %+v", r)
	}
	if _, err := s.Sample(make([]float32, 3), &Input{Params: new(Params)}); err == nil {
		t.Fatal("wrong logits length: want error")
	}
}

func TestTopKNeverOutsideAndMatchesDistribution(t *testing.T) {
	logits := testLogits(40)
	for _, k := range []int{1, 2, 5, 13, 39} {
		p := sampling(1, k, 1)
		if k == 1 {
			p.TopK = 1
		}
		want := reference(logits, &p)
		checkDistribution(t, logits, &p, want, 20000)
	}
}

func TestTopPMatchesReferenceSet(t *testing.T) {
	logits := testLogits(30)
	for _, topP := range []float32{0.05, 0.3, 0.5, 0.8, 0.95, 0.999} {
		p := sampling(1, -1, topP)
		want := reference(logits, &p)
		// The kept set carries at least top_p of the mass, and dropping its
		// least likely member would leave at most top_p.
		probs := softmaxRef(logits, 1)
		var kept, minKept float64 = 0, 1
		for i, w := range want {
			if w > 0 {
				kept += probs[i]
				minKept = math.Min(minKept, probs[i])
			}
		}
		if kept < float64(topP)-1e-6 && kept < 1-1e-6 {
			t.Fatalf("top_p %v: kept mass %v", topP, kept)
		}
		if kept-minKept > float64(topP)+1e-6 {
			t.Fatalf("top_p %v: kept set is not minimal (mass %v, smallest %v)", topP, kept, minKept)
		}
		checkDistribution(t, logits, &p, want, 20000)
	}
}

func TestTopKAndTopPTogether(t *testing.T) {
	logits := testLogits(50)
	for _, c := range []struct {
		k    int
		topP float32
	}{{3, 0.9}, {20, 0.5}, {10, 0.7}} {
		p := sampling(0.8, c.k, c.topP)
		checkDistribution(t, logits, &p, reference(logits, &p), 20000)
	}
}

func TestTemperatureSharpens(t *testing.T) {
	logits := []float32{1, 0.5, 0, -0.5, -1, -2}
	top := func(temp float32) float64 {
		p := sampling(temp, -1, 1)
		want := reference(logits, &p)
		// softmax(l/T) is p^(1/T) renormalised: check against that form too.
		base := softmaxRef(logits, 1)
		var z float64
		for _, b := range base {
			z += math.Pow(b, 1/float64(temp))
		}
		for i, b := range base {
			if math.Abs(math.Pow(b, 1/float64(temp))/z-want[i]) > 1e-9 {
				t.Fatalf("T=%v: reference distribution is not p^(1/T)", temp)
			}
		}
		got := checkDistribution(t, logits, &p, want, 20000)
		return got[0]
	}
	cold, mid, hot := top(0.5), top(1), top(2)
	if !(cold > mid && mid > hot) {
		t.Fatalf("frequency of the best token: T=0.5 %v, T=1 %v, T=2 %v; want decreasing", cold, mid, hot)
	}
}

func TestPenaltiesByHand(t *testing.T) {
	logits := []float32{2, -1, 0.5, 3, 0}
	p := DefaultParams()
	p.RepetitionPenalty, p.FrequencyPenalty, p.PresencePenalty = 2, 0.5, 0.25
	in := Input{Params: &p, Prompt: []int32{2}, Generated: []int32{0, 0, 1}}
	// token 0 (count 2): 2/2 - 2*0.5 - 0.25 = -0.25
	// token 1 (count 1): -1*2 - 0.5 - 0.25 = -2.75
	// token 2 is only in the prompt: untouched without InputPenalty.
	want := []float32{-0.25, -2.75, 0.5, 3, 0}
	s := mustNew(t, len(logits))
	got := clone(logits)
	if _, err := s.Sample(got, &in); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "penalised logits", got, want)

	p.InputPenalty = true // token 2 (count 1 from the prompt): 0.5/2 - 0.5 - 0.25 = -0.5
	got = clone(logits)
	if _, err := s.Sample(got, &in); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "penalised logits with input_penalty", got, []float32{-0.25, -2.75, -0.5, 3, 0})

	// The counts scratch must be clean for the next call: no penalty without history.
	p.InputPenalty = false
	got = clone(logits)
	if _, err := s.Sample(got, &Input{Params: &p}); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "logits without history", got, logits)

	// And sampling follows softmax of the penalised logits.
	sp := sampling(1, -1, 1)
	sp.RepetitionPenalty, sp.FrequencyPenalty, sp.PresencePenalty = 2, 0.5, 0.25
	dist := softmaxRef(want, 1)
	checkDistributionIn(t, logits, Input{Params: &sp, Prompt: in.Prompt, Generated: in.Generated}, dist, 20000)
}

func TestMinNewTokensAndStops(t *testing.T) {
	logits := []float32{0, 0, 5, 0} // id 2 (EOS) dominates
	s := mustNew(t, len(logits))
	p := sampling(1, -1, 1)
	p.MinNewTokens = 3
	p.StopTokenIDs = []int32{1}
	eos := []int32{2}
	for step := 0; step < 4; step++ {
		gen := make([]int32, step)
		for seed := uint64(0); seed < 500; seed++ {
			r, _ := s.Sample(clone(logits), &Input{Params: &p, Seed: seed, Generated: gen, EOS: eos})
			suppressed := step+1 < p.MinNewTokens
			if suppressed && (r.Token == 2 || r.Token == 1) {
				t.Fatalf("token %d at step %d despite min_new_tokens=%d", r.Token, step, p.MinNewTokens)
			}
		}
	}
	// ignore_eos: EOS is not a finishing id, so it is not suppressed either.
	p.IgnoreEOS = true
	gp := p
	gp.DoSample = false
	if r, _ := s.Sample(clone(logits), &Input{Params: &gp, EOS: eos}); r.Token != 2 {
		t.Fatalf("ignore_eos: greedy picked %d, want 2", r.Token)
	}
	// banned ids are never produced.
	p.BannedTokenIDs = []int32{2, 0}
	p.MinNewTokens = 0
	for seed := uint64(0); seed < 500; seed++ {
		r, _ := s.Sample(clone(logits), &Input{Params: &p, Seed: seed})
		if r.Token == 2 || r.Token == 0 {
			t.Fatalf("banned token %d sampled", r.Token)
		}
	}
}

func TestSeedDeterminism(t *testing.T) {
	logits := testLogits(64)
	s := mustNew(t, len(logits))
	p := sampling(1.2, 30, 0.95)
	seq := func(seed uint64, n int) []int32 {
		var gen []int32
		for len(gen) < n {
			r, _ := s.Sample(clone(logits), &Input{Params: &p, Seed: seed, Generated: gen})
			gen = append(gen, r.Token)
		}
		return gen
	}
	a, b, c := seq(7, 64), seq(7, 64), seq(8, 64)
	if !equalIDs(a, b) {
		t.Fatal("same seed gave different tokens")
	}
	if equalIDs(a, c) {
		t.Fatal("different seeds gave identical 64-token sequences")
	}
	// A resumed request (its earlier tokens given back) draws as before, even
	// after other requests used the same Sampler.
	seq(99, 10)
	r, _ := s.Sample(clone(logits), &Input{Params: &p, Seed: 7, Generated: a[:40]})
	if r.Token != a[40] {
		t.Fatalf("resumed draw %d, uninterrupted %d", r.Token, a[40])
	}
}

func TestAllMasked(t *testing.T) {
	s := mustNew(t, 3)
	p := sampling(1, -1, 1)
	p.BannedTokenIDs = []int32{0, 1, 2}
	r, err := s.Sample([]float32{1, 2, 3}, &Input{Params: &p})
	if err != nil || r.Token != 0 || !math.IsInf(float64(r.LogProb), -1) {
		t.Fatalf("all masked: %+v %v", r, err)
	}
	// NaN logits are treated as impossible tokens rather than breaking selection.
	p.BannedTokenIDs = nil
	p.TopK = 2
	nan := float32(math.NaN())
	for seed := uint64(0); seed < 100; seed++ {
		r, _ := s.Sample([]float32{nan, 1, nan}, &Input{Params: &p, Seed: seed})
		if r.Token != 1 {
			t.Fatalf("NaN logits: sampled %d", r.Token)
		}
	}
}

func TestSampleAllocatesNothing(t *testing.T) {
	logits := testLogits(1000)
	s := mustNew(t, len(logits))
	work := make([]float32, len(logits))
	gen := []int32{1, 2, 3, 3, 900}
	for _, p := range []Params{DefaultParams(), sampling(0.7, 40, 0.9), sampling(1, -1, 0.5), sampling(1, -1, 1)} {
		p.RepetitionPenalty, p.FrequencyPenalty = 1.1, 0.2
		in := Input{Params: &p, Seed: 3, Generated: gen, EOS: []int32{2}}
		allocs := testing.AllocsPerRun(50, func() {
			copy(work, logits)
			if _, err := s.Sample(work, &in); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("Sample allocates %.1f times per call with %+v", allocs, p)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	logits := testLogits(32000)
	s, _ := New(len(logits))
	work := make([]float32, len(logits))
	for _, c := range []struct {
		name string
		p    Params
		skip bool // SkipLogProb: what a greedy request costs without its log-probability
	}{{"greedy", DefaultParams(), false}, {"greedy_skiplogprob", DefaultParams(), true}, {"topk40_topp0.9", sampling(0.8, 40, 0.9), false},
		{"topp0.9", sampling(0.8, -1, 0.9), false}, {"full", sampling(1, -1, 1), false}} {
		b.Run(c.name, func(b *testing.B) {
			in := Input{Params: &c.p, Seed: 1, SkipLogProb: c.skip}
			for b.Loop() {
				copy(work, logits)
				_, _ = s.Sample(work, &in)
			}
		})
	}
}

func TestExpScale(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 64, 5003} {
		x := testLogits(n)
		x[0] = float32(math.Inf(-1)) // a masked token
		if n > 2 {
			x[2] = -200 // far below the maximum
		}
		for _, scale := range []float32{0.5, 1, 15} { // 15 spreads the arguments over [-90, 0]
			dst := make([]float32, n)
			got := expScale(dst, x, 3, scale)
			var ref float64
			for i, v := range x {
				a := float64((v - 3) * scale)
				want := math.Exp(a)
				if a < -87 {
					want = 0
				}
				if math.Abs(float64(dst[i])-want) > 3e-7*want {
					t.Fatalf("n %d: exp at %d = %v, want %v", n, i, dst[i], want)
				}
				ref += want
			}
			if math.Abs(got-ref) > 1e-6*ref {
				t.Fatalf("n %d: sum %v, want %v", n, got, ref)
			}
			if dst[0] != 0 {
				t.Fatalf("masked logit has probability %v", dst[0])
			}
		}
	}
}

// TestExponentialDecayByHand: LightLLM's exponential_decay_length_penalty
// raises each EOS logit by |l|*(factor^(generated-start) - 1) once past
// the start, and the min_new_tokens mask still wins over it.
func TestExponentialDecayByHand(t *testing.T) {
	logits := []float32{1, -2, 3, 0.5}
	eos := []int32{1, 3}
	s := mustNew(t, len(logits))
	cases := []struct {
		name      string
		start     int
		factor    float32
		generated int
		minNew    int
		want      []float32
	}{
		{"off", 0, 1, 9, 0, []float32{1, -2, 3, 0.5}},
		{"before the start", 5, 2, 4, 0, []float32{1, -2, 3, 0.5}},
		{"at the start", 5, 2, 5, 0, []float32{1, -2, 3, 0.5}},
		// 2 past the start: scale 2^2-1 = 3; -2 + 2*3 = 4, 0.5 + 0.5*3 = 2.
		{"two past", 5, 2, 7, 0, []float32{1, 4, 3, 2}},
		{"huge factor stays finite", 0, 1e6, 40, 0, []float32{1, math.MaxFloat32, 3, math.MaxFloat32}},
		{"min_new_tokens masks it", 0, 2, 3, 9, []float32{1, float32(math.Inf(-1)), 3, float32(math.Inf(-1))}},
	}
	for _, c := range cases {
		p := DefaultParams()
		p.DecayStart, p.DecayFactor, p.MinNewTokens = c.start, c.factor, c.minNew
		got := clone(logits)
		if _, err := s.Sample(got, &Input{Params: &p, Generated: make([]int32, c.generated), EOS: eos}); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: logits %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
