package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// PastFutureOptions tunes the paper's estimator (Past-Future Scheduler,
// ASPLOS'25): it keeps the output lengths of the last Window finished
// requests, samples each request's final length from those above its current
// length, evaluates a few sampled scenarios and admits while the worst
// scenario's peak stays below CapacityRatio of the KV.
type PastFutureOptions struct {
	Window int // finished output lengths kept (default 40)
	// MaxScenarios caps the scenarios per pass; a pass evaluates
	// min(MaxScenarios, MinSamples/len(running)+1) of them (defaults 5, 200),
	// so small batches get more scenarios and large ones stay cheap.
	MaxScenarios int
	MinSamples   int
	// CapacityRatio is the share of max_total_tokens the worst scenario may
	// reach (default 0.97, the artifact's 3% reserve).
	CapacityRatio float64
}

func (o PastFutureOptions) withDefaults() PastFutureOptions {
	if o.Window == 0 {
		o.Window = 40
	}
	if o.MaxScenarios == 0 {
		o.MaxScenarios = 5
	}
	if o.MinSamples == 0 {
		o.MinSamples = 200
	}
	if o.CapacityRatio == 0 {
		o.CapacityRatio = 0.97
	}
	return o
}

func (o PastFutureOptions) validate() error {
	switch {
	case o.Window < 1:
		return fmt.Errorf("%w: past_future window %d < 1", ErrBadConfig, o.Window)
	case o.MaxScenarios < 1 || o.MaxScenarios > 64:
		return fmt.Errorf("%w: past_future scenarios %d not in [1,64]", ErrBadConfig, o.MaxScenarios)
	case o.MinSamples < 1:
		return fmt.Errorf("%w: past_future min samples %d < 1", ErrBadConfig, o.MinSamples)
	case !(o.CapacityRatio > 0 && o.CapacityRatio <= 1):
		return fmt.Errorf("%w: past_future capacity ratio %v not in (0,1]", ErrBadConfig, o.CapacityRatio)
	}
	return nil
}

// pastFuture samples futures from the recent past.
//
// Draws are sticky: a request keeps its draw for scenario k until its output
// grows past it, and is then redrawn from the lengths above its new output
// length. A kept draw that is still above the current length is distributed
// exactly like a fresh draw conditioned on that length, so every pass sees the
// right conditional distribution, but an unchanged batch gives an unchanged
// answer: the scheduler cannot admit by re-rolling until a lucky scenario
// comes up.
type pastFuture struct {
	o      PastFutureOptions
	rng    *rand.Rand
	ring   []int32 // last Window finished lengths, oldest at head
	head   int
	sorted []int32 // the same lengths, ascending
}

func newPastFuture(o PastFutureOptions, seed uint64) (*pastFuture, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &pastFuture{o: o, rng: rand.New(rand.NewPCG(seed, 0x5eed_9a57_f07e))}, nil
}

func (p *pastFuture) observe(n int) {
	v := int32(min(max(n, 0), math.MaxInt32))
	if len(p.ring) < p.o.Window {
		p.ring = append(p.ring, v)
	} else {
		old := p.ring[p.head]
		p.ring[p.head] = v
		p.head = (p.head + 1) % p.o.Window
		i, _ := slices.BinarySearch(p.sorted, old)
		p.sorted = slices.Delete(p.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(p.sorted, v)
	p.sorted = slices.Insert(p.sorted, i, v)
}

func (p *pastFuture) scenarios(v *View) int {
	n := len(v.Running)
	if n == 0 {
		return 1
	}
	return min(p.o.MaxScenarios, p.o.MinSamples/n+1)
}

func (p *pastFuture) limit(v *View) int {
	return int(p.o.CapacityRatio * float64(v.Config.MaxTotalTokens))
}

func (p *pastFuture) tuple(v *View, r *Request, k int) Tuple {
	final := p.final(r, k)
	b := max(0, final-max(r.OutputLen, 1)) + pendingPrefillSteps(r, v.Config)
	return Tuple{A: r.HeldTarget(), B: b, Group: r.GroupKey(), Input: r.InputLen}
}

// final returns the request's sticky draw for scenario k, redrawing it once
// the request has outgrown it.
func (p *pastFuture) final(r *Request, k int) int {
	for len(r.samples) <= k {
		r.samples = append(r.samples, 0)
	}
	s := int(r.samples[k])
	if s <= r.OutputLen {
		s = p.draw(r.OutputLen+1, r.MaxNewTokens)
		r.samples[k] = int32(min(s, math.MaxInt32))
	}
	return s
}

// draw samples a final length >= lo from the piecewise-linear interpolation
// of [lo, recent lengths above lo..., maxNew], as the paper's artifact does:
// the history's empirical distribution conditioned on having reached lo, with
// max_new_tokens as the tail (so an empty history gives uniform(lo, maxNew)).
// Lengths above maxNew count as maxNew: the request stops there.
func (p *pastFuture) draw(lo, maxNew int) int {
	if lo >= maxNew {
		return lo
	}
	pos, _ := slices.BinarySearch(p.sorted, int32(lo+1)) // first entry > lo
	m := len(p.sorted) - pos                             // history points in range
	n := m + 2                                           // plus both end points
	point := func(j int) float64 {
		switch {
		case j == 0:
			return float64(lo)
		case j > m:
			return float64(maxNew)
		}
		return float64(min(int(p.sorted[pos+j-1]), maxNew))
	}
	x := p.rng.Float64() * float64(n-1)
	j := int(x)
	l, h := point(j), point(j+1)
	return int(math.RoundToEven(l + (h-l)*(x-float64(j))))
}
