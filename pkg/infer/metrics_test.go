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

// The step metrics carry the prompt-cache tokens the engine evicted for
// room, as deltas that add up to the engine's own count.
func TestStepMetricsSendCacheEvictions(t *testing.T) {
	ep, err := ipc.Endpoint(t.TempDir(), ipc.SockMetric)
	if err != nil {
		t.Fatal(err)
	}
	pull, err := ipc.NewPuller(ep, ipc.Options{QueueLen: 8192})
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	mc, err := metrics.NewClient(metrics.ClientOptions{Role: "infer", Endpoint: ep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()

	r := newRegion(t)
	m, err := NewSyntheticModel(testVocab, 128, 1, []int32{2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 64 KV tokens hold about two finished requests in the prompt cache:
	// every later one evicts.
	eng, err := engine.New(m, engine.Options{MaxTotalTokens: 64, MaxReqTotalLen: 64})
	if err != nil {
		t.Fatal(err)
	}
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
