package sim

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/sched"
)

func TestRunAllPolicies(t *testing.T) {
	items, err := Dist(DistPrefillHeavy, 300, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sched.PolicyNames() {
		t.Run(p, func(t *testing.T) {
			o := DefaultOptions(40000)
			o.Policy = p
			res, err := Run(o, items)
			if err != nil {
				t.Fatal(err)
			}
			if res.Finished != len(items) || res.Requests != len(items) || res.Policy != p {
				t.Fatalf("result %+v", res)
			}
			if res.DecodeSteps <= 0 || res.MeanKVUsage <= 0 || res.MeanKVUsage > 1 || res.TTFTP99S < res.TTFTP50S {
				t.Fatalf("implausible result %+v", res)
			}
			if (p == sched.PolicyOracle || p == sched.PolicyConservative) && res.Evictions != 0 {
				t.Fatalf("%s evicted %d times", p, res.Evictions)
			}
			again, err := Run(o, items)
			if err != nil || !reflect.DeepEqual(res, again) {
				t.Fatalf("not deterministic:\n%+v\n%+v", res, again)
			}
		})
	}
}

// spy checks that the scheduler never learns a request's true output
// length before its EOS step.
type spy struct {
	sched.Policy
	t        *testing.T
	trueOut  map[uint64]int
	maxNew   int
	observed []int
	passes   int
}

func (s *spy) Begin(v *sched.View) sched.Pass {
	s.passes++
	for _, r := range v.Running {
		if r.OutputLen >= s.trueOut[r.ID] || r.MaxNewTokens != s.maxNew || r.IgnoreEOS {
			s.t.Fatalf("request %d visible at output %d (true %d), max_new %d, ignore_eos %v",
				r.ID, r.OutputLen, s.trueOut[r.ID], r.MaxNewTokens, r.IgnoreEOS)
		}
	}
	return s.Policy.Begin(v)
}

func (s *spy) Observe(n int) {
	s.observed = append(s.observed, n)
	s.Policy.Observe(n)
}

func TestTrueLengthsStayHidden(t *testing.T) {
	items, err := Dist(DistDecodeHeavy, 200, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(60000)
	sp := &spy{t: t, trueOut: map[uint64]int{}, maxNew: 4096}
	wantSum := 0
	for i, it := range items {
		sp.trueOut[uint64(i+1)] = it.Output
		wantSum += it.Output
	}
	o.wrap = func(p sched.Policy) sched.Policy { sp.Policy = p; return sp }
	res, err := Run(o, items)
	if err != nil {
		t.Fatal(err)
	}
	gotSum := 0
	for _, n := range sp.observed {
		gotSum += n
	}
	if sp.passes == 0 || len(sp.observed) != len(items) || gotSum != wantSum || res.Finished != len(items) {
		t.Fatalf("%d passes, %d lengths observed (sum %d, want %d)", sp.passes, len(sp.observed), gotSum, wantSum)
	}
}

func TestGoodputAndSLA(t *testing.T) {
	// A light load meets the SLA; the same requests all at once do not.
	items, err := Dist(DistShareGPTLike, 400, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(120000)
	light, err := Run(o, items)
	if err != nil {
		t.Fatal(err)
	}
	if light.SLAMet < 390 || light.GoodputTokS <= 0 || light.TTFTP99S > o.SLA.TTFTS || light.Evictions != 0 {
		t.Fatalf("light load: %+v", light)
	}
	for i := range items {
		items[i].Arrival = 0
	}
	o.Config.MaxTotalTokens = 20000
	heavy, err := Run(o, items)
	if err != nil {
		t.Fatal(err)
	}
	if heavy.SLAMet >= light.SLAMet || heavy.GoodputTokS >= light.GoodputTokS {
		t.Fatalf("overload met the SLA as often: light %+v heavy %+v", light, heavy)
	}
	b, err := json.Marshal(heavy)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	want := "decode_steps evictions finished goodput_tok_s max_itl_p99_s mean_kv_usage policy requests sla ttft_p50_s ttft_p99_s"
	got := make([]string, 0, len(keys))
	for k := range keys {
		got = append(got, k)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != want {
		t.Fatalf("json keys %v", got)
	}
	if sla := keys["sla"].(map[string]any); sla["ttft_s"] != 10.0 || sla["max_itl_s"] != 1.5 {
		t.Fatalf("sla %v", sla)
	}
}

func TestRunErrors(t *testing.T) {
	items := []Item{{Input: 100, Output: 10, MaxNew: 10}}
	tests := []struct {
		name   string
		mutate func(*Options, *[]Item)
	}{
		{"no requests", func(o *Options, it *[]Item) { *it = nil }},
		{"output above max_new", func(o *Options, it *[]Item) { o.MaxNewTokens = 5 }},
		{"request larger than the KV", func(o *Options, it *[]Item) { o.Config.MaxTotalTokens = 50 }},
		{"unknown policy", func(o *Options, it *[]Item) { o.Policy = "greedy" }},
		{"chunk above batch", func(o *Options, it *[]Item) { o.Config.ChunkedPrefillSize = o.Config.BatchMaxTokens + 1 }},
		{"bad model", func(o *Options, it *[]Item) { o.Model.DecodeBaseS = -1 }},
		{"unsorted arrivals", func(o *Options, it *[]Item) { *it = []Item{{1, 1, 5, 1}, {1, 1, 2, 1}} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, it := DefaultOptions(120000), append([]Item(nil), items...)
			tc.mutate(&o, &it)
			if _, err := Run(o, it); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// A request whose estimate never fits (past_future_ema's +16 margin and
// chunk term exceed 1000) but whose worst case does is still run: the
// router admits the head of the queue on an idle engine, so the simulation
// neither spins nor stops with ErrStuck.
func TestIdleEngineRunsHead(t *testing.T) {
	o := DefaultOptions(1000)
	o.Policy = sched.PolicyPastFutureEMA
	res, err := Run(o, []Item{{Input: 500, Output: 10, MaxNew: 500}})
	if err != nil || res.Finished != 1 {
		t.Fatalf("err %v, result %+v; want the request finished", err, res)
	}
}
