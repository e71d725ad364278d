package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lightllm-go/lightllm/pkg/ipc"
)

func TestBuckets(t *testing.T) {
	d := DurationBuckets()
	if len(d) != 35 || math.Abs(d[0]-0.0015) > 1e-12 || math.Abs(d[1]/d[0]-1.5) > 1e-12 {
		t.Errorf("duration buckets: len %d, first %v, second %v", len(d), d[0], d[1])
	}
	tok := TokenBuckets(2048)
	if len(tok) != 101 || tok[0] != 0 || tok[1] != 20.48 || tok[100] != 2048 {
		t.Errorf("token buckets: len %d, [0]=%v [1]=%v [100]=%v", len(tok), tok[0], tok[1], tok[100])
	}
	r := RatioBuckets()
	if len(r) != 11 || r[0] != 0 || r[10] != 1 {
		t.Errorf("ratio buckets %v", r)
	}
}

func TestRegistryApply(t *testing.T) {
	tests := map[string]struct {
		ev     ipc.Metric
		reject string // reason, "" = applied
	}{
		"counter":            {ipc.Metric{Kind: ipc.CounterAdd, Name: RequestCount, Value: 2}, ""},
		"counter with label": {ipc.Metric{Kind: ipc.CounterAdd, Name: BatchInferenceCount, Labels: []ipc.Label{{Name: "method", Value: MethodPrefill}}, Value: 1}, ""},
		"gauge negative ok":  {ipc.Metric{Kind: ipc.GaugeSet, Name: QueueSize, Value: -1}, ""},
		"histogram":          {ipc.Metric{Kind: ipc.HistogramObserve, Name: RequestFirstTokenDuration, Value: 0.2}, ""},
		"unknown name":       {ipc.Metric{Kind: ipc.CounterAdd, Name: "lightllm_nope", Value: 1}, rejectUnknown},
		"wrong kind":         {ipc.Metric{Kind: ipc.GaugeSet, Name: RequestCount, Value: 1}, rejectKind},
		"negative counter":   {ipc.Metric{Kind: ipc.CounterAdd, Name: RequestCount, Value: -1}, rejectValue},
		"NaN":                {ipc.Metric{Kind: ipc.HistogramObserve, Name: RequestFirstTokenDuration, Value: math.NaN()}, rejectValue},
		"Inf":                {ipc.Metric{Kind: ipc.GaugeSet, Name: QueueSize, Value: math.Inf(1)}, rejectValue},
		"missing label":      {ipc.Metric{Kind: ipc.CounterAdd, Name: BatchInferenceCount, Value: 1}, rejectLabel},
		"unexpected label":   {ipc.Metric{Kind: ipc.CounterAdd, Name: RequestCount, Labels: []ipc.Label{{Name: "method", Value: "x"}}, Value: 1}, rejectLabel},
		"label not allowed":  {ipc.Metric{Kind: ipc.CounterAdd, Name: BatchInferenceCount, Labels: []ipc.Label{{Name: "method", Value: "verify"}}, Value: 1}, rejectLabel},
		"role label":         {ipc.Metric{Kind: ipc.GaugeSet, Name: EventsDropped, Labels: []ipc.Label{{Name: "role", Value: "router"}}, Value: 5}, ""},
		"wrong label name":   {ipc.Metric{Kind: ipc.CounterAdd, Name: BatchInferenceCount, Labels: []ipc.Label{{Name: "role", Value: "decode"}}, Value: 1}, rejectLabel},
		"sender model_name":  {ipc.Metric{Kind: ipc.CounterAdd, Name: RequestCount, Labels: []ipc.Label{{Name: "model_name", Value: "x"}}, Value: 1}, rejectLabel},
		"two labels":         {ipc.Metric{Kind: ipc.CounterAdd, Name: BatchInferenceCount, Labels: []ipc.Label{{Name: "method", Value: "decode"}, {Name: "method", Value: "decode"}}, Value: 1}, rejectLabel},
		"unknown role":       {ipc.Metric{Kind: ipc.GaugeSet, Name: EventsDropped, Labels: []ipc.Label{{Name: "role", Value: "nobody"}}, Value: 5}, rejectLabel},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := NewRegistry("m", 1000)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Apply(&tc.ev)
			if got := testutil.ToFloat64(r.rejected.WithLabelValues(tc.reject)); tc.reject != "" && (err == nil || got != 1) {
				t.Fatalf("want rejection %q, got err %v, count %v", tc.reject, err, got)
			}
			if tc.reject == "" && err != nil {
				t.Fatalf("want applied, got %v", err)
			}
			applied := testutil.ToFloat64(r.received.WithLabelValues(kindName(tc.ev.Kind)))
			if want := map[bool]float64{true: 0, false: 1}[tc.reject != ""]; applied != want && tc.ev.Kind != 0 {
				t.Fatalf("received count %v, want %v", applied, want)
			}
		})
	}
}

func TestRegistryExportNames(t *testing.T) {
	r, err := NewRegistry("llama", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []*ipc.Metric{
		{Kind: ipc.CounterAdd, Name: RequestCount, Value: 3},
		{Kind: ipc.CounterAdd, Name: PromptTokens, Value: 40},
		{Kind: ipc.HistogramObserve, Name: RequestInputLength, Value: 13},
		{Kind: ipc.GaugeSet, Name: NumRunningReqs, Value: 7},
	} {
		if err := r.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP lightllm_request_count_total The total number of requests
# TYPE lightllm_request_count_total counter
lightllm_request_count_total{model_name="llama"} 3
# HELP lightllm_prompt_tokens_total Total number of prefill tokens processed
# TYPE lightllm_prompt_tokens_total counter
lightllm_prompt_tokens_total{model_name="llama"} 40
# HELP lightllm_num_running_reqs Number of running requests
# TYPE lightllm_num_running_reqs gauge
lightllm_num_running_reqs{model_name="llama"} 7
`
	if err := testutil.GatherAndCompare(r.Prometheus(), strings.NewReader(want),
		"lightllm_request_count_total", "lightllm_prompt_tokens_total", "lightllm_num_running_reqs"); err != nil {
		t.Error(err)
	}
	// 13 tokens with max_req_total_len 100: the buckets are 0, 1, ..., 100;
	// le=12 must not count it, le=13 must.
	mfs, err := r.Prometheus().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != RequestInputLength {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		for _, b := range h.GetBucket() {
			switch b.GetUpperBound() {
			case 12:
				if b.GetCumulativeCount() != 0 {
					t.Errorf("le=12 holds %d", b.GetCumulativeCount())
				}
			case 13:
				if b.GetCumulativeCount() != 1 {
					t.Errorf("le=13 holds %d", b.GetCumulativeCount())
				}
			}
		}
		if len(h.GetBucket()) != 101 {
			t.Errorf("%d buckets, want 101", len(h.GetBucket()))
		}
	}
}

func TestApplyMessageMalformed(t *testing.T) {
	r, err := NewRegistry("m", 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ApplyMessage(nil); err == nil { // Metric is the only message type left
		t.Fatal("want an error")
	}
	if got := testutil.ToFloat64(r.rejected.WithLabelValues(rejectMalformed)); got != 1 {
		t.Fatalf("malformed count %v", got)
	}
}

func TestCountersExportedFromStart(t *testing.T) {
	r, err := NewRegistry("m", 100)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(r.counters[RequestFailure].WithLabelValues("m")); got != 0 {
		t.Fatalf("failure counter %v", got)
	}
	n, err := testutil.GatherAndCount(r.Prometheus(), "lightllm_request_failure_total", RequestFirstTokenDuration, QueueSize)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d series before any event, want the counter and the histogram (no gauge)", n)
	}
}
