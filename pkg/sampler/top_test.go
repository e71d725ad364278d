package sampler

import (
	"math"
	"slices"
	"sort"
	"testing"
)

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

func TestTopLogprobs(t *testing.T) {
	row := make([]float32, 50)
	waveRow(row, 7, 3)
	negInf := float32(math.Inf(-1))
	for _, c := range []struct {
		name string
		invT float32
		n    int
	}{{"greedy top 5", 1, 5}, {"temperature 0.5", 2, 20}, {"temperature 1.7 top 1", 1 / 1.7, 1}, {"none", 1, 0}} {
		t.Run(c.name, func(t *testing.T) {
			ids, lps := bruteTop(row, float64(c.invT))
			for _, chosen := range []int32{ids[0], ids[3], ids[40]} {
				alts, rank, lp := topLogprobs(row, c.invT, chosen, c.n, nil)
				if len(alts) != c.n {
					t.Fatalf("%d alternatives, want %d", len(alts), c.n)
				}
				for i, a := range alts {
					if a.ID != ids[i] || math.Abs(float64(a.Logprob)-lps[a.ID]) > 1e-5 {
						t.Errorf("alternative %d: %+v, want id %d logprob %v", i, a, ids[i], lps[ids[i]])
					}
				}
				if want := slices.Index(ids, chosen) + 1; rank != want {
					t.Errorf("rank of %d = %d, want %d", chosen, rank, want)
				}
				if math.Abs(lp-lps[chosen]) > 1e-6 {
					t.Errorf("chosen logprob %v, want %v", lp, lps[chosen])
				}
			}
		})
	}
	t.Run("masked and NaN", func(t *testing.T) {
		r := []float32{negInf, 1, float32(math.NaN()), 1, negInf, 0}
		alts, rank, lp := topLogprobs(r, 1, 3, 20, nil)
		if len(alts) != 3 || alts[0].ID != 1 || alts[1].ID != 3 || alts[2].ID != 5 || rank != 1 {
			t.Fatalf("alternatives %+v rank %d (ties keep id order, masked and NaN tokens are left out)", alts, rank)
		}
		if want := 1 - math.Log(2*math.E+1); math.Abs(lp-want) > 1e-6 {
			t.Errorf("logprob %v, want %v", lp, want)
		}
		if _, _, lp := topLogprobs(r, 1, 0, 5, nil); !math.IsInf(lp, -1) {
			t.Errorf("masked chosen token: logprob %v, want -Inf", lp)
		}
		all := []float32{negInf, negInf}
		if alts, rank, lp := topLogprobs(all, 1, 0, 5, nil); len(alts) != 0 || rank != 0 || !math.IsInf(lp, -1) {
			t.Errorf("all masked: %v %d %v", alts, rank, lp)
		}
		if alts, _, lp := topLogprobs(r, 1, 99, 5, nil); len(alts) != 0 || !math.IsInf(lp, -1) {
			t.Errorf("chosen id out of range: %v %v", alts, lp)
		}
	})
}
