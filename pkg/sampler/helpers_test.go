package sampler

import (
	"math"
	"sort"
	"testing"
)

func mustNew(t *testing.T, vocab int) *Sampler {
	t.Helper()
	s, err := New(vocab)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

func sampling(temp float32, topK int, topP float32) Params {
	p := DefaultParams()
	p.DoSample, p.Temperature, p.TopK, p.TopP = true, temp, topK, topP
	return p
}

// testLogits are fixed pseudo-random logits in [-3, 3).
func testLogits(n int) []float32 {
	out := make([]float32, n)
	x := uint32(12345)
	for i := range out {
		x = x*1103515245 + 12345
		out[i] = float32(x>>8)/float32(1<<24)*6 - 3
	}
	return out
}

func softmaxRef(logits []float32, temp float64) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, float64(l))
	}
	out := make([]float64, len(logits))
	var z float64
	for i, l := range logits {
		out[i] = math.Exp((float64(l) - m) / temp)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

func logSumExpRef(logits []float32) float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, float64(l))
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l) - m)
	}
	return m + math.Log(z)
}

// reference computes the distribution LightLLM's sort-based sampler draws
// from: full softmax(l/T), ranks sorted descending, drop ranks >= top_k and
// ranks whose preceding mass exceeds top_p, renormalise.
func reference(logits []float32, p *Params) []float64 {
	probs := softmaxRef(logits, float64(p.Temperature))
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	out := make([]float64, len(logits))
	var before, kept float64
	for rank, t := range order {
		if (p.TopK > 0 && rank >= p.TopK) || before > float64(p.TopP) {
			break
		}
		out[t] = probs[t]
		kept += probs[t]
		before += probs[t]
	}
	for i := range out {
		out[i] /= kept
	}
	return out
}

func checkDistribution(t *testing.T, logits []float32, p *Params, want []float64, n int) []float64 {
	t.Helper()
	return checkDistributionIn(t, logits, Input{Params: p}, want, n)
}

// checkDistributionIn samples n times (seeds 0..n-1), fails on any token
// outside the support of want, and runs a chi-square goodness-of-fit test at
// p ≈ 0.0005 (fixed seeds, so the outcome is deterministic). It returns the
// observed frequencies.
func checkDistributionIn(t *testing.T, logits []float32, in Input, want []float64, n int) []float64 {
	t.Helper()
	s := mustNew(t, len(logits))
	counts := make([]int, len(logits))
	for seed := 0; seed < n; seed++ {
		in.Seed = uint64(seed)
		r, err := s.Sample(clone(logits), &in)
		if err != nil {
			t.Fatal(err)
		}
		if want[r.Token] == 0 {
			t.Fatalf("%+v: sampled token %d outside the allowed set", *in.Params, r.Token)
		}
		counts[r.Token]++
	}
	var chi2, poolObs, poolExp float64
	bins := 0
	for i, w := range want {
		if w == 0 {
			continue
		}
		e := w * float64(n)
		if e < 5 { // pool rare tokens so the chi-square approximation holds
			poolObs += float64(counts[i])
			poolExp += e
			continue
		}
		d := float64(counts[i]) - e
		chi2 += d * d / e
		bins++
	}
	if poolExp > 0 {
		d := poolObs - poolExp
		chi2 += d * d / math.Max(poolExp, 1)
		bins++
	}
	if df := bins - 1; df > 0 {
		if limit := chiSquareQuantile(df, 3.29); chi2 > limit {
			t.Fatalf("%+v: chi-square %.1f > %.1f (df %d): sampled frequencies do not match", *in.Params, chi2, limit, df)
		}
	}
	freq := make([]float64, len(counts))
	for i, c := range counts {
		freq[i] = float64(c) / float64(n)
	}
	return freq
}

// chiSquareQuantile is the Wilson–Hilferty approximation of the chi-square
// quantile with df degrees of freedom at the standard-normal quantile z.
func chiSquareQuantile(df int, z float64) float64 {
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

func assertClose(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
