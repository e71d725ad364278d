package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// Report is a finished (or interrupted) run: the configuration, the
// aggregate metrics and the per-request measurements.
type Report struct {
	Config      Config
	Metrics     Metrics
	Results     []*Result // by sample index; nil for samples never sent
	Date        time.Time
	Interrupted bool
	NumPrompts  int         // requests the dataset asked for
	Turns       []TurnStats // multiturn dataset only
	// CacheUse is the prompt tokens the server served from its prefix
	// cache over the run, by its per-request counts or else its /metrics
	// counters; nil when it reports neither.
	CacheUse *CacheUse
	Warnings []string // printed after the table
}

func newReport(cfg Config, results []*Result, d time.Duration, interrupted bool, n int) *Report {
	return &Report{
		Config: cfg, Metrics: Compute(results, d, cfg.SLO), Results: results,
		Date: time.Now(), Interrupted: interrupted, NumPrompts: n,
	}
}

// WriteTable prints the human-readable summary (the layout of vLLM's
// "Serving Benchmark Result", so numbers can be compared side by side).
func (r *Report) WriteTable(w io.Writer) error {
	m := r.Metrics
	var b strings.Builder
	title := " Serving Benchmark Result "
	if r.Interrupted {
		title = " Serving Benchmark Result (INTERRUPTED, partial) "
	}
	line := func(label string, v any) {
		switch x := v.(type) {
		case float64:
			fmt.Fprintf(&b, "%-40s %.2f\n", label, x)
		default:
			fmt.Fprintf(&b, "%-40s %v\n", label, x)
		}
	}
	section := func(name string) {
		pad := max(50-len(name), 2)
		fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("-", pad/2), name, strings.Repeat("-", pad-pad/2))
	}
	fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("=", (50-len(title))/2), title, strings.Repeat("=", 50-len(title)-(50-len(title))/2))
	line("Successful requests:", m.Completed)
	line("Failed requests:", m.Failed)
	if m.Canceled > 0 || r.Interrupted {
		line("Canceled / not sent (interrupted):", r.NumPrompts-m.Completed-m.Failed)
	} else if n := r.NumPrompts - m.Completed - m.Failed; n > 0 {
		line("Not sent (an earlier turn failed):", n)
	}
	line("Benchmark duration (s):", m.Duration.Seconds())
	in := "Total input tokens:"
	if m.ServerPromptCounts {
		in = "Total input tokens (server count):"
	}
	line(in, m.TotalInput)
	if m.ServerCacheCounts {
		line("Cached input tokens (server count):", m.TotalCached)
	} else if u := r.CacheUse; u != nil {
		line("Cached input tokens (server /metrics):", u.Cached)
	}
	line("Total generated tokens:", m.TotalOutput)
	line("Request throughput (req/s):", m.RequestThroughput)
	if r.Config.SLO.set() {
		line("Request goodput (req/s):", m.Goodput)
	}
	line("Output token throughput (tok/s):", m.OutputThroughput)
	line("Peak output token throughput (tok/s):", m.PeakOutputThroughput)
	line("Peak concurrent requests:", m.PeakConcurrency)
	line("Total token throughput (tok/s):", m.TotalTokenThroughput)
	for _, s := range []struct {
		title, short string
		st           Stats
	}{
		{"Time to First Token", "TTFT", m.TTFT},
		{"Time per Output Token (excl. 1st token)", "TPOT", m.TPOT},
		{"Inter-token Latency", "ITL", m.ITL},
		{"End-to-end Latency", "E2EL", m.E2EL},
	} {
		section(s.title)
		line("Mean "+s.short+" (ms):", s.st.Mean)
		line("Median "+s.short+" (ms):", s.st.Median)
		line("P90 "+s.short+" (ms):", s.st.P90)
		line("P99 "+s.short+" (ms):", s.st.P99)
	}
	if len(r.Turns) > 0 {
		writeTurns(&b, r.Turns, section)
	}
	if m.Failed > 0 {
		section("Failures")
		fmt.Fprintf(&b, "First error: %s\n", m.FirstError)
		for i, e := range m.ErrorCounts {
			if i == 5 {
				fmt.Fprintf(&b, "... and %d more distinct errors\n", len(m.ErrorCounts)-5)
				break
			}
			fmt.Fprintf(&b, "%6d x %s\n", e.Count, truncate(e.Error, 200))
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	for _, warn := range r.Warnings {
		b.WriteString(warn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTurns prints the multiturn summary: per turn, the prompt tokens sent,
// those the server took from its prefix cache, those it had to prefill,
// and the TTFT they cost.
func writeTurns(b *strings.Builder, turns []TurnStats, section func(string)) {
	section("Multi-turn (totals per turn)")
	fmt.Fprintf(b, "%-5s %5s %8s %8s %8s %9s %9s %9s\n", "Turn", "Reqs", "Prompt", "Cached", "Prefill", "Mean TTFT", "Med TTFT", "P90 TTFT")
	for _, t := range turns {
		cached := "n/a"
		if t.CachedKnown {
			cached = fmt.Sprint(t.CachedTokens)
		}
		fmt.Fprintf(b, "%-5d %5d %8d %8s %8d %9.2f %9.2f %9.2f\n", t.Turn, t.Completed, t.PromptTokens, cached,
			t.PrefillTokens, t.TTFT.Mean, t.TTFT.Median, t.TTFT.P90)
	}
	b.WriteString("(tokens: server counts where reported; TTFT in ms)\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// jsonReport is the --json file: vLLM's result keys (so existing scripts
// read it) plus ours.
type jsonReport struct {
	Date                 string       `json:"date"`
	API                  string       `json:"backend"`
	URL                  string       `json:"url"`
	Model                string       `json:"model_id"`
	Dataset              string       `json:"dataset"`
	NumPrompts           int          `json:"num_prompts"`
	RequestRate          any          `json:"request_rate"`
	Burstiness           float64      `json:"burstiness"`
	MaxConcurrency       *int         `json:"max_concurrency"`
	IgnoreEOS            bool         `json:"ignore_eos"`
	Seed                 uint64       `json:"seed"`
	Interrupted          bool         `json:"interrupted"`
	Duration             float64      `json:"duration"`
	Completed            int          `json:"completed"`
	Failed               int          `json:"failed"`
	Canceled             int          `json:"canceled"`
	TotalInput           int          `json:"total_input_tokens"`
	TotalOutput          int          `json:"total_output_tokens"`
	InputFromServer      bool         `json:"input_tokens_counted_by_server"`
	RequestThroughput    float64      `json:"request_throughput"`
	RequestGoodput       *float64     `json:"request_goodput"`
	Goodput              *goodputJSON `json:"goodput_slo_ms,omitempty"`
	OutputThroughput     float64      `json:"output_throughput"`
	PeakOutputThroughput float64      `json:"max_output_tokens_per_s"`
	PeakConcurrency      int          `json:"max_concurrent_requests"`
	TotalTokenThroughput float64      `json:"total_token_throughput"`
	MeanTTFT             float64      `json:"mean_ttft_ms"`
	MedianTTFT           float64      `json:"median_ttft_ms"`
	P90TTFT              float64      `json:"p90_ttft_ms"`
	P99TTFT              float64      `json:"p99_ttft_ms"`
	MeanTPOT             float64      `json:"mean_tpot_ms"`
	MedianTPOT           float64      `json:"median_tpot_ms"`
	P90TPOT              float64      `json:"p90_tpot_ms"`
	P99TPOT              float64      `json:"p99_tpot_ms"`
	MeanITL              float64      `json:"mean_itl_ms"`
	MedianITL            float64      `json:"median_itl_ms"`
	P90ITL               float64      `json:"p90_itl_ms"`
	P99ITL               float64      `json:"p99_itl_ms"`
	MeanE2EL             float64      `json:"mean_e2el_ms"`
	MedianE2EL           float64      `json:"median_e2el_ms"`
	P90E2EL              float64      `json:"p90_e2el_ms"`
	P99E2EL              float64      `json:"p99_e2el_ms"`
	TotalCached          *int         `json:"total_cached_tokens,omitempty"`
	ServerCache          *CacheUse    `json:"server_cache,omitempty"`
	Warnings             []string     `json:"warnings,omitempty"`
	Turns                []turnJSON   `json:"turns,omitempty"`
	FirstError           string       `json:"first_error,omitempty"`
	ErrorCounts          []ErrorCount `json:"error_counts,omitempty"`
	// Per request, in send order (vLLM's keys; times in seconds).
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	E2ELs      []float64   `json:"e2els"`
	SendTimes  []float64   `json:"send_times"`
	Errors     []string    `json:"errors"`
	// Ours: the server's prefix-cache hit per request (null: not reported)
	// and, for multiturn, each request's turn.
	CachedLens []*int `json:"cached_lens"`
	TurnOf     []int  `json:"turn_of_request,omitempty"`
}

type turnJSON struct {
	Turn          int     `json:"turn"`
	Completed     int     `json:"completed"`
	PromptTokens  int     `json:"prompt_tokens"`
	CachedTokens  *int    `json:"cached_tokens"`
	PrefillTokens int     `json:"prefill_tokens"`
	MeanTTFT      float64 `json:"mean_ttft_ms"`
	MedianTTFT    float64 `json:"median_ttft_ms"`
	P90TTFT       float64 `json:"p90_ttft_ms"`
	P99TTFT       float64 `json:"p99_ttft_ms"`
}

type goodputJSON struct {
	TTFT float64 `json:"ttft,omitempty"`
	TPOT float64 `json:"tpot,omitempty"`
	E2EL float64 `json:"e2el,omitempty"`
}

// WriteJSON writes the --json file.
func (r *Report) WriteJSON(path string) error {
	m, c := r.Metrics, r.Config
	j := jsonReport{
		Date: r.Date.Format("20060102-150405"), API: string(c.API), URL: c.URL, Model: c.Model,
		Dataset: c.DatasetID, NumPrompts: r.NumPrompts, RequestRate: c.RequestRate, Burstiness: c.Burstiness,
		IgnoreEOS: c.IgnoreEOS, Seed: c.Seed, Interrupted: r.Interrupted,
		Duration: m.Duration.Seconds(), Completed: m.Completed, Failed: m.Failed, Canceled: m.Canceled,
		TotalInput: m.TotalInput, TotalOutput: m.TotalOutput, InputFromServer: m.ServerPromptCounts,
		RequestThroughput: m.RequestThroughput, OutputThroughput: m.OutputThroughput,
		PeakOutputThroughput: m.PeakOutputThroughput, PeakConcurrency: m.PeakConcurrency,
		TotalTokenThroughput: m.TotalTokenThroughput,
		MeanTTFT:             m.TTFT.Mean, MedianTTFT: m.TTFT.Median, P90TTFT: m.TTFT.P90, P99TTFT: m.TTFT.P99,
		MeanTPOT: m.TPOT.Mean, MedianTPOT: m.TPOT.Median, P90TPOT: m.TPOT.P90, P99TPOT: m.TPOT.P99,
		MeanITL: m.ITL.Mean, MedianITL: m.ITL.Median, P90ITL: m.ITL.P90, P99ITL: m.ITL.P99,
		MeanE2EL: m.E2EL.Mean, MedianE2EL: m.E2EL.Median, P90E2EL: m.E2EL.P90, P99E2EL: m.E2EL.P99,
		FirstError: m.FirstError, ErrorCounts: m.ErrorCounts, ServerCache: r.CacheUse, Warnings: r.Warnings,
	}
	if math.IsInf(c.RequestRate, 1) {
		j.RequestRate = "inf"
	}
	if m.ServerCacheCounts {
		tc := m.TotalCached
		j.TotalCached = &tc
	}
	for _, t := range r.Turns {
		tj := turnJSON{Turn: t.Turn, Completed: t.Completed, PromptTokens: t.PromptTokens, PrefillTokens: t.PrefillTokens,
			MeanTTFT: t.TTFT.Mean, MedianTTFT: t.TTFT.Median, P90TTFT: t.TTFT.P90, P99TTFT: t.TTFT.P99}
		if t.CachedKnown {
			c := t.CachedTokens
			tj.CachedTokens = &c
		}
		j.Turns = append(j.Turns, tj)
	}
	if c.MaxConcurrency > 0 {
		mc := c.MaxConcurrency
		j.MaxConcurrency = &mc
	}
	if c.SLO.set() {
		g := m.Goodput
		j.RequestGoodput = &g
		j.Goodput = &goodputJSON{TTFT: ms(c.SLO.TTFT), TPOT: ms(c.SLO.TPOT), E2EL: ms(c.SLO.E2EL)}
	}
	for _, res := range r.Results {
		if res == nil || res.Canceled {
			continue
		}
		itl := make([]float64, len(res.ITL))
		for i, d := range res.ITL {
			itl[i] = d.Seconds()
		}
		j.InputLens = append(j.InputLens, res.PromptLen)
		j.SendTimes = append(j.SendTimes, res.Sent.Seconds())
		j.Errors = append(j.Errors, res.Err)
		if res.Success {
			j.OutputLens = append(j.OutputLens, res.OutputLen)
			j.TTFTs = append(j.TTFTs, res.TTFT.Seconds())
			j.E2ELs = append(j.E2ELs, res.Latency.Seconds())
		} else {
			j.OutputLens = append(j.OutputLens, 0)
			j.TTFTs = append(j.TTFTs, 0)
			j.E2ELs = append(j.E2ELs, 0)
		}
		j.ITLs = append(j.ITLs, itl)
		var cached *int
		if res.Success && res.CachedKnown {
			c := res.CachedTokens
			cached = &c
		}
		j.CachedLens = append(j.CachedLens, cached)
		if len(r.Turns) > 0 {
			j.TurnOf = append(j.TurnOf, res.Turn)
		}
	}
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
