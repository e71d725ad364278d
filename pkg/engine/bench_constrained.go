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
// same batch of Sequences requests without and with Constrained of them
// constrained, run on two engines in lockstep. Step k of one engine is
// followed by step k of the other (which goes first alternates with k), so
// the pair sees the same machine: on these shared hosts the speed of a
// core drifts by 10-30% over seconds, far more than the 5% a comparison of
// two separate runs needs to resolve. Only pairs in which both engines
// decode every request (all started, none finished: a constrained request
// ends when its grammar does) count.
//
// A constrained step's time includes waiting, after it, until its
// processors' next masks are ready (a processor that computes them in the
// background, as constrain.Processor does while the forward pass runs):
// otherwise those goroutines would run during the plain engine's step and
// be charged to it. So the constrained figure is the step with no credit
// for the overlap — an upper bound on a server's step.
//
// It reports each kind's median and mean step time (wall and process
// CPU), the median of the pairs' constrained/plain ratios, and the
// processors' own time on the stepping thread.
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
	var st benchStats
	made := 0
	for r := range o.Rounds {
		var procs []timedProcessor // the constrained engine's, to wait for their masks
		var procTime procTimes     // their Process and Accept calls, summed
		reqs := func(withGrammar bool) []Request {
			reqs := make([]Request, o.Sequences)
			for i := range reqs {
				p := sampler.DefaultParams()
				p.Temperature, p.Seed, p.MaxNewTokens = 1, int64(1000*r+i), o.GenTokens
				reqs[i] = Request{ID: uint64(i), Prompt: prompt, Params: p}
				if withGrammar && i < o.Constrained {
					mk := o.NewProcessor(made)
					reqs[i].NewProcessor = func() (LogitsProcessor, error) {
						p, err := mk()
						tp := timedProcessor{p, &procTime}
						procs = append(procs, tp)
						return tp, err
					}
					made++
				}
			}
			return reqs
		}
		plain, err := newBenchStepper(m, o, reqs(false))
		if err != nil {
			return nil, err
		}
		constrained, err := newBenchStepper(m, o, reqs(true))
		if err != nil {
			return nil, err
		}
		constrained.after = func() {
			for _, p := range procs {
				p.wait()
			}
		}
		for k := 0; plain.more() && constrained.more(); k++ {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("bench interrupted: %w", err)
			}
			first, second := plain, constrained
			if k%2 == 1 {
				first, second = constrained, plain
			}
			p0 := procTime
			if err := first.step(); err != nil {
				return nil, err
			}
			if err := second.step(); err != nil {
				return nil, err
			}
			if plain.counted && constrained.counted {
				st.add(plain.last, constrained.last, procTime.wall-p0.wall, procTime.cpu-p0.cpu)
			}
		}
	}
	if len(st.plain) == 0 {
		return nil, fmt.Errorf("bench: no decode step had all %d requests running on both engines", o.Sequences)
	}
	return st.report(o), nil
}

// benchStats collects the counted pairs of BenchConstrained.
type benchStats struct {
	plain, constrained, plainCPU, constrainedCPU, inProc, inProcCPU []time.Duration
	ratios                                                          []float64
}

func (s *benchStats) add(plain, constrained stepTime, proc, procCPU time.Duration) {
	s.plain, s.plainCPU = append(s.plain, plain.wall), append(s.plainCPU, plain.cpu)
	s.constrained, s.constrainedCPU = append(s.constrained, constrained.wall), append(s.constrainedCPU, constrained.cpu)
	s.inProc, s.inProcCPU = append(s.inProc, proc), append(s.inProcCPU, procCPU)
	s.ratios = append(s.ratios, float64(constrained.wall)/float64(plain.wall))
}

func (s *benchStats) report(o ConstrainedBench) map[string]float64 {
	res := map[string]float64{"steps_plain": float64(len(s.plain)), "steps_constrained": float64(len(s.constrained))}
	for name, d := range map[string][]time.Duration{"plain": s.plain, "constrained": s.constrained,
		"cpu_plain": s.plainCPU, "cpu_constrained": s.constrainedCPU} {
		res["step_ms_median_"+name] = round2(ms(median(d)))
		res["step_ms_mean_"+name] = round2(ms(mean(d)))
	}
	ratio := func(a, b time.Duration) float64 { return math.Round(1000*float64(a)/float64(b)) / 1000 }
	r := slices.Clone(s.ratios)
	slices.Sort(r)
	res["step_ratio_median"] = math.Round(1000*r[len(r)/2]) / 1000
	res["step_ratio_mean"] = ratio(mean(s.constrained), mean(s.plain))
	res["step_cpu_ratio_median"] = ratio(median(s.constrainedCPU), median(s.plainCPU))
	// The processors' calls: wall time and the stepping thread's CPU time
	// in them, the work they add to the step's critical path.
	res["processor_ms_median"] = round2(ms(median(s.inProc)))
	res["processor_ms_mean"] = round2(ms(mean(s.inProc)))
	res["processor_cpu_ms_median"] = round2(ms(median(s.inProcCPU)))
	res["processor_cpu_ms_mean"] = round2(ms(mean(s.inProcCPU)))
	res["processor_share_of_step"] = ratio(mean(s.inProc), mean(s.constrained))
	res["critical_path_ratio"] = ratio(mean(s.plainCPU)+mean(s.inProcCPU), mean(s.plainCPU))
	res["sequences"], res["constrained"] = float64(o.Sequences), float64(o.Constrained)
	return res
}

// stepTime is one step's wall-clock time and the process CPU time (every
// thread: the forward pass's and the mask goroutines') spent during it.
type stepTime struct{ wall, cpu time.Duration }

// benchStepper steps one engine of BenchConstrained and says whether its
// last step counts (decoded every request: all started, none finished).
type benchStepper struct {
	e        *Engine
	started  []bool
	nStarted int
	finished bool
	after    func() // run after each step, inside its time
	counted  bool
	last     stepTime
}

func newBenchStepper(m Forwarder, o ConstrainedBench, reqs []Request) (*benchStepper, error) {
	n := len(reqs)
	e, err := New(m, Options{MaxTotalTokens: n * (o.GenTokens + 40), MaxReqTotalLen: len(reqs[0].Prompt) + o.GenTokens,
		BatchMaxTokens: 512, DisablePromptCache: true, SkipLogProbs: true})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for _, r := range reqs {
		if err := e.Add(r); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	return &benchStepper{e: e, started: make([]bool, n)}, nil
}

// more says whether a later step can still count: once a request has
// finished none can.
func (b *benchStepper) more() bool {
	return b.e.HasWork() && !(b.finished && b.nStarted == len(b.started))
}

func (b *benchStepper) step() error {
	decoding := b.nStarted == len(b.started) && !b.finished
	c0, t0 := processCPU(), time.Now()
	outs, err := b.e.Step()
	if err == nil && b.after != nil {
		b.after()
	}
	b.last = stepTime{time.Since(t0), processCPU() - c0}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.counted = decoding && len(outs) == len(b.started)
	for _, out := range outs {
		if out.Err != nil {
			return fmt.Errorf("bench: request %d: %w", out.ID, out.Err)
		}
		if !b.started[out.ID] {
			b.started[out.ID] = true
			b.nStarted++
		}
		b.finished = b.finished || out.Finished
	}
	return nil
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

// wait returns once a processor that prepares its next mask in the
// background (constrain.Processor's Wait) has it ready.
func (t timedProcessor) wait() {
	if w, ok := t.p.(interface{ Wait() }); ok {
		w.Wait()
	}
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
