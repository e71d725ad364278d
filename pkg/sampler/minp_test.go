package sampler

import (
	"math"
	"testing"
)

// TestMinPPeakedKeepsArgmax: with min_p 0.99 on a peaked distribution at
// temperature 1, every draw is the argmax (the runner-up has about half
// the top probability, far below 0.99 of it); without min_p the same
// seeds often draw something else, so the test can fail.
func TestMinPPeakedKeepsArgmax(t *testing.T) {
	logits := testLogits(50)
	logits[17] = 3.7 // argmax; testLogits are below 3, so the runner-up is at least 0.7 lower (p ratio < 0.5)
	s := mustNew(t, len(logits))
	for _, tc := range []struct {
		name  string
		minP  float32
		topK  int
		topP  float32
		other bool // whether non-argmax draws are expected
	}{
		{"min_p 0.99", 0.99, -1, 1, false},
		{"min_p 0.99 with top-k and top-p", 0.99, 20, 0.9, false},
		{"min_p 1", 1, -1, 1, false},
		{"no min_p", 0, -1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sampling(1, tc.topK, tc.topP)
			p.MinP = tc.minP
			if err := p.Validate(len(logits)); err != nil {
				t.Fatal(err)
			}
			others := 0
			for seed := range 2000 {
				r, err := s.Sample(clone(logits), &Input{Params: &p, Seed: uint64(seed)})
				if err != nil {
					t.Fatal(err)
				}
				if r.Token != 17 {
					others++
				}
			}
			if (others > 0) != tc.other {
				t.Fatalf("%d of 2000 draws were not the argmax", others)
			}
		})
	}
}

// TestMinPMatchesReference: min_p keeps exactly the tokens with p_i >=
// min_p * p_max after temperature, renormalised, before top-k/top-p.
func TestMinPMatchesReference(t *testing.T) {
	logits := testLogits(40)
	for _, tc := range []struct {
		temp, minP float32
	}{{1, 0.2}, {0.5, 0.05}, {2, 0.5}} {
		p := sampling(tc.temp, -1, 1)
		p.MinP = tc.minP
		base := sampling(tc.temp, -1, 1)
		want := reference(logits, &base)
		pmax := 0.0
		for _, q := range want {
			pmax = math.Max(pmax, q)
		}
		var mass float64
		for i, q := range want {
			if q < float64(tc.minP)*pmax {
				want[i] = 0
			}
			mass += want[i]
		}
		for i := range want {
			want[i] /= mass
		}
		checkDistribution(t, logits, &p, want, 20000)
	}
}

func TestMinPValidate(t *testing.T) {
	for _, v := range []float32{-0.01, 1.01, float32(math.NaN()), float32(math.Inf(1))} {
		p := DefaultParams()
		p.MinP = v
		if err := p.Validate(10); err == nil {
			t.Errorf("min_p %v accepted", v)
		}
	}
	for _, v := range []float32{0, 0.5, 1} {
		p := DefaultParams()
		p.MinP = v
		if err := p.Validate(10); err != nil {
			t.Errorf("min_p %v: %v", v, err)
		}
	}
}
