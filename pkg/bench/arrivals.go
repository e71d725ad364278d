package bench

import (
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals returns the send offset of each of n requests from the start of
// the run, as vLLM's get_request: the first goes at 0, then gaps are drawn
// from a gamma distribution with shape = burstiness and mean 1/rate
// (burstiness 1 is a Poisson process; lower is burstier, higher steadier).
// An infinite rate sends everything at once.
func Arrivals(n int, rate, burstiness float64, seed uint64) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) || n == 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(seed, seed^0xa771))
	theta := 1 / (rate * burstiness)
	t := 0.0
	for i := 1; i < n; i++ {
		t += gamma(rng, burstiness) * theta
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out
}

// gamma draws from Gamma(shape, 1) by Marsaglia and Tsang's method, with
// the usual boost for shape < 1.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
