package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestZZDemo(t *testing.T) {
	if os.Getenv("BENCH_DEMO") == "" {
		t.Skip()
	}
	srv := newFakeServer(t, 40*time.Millisecond, 8*time.Millisecond)
	cfg := Config{URL: srv.URL, API: APICompletions, RequestRate: 25, Burstiness: 1, MaxConcurrency: 16, DatasetID: "random", SLO: SLO{TTFT: 60 * time.Millisecond}}
	s, _ := RandomSamples(newWordTok(1000), 150, 100, 40, 0.5, 1)
	rep, err := Run(context.Background(), cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteTable(os.Stdout)
	rep.WritePlot("/tmp/ct/plot.svg")
	rep.WriteJSON("/tmp/ct/r.json")
}
