package infer

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/ipc"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// metricsSink is a metric role's PULL end and a client sending to it,
// both closed with the test.
func metricsSink(t *testing.T) (*ipc.Puller, *metrics.Client) {
	t.Helper()
	ep, err := ipc.Endpoint(t.TempDir(), ipc.SockMetric)
	if err != nil {
		t.Fatal(err)
	}
	pull, err := ipc.NewPuller(ep, ipc.Options{QueueLen: 8192})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pull.Close() })
	mc, err := metrics.NewClient(metrics.ClientOptions{Role: "infer", Endpoint: ep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mc.Close)
	return pull, mc
}

// The step metrics carry the prompt-cache tokens the engine evicted for
// room, as deltas that add up to the engine's own count.
func TestStepMetricsSendCacheEvictions(t *testing.T) {
	pull, mc := metricsSink(t)
	r := newRegion(t)
	// 64 KV tokens hold about two finished requests in the prompt cache:
	// every later one evicts.
	eng := newEngine(t, 64, 64)
	w, err := NewWorker(r, eng, WorkerOptions{MaxTotalTokens: 64, Metrics: mc, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		p := []int32{1}
		for j := range 20 {
			p = append(p, int32(3+(i*7+j*3)%50))
		}
		submit(t, r, p, sampler.Params{MaxNewTokens: 8, IgnoreEOS: true})
		runUntil(t, w, 200, func() bool { return w.Live() == 0 && r.Commands().Len() == 0 })
	}
	want := eng.Stats().CacheEvictedTokens
	if want == 0 {
		t.Fatal("the engine evicted no cache tokens; the test needs it to")
	}

	var got float64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for got < float64(want) {
		msg, err := pull.Recv(ctx)
		if err != nil {
			t.Fatalf("received %v of %d evicted tokens: %v", got, want, err)
		}
		if mm, ok := msg.(*ipc.Metric); ok && mm.Name == metrics.CacheEvictedTokens {
			if mm.Kind != ipc.CounterAdd || mm.Value <= 0 {
				t.Fatalf("event %+v", mm)
			}
			got += mm.Value
		}
	}
	if got != float64(want) {
		t.Fatalf("sent %v evicted tokens, the engine counted %d", got, want)
	}
}

// countingExecutor counts the engine steps that ran, by method, as the step
// metrics name them.
type countingExecutor struct {
	*engine.Engine
	prefill, decode int
}

func (c *countingExecutor) Step() ([]engine.Output, error) {
	before := c.Stats().PrefillTokens
	outs, err := c.Engine.Step()
	if c.Stats().PrefillTokens > before {
		c.prefill++
	} else {
		c.decode++
	}
	return outs, err
}

// Every engine step reaches the metric role as one BatchInferenceDuration
// observation and one BatchInferenceCount unit of its method, though they
// are held and sent together: at most maxPendingSteps wait, and an idle
// engine sends what waits.
func TestStepMetricsCountEveryStep(t *testing.T) {
	cases := map[string]struct {
		requests, newTokens int
		// next: iterations before the next request arrives, so that the
		// engine does not go idle in between
		next int
	}{
		"one request, idle at its end":         {requests: 1, newTokens: 8, next: 0},
		"back-to-back, past maxPendingSteps":   {requests: 8, newTokens: 100, next: 75},
		"two requests, each to an idle engine": {requests: 2, newTokens: 20, next: 1000},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pull, mc := metricsSink(t)
			r := newRegion(t)
			ex := &countingExecutor{Engine: newEngine(t, 512, 128)}
			w, err := NewWorker(r, ex, WorkerOptions{MaxTotalTokens: 512, Metrics: mc, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.requests {
				submit(t, r, []int32{1, int32(3 + i)}, sampler.Params{MaxNewTokens: tc.newTokens, IgnoreEOS: true})
				for range tc.next {
					if _, err := w.Iterate(); err != nil {
						t.Fatal(err)
					}
					if n := len(w.steps.prefill) + len(w.steps.decode); n > maxPendingSteps {
						t.Fatalf("%d step durations held, more than %d", n, maxPendingSteps)
					}
				}
			}
			runUntil(t, w, 10000, func() bool { return w.Live() == 0 && r.Commands().Len() == 0 })
			if _, err := w.Iterate(); err != nil { // idle: sends what waits
				t.Fatal(err)
			}
			want := map[string]int{metrics.MethodPrefill: ex.prefill, metrics.MethodDecode: ex.decode}
			observed, counted := map[string]int{}, map[string]int{}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for observed[metrics.MethodPrefill]+observed[metrics.MethodDecode] < ex.prefill+ex.decode ||
				counted[metrics.MethodPrefill]+counted[metrics.MethodDecode] < ex.prefill+ex.decode {
				msg, err := pull.Recv(ctx)
				if err != nil {
					t.Fatalf("observed %v, counted %v of %v steps: %v", observed, counted, want, err)
				}
				mm, ok := msg.(*ipc.Metric)
				if !ok || len(mm.Labels) != 1 {
					continue
				}
				switch mm.Name {
				case metrics.BatchInferenceDuration:
					observed[mm.Labels[0].Value]++
				case metrics.BatchInferenceCount:
					counted[mm.Labels[0].Value] += int(mm.Value)
				}
			}
			for _, method := range []string{metrics.MethodPrefill, metrics.MethodDecode} {
				if observed[method] != want[method] || counted[method] != want[method] {
					t.Errorf("%s: %d observations, count %d, want %d steps", method, observed[method], counted[method], want[method])
				}
			}
		})
	}
}
