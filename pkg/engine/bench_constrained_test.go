package engine

import (
	"context"
	"errors"
	"math"
	"testing"
)

// onlyToken is a test processor: every logit but one is masked; it ends
// (allows only EOS 2) after `left` tokens.
type onlyToken struct {
	tok  int32
	left int
	seen *int
	// waits counts Wait calls: the bench waits for a processor's
	// background mask after each constrained step.
	waits *int
}

func (p *onlyToken) Wait() { *p.waits++ }

func (p *onlyToken) Process(row []float32) error {
	keep := p.tok
	if p.left == 0 {
		keep = 2
	}
	for i := range row {
		row[i] = float32(math.Inf(-1))
	}
	row[keep] = 0 // nullModel writes one logit a row and leaves the rest as they were
	return nil
}

func (p *onlyToken) Accept(tok int32) error {
	*p.seen++
	if want := map[bool]int32{true: 2, false: p.tok}[p.left == 0]; tok != want {
		return errors.New("a masked token was sampled")
	}
	p.left--
	return nil
}

func TestBenchConstrained(t *testing.T) {
	seen, waits := 0, 0
	o := ConstrainedBench{Sequences: 4, Constrained: 2, GenTokens: 12, Rounds: 2,
		NewProcessor: func(i int) func() (LogitsProcessor, error) {
			return func() (LogitsProcessor, error) {
				return &onlyToken{tok: 7, left: 6 + i, seen: &seen, waits: &waits}, nil
			}
		}}
	res, err := BenchConstrained(context.Background(), nullModel{vocab: 64}, o)
	if err != nil {
		t.Fatal(err)
	}
	// A run's first constrained request (processors 0 and 2) ends with its
	// 7th or 9th token: the steps with all 4 decoding are those after the
	// first step, up to that one; the plain engine's steps are paired with
	// those.
	if res["steps_constrained"] != 6+8 || res["steps_plain"] != 6+8 || seen == 0 || waits < seen {
		t.Errorf("steps %v plain, %v constrained; processors saw %d tokens, were waited for %d times", res["steps_plain"], res["steps_constrained"], seen, waits)
	}
	for _, k := range []string{"step_ms_median_plain", "step_ms_median_constrained", "step_ratio_median", "step_cpu_ratio_median"} {
		if _, ok := res[k]; !ok {
			t.Errorf("no %s in %v", k, res)
		}
	}
	for _, bad := range []ConstrainedBench{{Sequences: 2, Constrained: 3, GenTokens: 4, Rounds: 1, NewProcessor: o.NewProcessor},
		{Sequences: 2, Constrained: 1, GenTokens: 4, Rounds: 1}, {Sequences: 2, Constrained: 1, GenTokens: 4, NewProcessor: o.NewProcessor}} {
		if _, err := BenchConstrained(context.Background(), nullModel{vocab: 64}, bad); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
