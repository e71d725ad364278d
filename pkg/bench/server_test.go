package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// distinctSamples are n prompts of four words that share no prefix.
func distinctSamples(n, out int) []Sample {
	s := make([]Sample, n)
	for i := range s {
		s[i] = Sample{Prompt: fmt.Sprintf("a%d b%d c%d d%d", i, i, i, i), PromptLen: 4, OutputLen: out}
	}
	return s
}

// TestMaxModelLenChecked: a run whose longest request exceeds the
// max_model_len of /v1/models is refused, naming the numbers, before any
// request is sent; one that fits exactly runs.
func TestMaxModelLenChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		api     API
		maxLen  int
		wantErr string
	}{
		{"over by one", APICompletions, 8, "sample 0 needs 3 input + 6 output = 9 tokens, more than the server's max_model_len 8"},
		{"native API too", APILightLLM, 5, "max_model_len 5"},
		{"fits exactly", APIChat, 9, ""},
		{"server does not say", APICompletions, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, time.Millisecond, time.Millisecond)
			srv.maxModelLen = tc.maxLen
			cfg := Config{URL: srv.URL, API: tc.api, RequestRate: math.Inf(1), Burstiness: 1}
			rep, err := Run(context.Background(), cfg, samples(3, 6))
			if tc.wantErr == "" {
				if err != nil || rep.Metrics.Completed != 3 {
					t.Fatalf("refused or failed: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.wantErr)
			}
			if len(srv.prompts) != 0 {
				t.Fatalf("%d requests sent before the refusal", len(srv.prompts))
			}
		})
	}
	t.Run("multiturn counts every earlier answer", func(t *testing.T) {
		srv := newFakeServer(t, time.Millisecond, time.Millisecond)
		srv.maxModelLen = 20
		convs := []Conversation{{Users: []string{"w1 w2", " w3", " w4"}, UserLens: []int{2, 1, 1}, OutputLen: 6}}
		cfg := Config{URL: srv.URL, API: APICompletions, RequestRate: math.Inf(1), Burstiness: 1}
		// Turn 3: 4 user tokens + 2 answers of 6, then 6 more: 22 > 20.
		if _, err := RunMultiTurn(context.Background(), cfg, convs); err == nil || !strings.Contains(err.Error(), "16 input + 6 output = 22") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestPeakThroughputShortRun: against a scripted server, a run far shorter
// than a second reports a peak equal to its mean output throughput (the
// whole run is the window), not the tokens of one fixed second.
func TestPeakThroughputShortRun(t *testing.T) {
	srv := newFakeServer(t, 5*time.Millisecond, 2*time.Millisecond)
	cfg := Config{URL: srv.URL, API: APICompletions, RequestRate: math.Inf(1), Burstiness: 1}
	rep, err := Run(context.Background(), cfg, samples(4, 20))
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Metrics
	if m.Completed != 4 || m.TotalOutput != 80 {
		t.Fatalf("completed %d, %d tokens (%s)", m.Completed, m.TotalOutput, m.FirstError)
	}
	if m.PeakOutputThroughput < m.OutputThroughput*(1-1e-9) {
		t.Fatalf("peak %.1f tok/s below the mean %.1f tok/s", m.PeakOutputThroughput, m.OutputThroughput)
	}
	// A stalled machine may stretch the run past a second; then the peak
	// is a one-second window's and only the bound above holds.
	if m.Duration < time.Second && math.Abs(m.PeakOutputThroughput-80/m.Duration.Seconds()) > 1e-6 {
		t.Fatalf("run of %v: peak %.1f tok/s, want the whole run's %.1f", m.Duration, m.PeakOutputThroughput, 80/m.Duration.Seconds())
	}
	if m.Duration < time.Second && m.PeakOutputThroughput <= 80 {
		t.Fatalf("run of %v: peak %.1f tok/s is the per-second bucket's count", m.Duration, m.PeakOutputThroughput)
	}
}

// TestPromptCacheWarning: repeating a run with the same prompts (the same
// --seed) against a server with a prefix cache warns that the run measured
// the cache, by the per-request usage counts or, when the server reports
// none, by its /metrics counters; the first run does not warn.
func TestPromptCacheWarning(t *testing.T) {
	for _, tc := range []struct {
		name    string
		api     API
		noUsage bool // no per-request counts: /metrics only
		source  string
	}{
		{"usage counts", APICompletions, false, "usage"},
		{"native per-token counts", APILightLLM, false, "usage"},
		{"metrics counters", APICompletions, true, "/metrics lightllm_cache_length_sum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, time.Millisecond, time.Millisecond)
			srv.prefixCache, srv.metrics, srv.noUsage = true, true, tc.noUsage
			cfg := Config{URL: srv.URL, API: tc.api, RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 1, Seed: 7,
				Tokenizer: newWordTok(10)}
			s := distinctSamples(4, 3)
			for run := range 2 {
				rep, err := Run(context.Background(), cfg, s)
				if err != nil {
					t.Fatal(err)
				}
				u := rep.CacheUse
				if u == nil || u.Source != tc.source {
					t.Fatalf("run %d: cache use %+v, want source %q", run, u, tc.source)
				}
				var b strings.Builder
				if err := rep.WriteTable(&b); err != nil {
					t.Fatal(err)
				}
				warned := strings.Contains(b.String(), "warning: the server served 12 of 16 prompt tokens (75%")
				if run == 0 && (len(rep.Warnings) != 0 || u.Cached != 0) {
					t.Fatalf("first run: cache use %+v, warnings %q", u, rep.Warnings)
				}
				if run == 1 && (!warned || !strings.Contains(b.String(), "--seed 7")) {
					t.Fatalf("repeated run: cache use %+v, no warning in\n%s", u, b.String())
				}
			}
		})
	}
	t.Run("no counters anywhere", func(t *testing.T) {
		srv := newFakeServer(t, time.Millisecond, time.Millisecond)
		srv.noUsage = true
		cfg := Config{URL: srv.URL, API: APICompletions, RequestRate: math.Inf(1), Burstiness: 1, Tokenizer: newWordTok(10)}
		rep, err := Run(context.Background(), cfg, samples(2, 2))
		if err != nil || rep.CacheUse != nil || len(rep.Warnings) != 0 {
			t.Fatalf("err %v, cache use %+v, warnings %q", err, rep.CacheUse, rep.Warnings)
		}
	})
}

func TestSampleLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		name string
		v    float64
		ok   bool
	}{
		{`lightllm_cache_length_sum{model_name="m",le="a}b"} 42`, "lightllm_cache_length_sum", 42, true},
		{"vllm:prefix_cache_hits_total 7 1700000000", "vllm:prefix_cache_hits_total", 7, true},
		{"# HELP x y", "", 0, false},
		{"", "", 0, false},
		{"name{unclosed 3", "", 0, false},
		{"name NaNx", "name", 0, false},
	} {
		name, v, ok := sampleLine(tc.line)
		if ok != tc.ok || (ok && (name != tc.name || v != tc.v)) {
			t.Errorf("%q: %q %g %v", tc.line, name, v, ok)
		}
	}
}
