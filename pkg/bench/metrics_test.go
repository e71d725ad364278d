package bench

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const msec = time.Millisecond

// result builds a successful request: sent at `sent`, first chunk after
// ttft, then `out-1` chunks every itl.
func result(sent, ttft, itl time.Duration, out, prompt int) *Result {
	r := &Result{Success: true, PromptLen: prompt, OutputLen: out, Sent: sent, TTFT: ttft}
	at := sent + ttft
	r.Chunks = append(r.Chunks, at)
	for i := 1; i < out; i++ {
		at += itl
		r.ITL = append(r.ITL, itl)
		r.Chunks = append(r.Chunks, at)
	}
	r.Latency = at - sent
	r.End = at
	return r
}

func TestPercentileMatchesNumpy(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10}
	// numpy.percentile([1,2,3,4,10], [50, 90, 99]) = 3, 7.6, 9.76
	for p, want := range map[float64]float64{50: 3, 90: 7.6, 99: 9.76, 0: 1, 100: 10} {
		if got := percentile(xs, p); math.Abs(got-want) > 1e-9 {
			t.Errorf("p%g = %g, want %g", p, got, want)
		}
	}
	s := summarize([]float64{10, 1, 4, 3, 2})
	if s.Mean != 4 || s.Median != 3 || s.N != 5 {
		t.Fatalf("%+v", s)
	}
	if (summarize(nil) != Stats{}) {
		t.Fatal("empty stats not zero")
	}
}

func TestComputeMetrics(t *testing.T) {
	results := []*Result{
		result(0, 100*msec, 20*msec, 11, 50),       // TPOT 20 ms, E2EL 300 ms
		result(500*msec, 300*msec, 40*msec, 6, 70), // TPOT 40 ms, E2EL 500 ms
		result(1200*msec, 50*msec, 10*msec, 1, 30), // one token: no TPOT
		{Err: "HTTP 500: boom", Sent: 100 * msec, End: 150 * msec},
		{Err: "HTTP 500: boom", Sent: 200 * msec, End: 210 * msec},
		{Err: "read stream: EOF", Sent: 300 * msec, End: 900 * msec},
		{Canceled: true, Err: "context canceled", Sent: 1500 * msec, End: 1600 * msec},
		nil, // never sent
	}
	slo := SLO{TTFT: 200 * msec, TPOT: 30 * msec}
	m := Compute(results, 2*time.Second, slo)
	if m.Completed != 3 || m.Failed != 3 || m.Canceled != 1 {
		t.Fatalf("completed %d failed %d canceled %d", m.Completed, m.Failed, m.Canceled)
	}
	if m.TotalInput != 150 || m.TotalOutput != 18 {
		t.Fatalf("tokens %d/%d", m.TotalInput, m.TotalOutput)
	}
	if m.RequestThroughput != 1.5 || m.OutputThroughput != 9 || m.TotalTokenThroughput != 84 {
		t.Fatalf("throughput %g %g %g", m.RequestThroughput, m.OutputThroughput, m.TotalTokenThroughput)
	}
	// Requests 1 (ttft 100, tpot 20) and 3 (ttft 50, tpot 0) meet the SLOs.
	if m.GoodCompleted != 2 || m.Goodput != 1 {
		t.Fatalf("goodput %d -> %g", m.GoodCompleted, m.Goodput)
	}
	if m.TPOT.N != 2 || m.TPOT.Mean != 30 || m.TTFT.Mean != 150 || m.E2EL.Median != 300 {
		t.Fatalf("TPOT %+v TTFT %+v E2EL %+v", m.TPOT, m.TTFT, m.E2EL)
	}
	if m.ITL.N != 15 || math.Abs(m.ITL.Mean-(10*20+5*40)/15.0) > 1e-9 {
		t.Fatalf("ITL %+v", m.ITL)
	}
	if m.FirstError != "HTTP 500: boom" || len(m.ErrorCounts) != 2 || m.ErrorCounts[0].Count != 2 {
		t.Fatalf("errors %q %+v", m.FirstError, m.ErrorCounts)
	}
	// Intervals: 0-0.3, 0.1-0.15, 0.2-0.21, 0.3-0.9, 0.5-1.0, 1.2-1.25,
	// 1.5-1.6: never more than two at once (0.3 ends as 0.3 starts).
	if m.PeakConcurrency != 2 {
		t.Fatalf("peak concurrency %d", m.PeakConcurrency)
	}
	// Second 0 holds request 1's 11 chunks and 5 of request 2's (0.8 ..
	// 0.96 s); its last chunk (1.0 s) and request 3's fall in second 1.
	if len(m.Timeline) != 3 || m.Timeline[0].OutputTokens != 16 || m.Timeline[1].OutputTokens != 2 {
		t.Fatalf("timeline %+v", m.Timeline)
	}
	// The busiest second slides: 0.1 .. 1.1 s holds all 17 chunks of
	// requests 1 and 2; request 3's one chunk (1.25 s) is outside it.
	if m.PeakOutputThroughput != 17 || m.Timeline[0].InFlight != 2 || m.Timeline[1].InFlight != 1 {
		t.Fatalf("peak tok/s %g, timeline %+v", m.PeakOutputThroughput, m.Timeline)
	}
}

// TestPeakThroughput: the peak is the busiest one-second window, the whole
// run when it is shorter, and never below the mean throughput.
func TestPeakThroughput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		results  []*Result
		duration time.Duration
		want     float64
	}{
		// 30 tokens in a 0.3 s run: 100 tok/s, not 30 (one fixed second).
		{"run under a second", []*Result{result(0, 10*msec, 10*msec, 30, 5)}, 300 * msec, 100},
		// 20 tokens 0.9 .. 1.09 s straddle the fixed seconds 0 and 1.
		{"burst across a second boundary", []*Result{result(890*msec, 10*msec, 10*msec, 20, 5)}, 3 * time.Second, 20},
		// A short trailing second is not stretched to a full one: the last
		// window is the run's last second, 1.0 .. 2.0 s.
		{"short tail", []*Result{result(0, 10*msec, 100*msec, 10, 5), result(1900*msec, 10*msec, 10*msec, 5, 5)}, 2 * time.Second, 10},
		{"nothing completed", []*Result{nil, {Err: "x"}}, time.Second, 0},
		{"zero duration", []*Result{result(0, 0, 0, 1, 1)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := peakThroughput(tc.results, tc.duration); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("peak %g tok/s, want %g", got, tc.want)
			}
		})
	}
}

func TestParseGoodput(t *testing.T) {
	s, err := ParseGoodput([]string{"ttft:500", "tpot:50,e2el:2000.5"})
	if err != nil || s.TTFT != 500*msec || s.TPOT != 50*msec || s.E2EL != 2000500*time.Microsecond {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"ttft", "ttft:", "ttft:-1", "ttft:abc", "latency:5", "tpot:inf"} {
		if _, err := ParseGoodput([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func sampleReport() *Report {
	results := []*Result{
		result(0, 100*msec, 20*msec, 11, 50),
		result(500*msec, 300*msec, 40*msec, 6, 70),
		{Err: "HTTP 500: boom <&>", Sent: 100 * msec, End: 150 * msec},
	}
	cfg := Config{URL: "http://h:1", API: APIChat, Model: "m", RequestRate: math.Inf(1), Burstiness: 1,
		MaxConcurrency: 4, SLO: SLO{TTFT: 200 * msec}, DatasetID: "random"}
	return newReport(cfg, results, 1200*msec, false, 3)
}

func TestReportTableAndJSON(t *testing.T) {
	rep := sampleReport()
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	for _, want := range []string{"Successful requests:                     2", "Failed requests:                         1",
		"Request goodput (req/s):", "Mean TTFT (ms):                          200.00", "P99 E2EL (ms):",
		"Peak concurrent requests:", "First error: HTTP 500: boom"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if j["request_rate"] != "inf" || j["completed"].(float64) != 2 || j["request_goodput"].(float64) <= 0 ||
		j["mean_ttft_ms"].(float64) != 200 || len(j["ttfts"].([]any)) != 3 || j["first_error"] != "HTTP 500: boom <&>" {
		t.Fatalf("json: %s", data)
	}
}

func TestPlotSVG(t *testing.T) {
	rep := sampleReport()
	path := filepath.Join(t.TempDir(), "p.svg")
	if err := rep.WritePlot(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Well-formed XML with the three panels and their curves.
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	for _, want := range []string{"TTFT CDF", "TPOT CDF", "Throughput over time", "requests in flight"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	if polylines != 4 {
		t.Errorf("%d curves, want 4 (two CDFs, tokens/s, in flight)", polylines)
	}
	if err := rep.WritePlot(filepath.Join(t.TempDir(), "p.gif")); err == nil {
		t.Error("unknown plot format accepted")
	}
	// A run where everything failed still draws (with "no data").
	empty := newReport(rep.Config, []*Result{{Err: "x", End: msec}}, msec, true, 1)
	if err := empty.WritePlot(filepath.Join(t.TempDir(), "e.svg")); err != nil {
		t.Fatal(err)
	}
}

func TestNiceScale(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.7: 0.8, 1: 1, 1.3: 1.5, 2.2: 2.5, 3.1: 4, 7: 8, 140: 150, 0.031: 0.04, 9: 10} {
		if got := niceMax(v); math.Abs(got-want) > 1e-12 {
			t.Errorf("niceMax(%g) = %g, want %g", v, got, want)
		}
	}
	if ticks := niceTicks(200, 5); len(ticks) != 5 || ticks[4] != 200 {
		t.Errorf("ticks %v", ticks)
	}
}
