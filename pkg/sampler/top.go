package sampler

import "math"

// Alt is one alternative token and its log-probability.
type Alt struct {
	ID      int32
	Logprob float32
}

// Top computes, from a logit row as Sample left it (penalties and masks
// applied, temperature not), the n most likely tokens under the
// distribution the sampler draws from, softmax(row/T) (T = 1 when greedy),
// best first (ties: lower id first), and the chosen token's rank (1 + the
// tokens with a strictly higher logit). The chosen token's entry, if
// listed, carries logProb, the value Sample reported for it, so that the
// two never disagree by rounding. alts reuses dst.
func (p *Params) Top(row []float32, chosen int32, logProb float32, n int, dst []Alt) (alts []Alt, rank int) {
	invT := float32(1)
	if !p.Greedy() && p.Temperature > 0 {
		invT = 1 / p.Temperature
	}
	alts, rank, _ = topLogprobs(row, invT, chosen, n, dst)
	for i := range alts {
		if alts[i].ID == chosen {
			alts[i].Logprob = logProb
		}
	}
	return alts, rank
}

// topLogprobs is Top's arithmetic for a given 1/T; chosenLP is the chosen
// token's log-probability as it computes it (-Inf when masked).
func topLogprobs(row []float32, invT float32, chosen int32, n int, dst []Alt) (alts []Alt, rank int, chosenLP float64) {
	alts = dst[:0]
	if chosen < 0 || int(chosen) >= len(row) {
		return alts, 0, math.Inf(-1)
	}
	m := float32(math.Inf(-1))
	for _, v := range row {
		if v > m { // NaN never compares greater
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		return alts, 0, math.Inf(-1) // everything masked: no distribution
	}
	n = min(n, len(row), MaxTopLogprobs)
	lc := row[chosen]
	var z float64
	rank = 1
	for id, v := range row {
		if v != v || math.IsInf(float64(v), -1) {
			continue
		}
		z += math.Exp(float64((v - m) * invT))
		if v > lc {
			rank++
		}
		if n == 0 || (len(alts) == n && !(v > row[alts[n-1].ID])) {
			continue
		}
		// Insertion into the best-first list; equal logits keep id order.
		if len(alts) < n {
			alts = append(alts, Alt{})
		}
		j := len(alts) - 1
		for j > 0 && v > row[alts[j-1].ID] {
			alts[j] = alts[j-1]
			j--
		}
		alts[j] = Alt{ID: int32(id)}
	}
	logZ := math.Log(z)
	lp := func(v float32) float64 { return float64((v-m)*invT) - logZ }
	for i := range alts {
		alts[i].Logprob = float32(lp(row[alts[i].ID]))
	}
	if lc != lc || math.IsInf(float64(lc), -1) {
		return alts, rank, math.Inf(-1)
	}
	return alts, rank, lp(lc)
}
