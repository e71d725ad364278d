package engine

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/lightllm-go/lightllm/pkg/cputime"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// ConstrainedBench is BenchConstrained's setup: Sequences requests decode
// together at temperature 1, and in the constrained runs the first
// Constrained of them carry a logits processor (a grammar) from
// NewProcessor(i), i counting every constrained request made.
type ConstrainedBench struct {
	Sequences    int
	Constrained  int
	GenTokens    int // max tokens per request
	Rounds       int // pairs of runs (plain, constrained), alternating which goes first
	NewProcessor func(i int) func() (LogitsProcessor, error)
}

// BenchConstrained measures what constraints add to a decode step: the
// same batch of Sequences requests with and without Constrained of them
// constrained, in alternating runs so that a drifting machine affects both
// alike. Only decode steps with every request running count (a finished
// request, constrained ones end when their grammar does, shrinks the
// batch). It reports each kind's median and mean step time, how many steps
// each median is over, and the constrained/plain ratio of the medians.
func BenchConstrained(ctx context.Context, m Forwarder, o ConstrainedBench) (map[string]float64, error) {
	if o.Sequences < 1 || o.Constrained < 0 || o.Constrained > o.Sequences || o.GenTokens < 2 || o.Rounds < 1 || o.NewProcessor == nil {
		return nil, fmt.Errorf("bench: %d sequences, %d constrained, %d tokens, %d rounds: want 0 <= constrained <= sequences, tokens >= 2, rounds >= 1",
			o.Sequences, o.Constrained, o.GenTokens, o.Rounds)
	}
	prompt := benchPrompt(16, m.Config().Vocab)
	// Process and Accept run on the stepping goroutine: locked to its
	// thread, that thread's CPU clock times the work they do on the step's
	// critical path, apart from waits (a mask not ready yet, the scheduler).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var plain, constrained, plainCPU, constrainedCPU, inProc, inProcCPU []time.Duration
	made := 0
	var procTime procTimes // the constrained requests' Process and Accept calls, summed
	run := func(withGrammar bool, round int) error {
		reqs := make([]Request, o.Sequences)
		for i := range reqs {
			p := sampler.DefaultParams()
			p.Temperature, p.Seed, p.MaxNewTokens = 1, int64(1000*round+i), o.GenTokens
			reqs[i] = Request{ID: uint64(i), Prompt: prompt, Params: p}
			if withGrammar && i < o.Constrained {
				mk := o.NewProcessor(made)
				reqs[i].NewProcessor = func() (LogitsProcessor, error) {
					p, err := mk()
					return timedProcessor{p, &procTime}, err
				}
				made++
			}
		}
		steps, cpu, proc, procCPU, err := benchSteps(ctx, m, o, reqs, &procTime)
		if err != nil {
			return err
		}
		if withGrammar {
			constrained, constrainedCPU = append(constrained, steps...), append(constrainedCPU, cpu...)
			inProc, inProcCPU = append(inProc, proc...), append(inProcCPU, procCPU...)
		} else {
			plain, plainCPU = append(plain, steps...), append(plainCPU, cpu...)
		}
		return nil
	}
	for r := range o.Rounds {
		first := r%2 == 0
		for _, g := range []bool{!first, first} {
			if err := run(g, r); err != nil {
				return nil, err
			}
		}
	}
	if len(plain) == 0 || len(constrained) == 0 {
		return nil, fmt.Errorf("bench: no decode step had all %d requests running (plain %d, constrained %d steps)", o.Sequences, len(plain), len(constrained))
	}
	res := map[string]float64{"steps_plain": float64(len(plain)), "steps_constrained": float64(len(constrained))}
	for name, d := range map[string][]time.Duration{"plain": plain, "constrained": constrained,
		"cpu_plain": plainCPU, "cpu_constrained": constrainedCPU} {
		res["step_ms_median_"+name] = round2(ms(median(d)))
		res["step_ms_mean_"+name] = round2(ms(mean(d)))
	}
	ratio := func(a, b time.Duration) float64 { return math.Round(1000*float64(a)/float64(b)) / 1000 }
	res["step_ratio_median"] = ratio(median(constrained), median(plain))
	res["step_ratio_mean"] = ratio(mean(constrained), mean(plain))
	res["step_cpu_ratio_median"] = ratio(median(constrainedCPU), median(plainCPU))
	// The processors' calls: wall time (on this busy machine mostly
	// waiting to be scheduled) and the stepping thread's CPU time in them,
	// the work they add to the step's critical path. Over the plain step's
	// CPU time, that is the slowdown of a step with the masks ready when
	// their rows are (computed during the forward pass on another core).
	res["processor_ms_median"] = round2(ms(median(inProc)))
	res["processor_ms_mean"] = round2(ms(mean(inProc)))
	res["processor_cpu_ms_median"] = round2(ms(median(inProcCPU)))
	res["processor_cpu_ms_mean"] = round2(ms(mean(inProcCPU)))
	res["processor_share_of_step"] = ratio(mean(inProc), mean(constrained))
	res["critical_path_ratio"] = ratio(mean(plainCPU)+mean(inProcCPU), mean(plainCPU))
	res["sequences"], res["constrained"] = float64(o.Sequences), float64(o.Constrained)
	return res, nil
}

// benchSteps runs reqs and returns the wall-clock durations, and the
// process CPU time (every thread: the forward pass's and the mask
// goroutines'), of the steps that decoded every request (all started, none
// finished yet).
// proc and procCPU, per counted step, are what *procTime grew by during it.
func benchSteps(ctx context.Context, m Forwarder, o ConstrainedBench, reqs []Request, procTime *procTimes) (steps, cpu, proc, procCPU []time.Duration, err error) {
	n := len(reqs)
	e, err := New(m, Options{MaxTotalTokens: n * (o.GenTokens + 40), MaxReqTotalLen: len(reqs[0].Prompt) + o.GenTokens,
		BatchMaxTokens: 512, DisablePromptCache: true, SkipLogProbs: true})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("bench: %w", err)
	}
	for _, r := range reqs {
		if err := e.Add(r); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("bench: %w", err)
		}
	}
	started := make([]bool, n)
	nStarted, finished := 0, false
	// Once a request has finished no later step counts: stop there.
	for e.HasWork() && !(finished && nStarted == n) {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("bench interrupted: %w", err)
		}
		decoding := nStarted == n && !finished
		c0, p0 := processCPU(), *procTime
		t0 := time.Now()
		outs, err := e.Step()
		d, c := time.Since(t0), processCPU()-c0
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("bench: %w", err)
		}
		if decoding && len(outs) == n {
			steps, cpu = append(steps, d), append(cpu, c)
			proc, procCPU = append(proc, procTime.wall-p0.wall), append(procCPU, procTime.cpu-p0.cpu)
		}
		for _, out := range outs {
			if out.Err != nil {
				return nil, nil, nil, nil, fmt.Errorf("bench: request %d: %w", out.ID, out.Err)
			}
			if !started[out.ID] {
				started[out.ID] = true
				nStarted++
			}
			finished = finished || out.Finished
		}
	}
	return steps, cpu, proc, procCPU, nil
}

// procTimes sums the wall and thread CPU time of processor calls.
type procTimes struct{ wall, cpu time.Duration }

// timedProcessor adds the time of p's calls to *sum (the engine calls a
// step's processors one after another, on the stepping goroutine).
type timedProcessor struct {
	p   LogitsProcessor
	sum *procTimes
}

func (t timedProcessor) timed(f func() error) error {
	w0, c0 := time.Now(), cputime.Thread()
	err := f()
	t.sum.cpu += cputime.Thread() - c0
	t.sum.wall += time.Since(w0)
	return err
}

func (t timedProcessor) Process(row []float32) error {
	return t.timed(func() error { return t.p.Process(row) })
}

func (t timedProcessor) Accept(tok int32) error {
	return t.timed(func() error { return t.p.Accept(tok) })
}

// processCPU is the user+system CPU time of the whole process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
