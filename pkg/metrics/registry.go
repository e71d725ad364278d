package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Registry is the metric role's Prometheus registry: every metric of defs,
// labelled model_name (plus the metric's extra label), fed by Apply.
type Registry struct {
	reg   *prometheus.Registry
	model string
	defs  map[string]def

	counters   map[string]*prometheus.CounterVec
	gauges     map[string]*prometheus.GaugeVec
	histograms map[string]*prometheus.HistogramVec

	received *prometheus.CounterVec // by kind
	rejected *prometheus.CounterVec // by reason
}

// NewRegistry builds the registry for one model. maxReqTotalLen sizes the
// token-count buckets as LightLLM does.
func NewRegistry(modelName string, maxReqTotalLen int) (*Registry, error) {
	r := &Registry{
		reg:        prometheus.NewRegistry(),
		model:      modelName,
		defs:       map[string]def{},
		counters:   map[string]*prometheus.CounterVec{},
		gauges:     map[string]*prometheus.GaugeVec{},
		histograms: map[string]*prometheus.HistogramVec{},
	}
	for _, d := range defs() {
		labels := []string{"model_name"}
		if d.label != "" {
			labels = append(labels, d.label)
		}
		var c prometheus.Collector
		switch d.kind {
		case KindCounter:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.exportName(), Help: d.help}, labels)
			r.counters[d.name], c = v, v
		case KindGauge:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.name, Help: d.help}, labels)
			r.gauges[d.name], c = v, v
		case KindHistogram:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.name, Help: d.help, Buckets: buckets(d.buckets, maxReqTotalLen)}, labels)
			r.histograms[d.name], c = v, v
		}
		if err := r.reg.Register(c); err != nil {
			return nil, fmt.Errorf("register %s: %w", d.name, err)
		}
		r.defs[d.name] = d
	}
	r.received = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lightllm_metric_events_received_total", Help: "Metric events the metric role applied",
	}, []string{"kind"})
	r.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lightllm_metric_events_rejected_total", Help: "Metric events the metric role could not apply",
	}, []string{"reason"})
	for _, c := range []prometheus.Collector{r.received, r.rejected} {
		if err := r.reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metric role counters: %w", err)
		}
	}
	return r, nil
}

func buckets(k bucketKind, maxLen int) []float64 {
	switch k {
	case bucketsTokens:
		return TokenBuckets(maxLen)
	case bucketsRatio:
		return RatioBuckets()
	default:
		return DurationBuckets()
	}
}

// Prometheus returns the underlying registry (to serve it, push it, or add
// collectors such as the restart counts).
func (r *Registry) Prometheus() *prometheus.Registry { return r.reg }

// Rejection reasons (label of lightllm_metric_events_rejected_total).
const (
	rejectUnknown   = "unknown_metric"
	rejectKind      = "kind_mismatch"
	rejectValue     = "bad_value"
	rejectLabel     = "bad_label"
	rejectMalformed = "malformed_message"
)

// Apply applies one event. An event that does not fit its definition (an
// unknown name, the wrong kind, a negative counter increment, a NaN) is
// rejected and counted, never applied halfway.
func (r *Registry) Apply(e Event) error {
	d, ok := r.defs[e.Name]
	if !ok {
		return r.reject(rejectUnknown, fmt.Errorf("metric %q: unknown", e.Name))
	}
	if d.kind != e.Kind {
		return r.reject(rejectKind, fmt.Errorf("metric %q is a %v, got a %v event", e.Name, d.kind, e.Kind))
	}
	if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || (d.kind == KindCounter && e.Value < 0) {
		return r.reject(rejectValue, fmt.Errorf("metric %q: bad value %v", e.Name, e.Value))
	}
	if (d.label == "") != (e.Label == "") {
		return r.reject(rejectLabel, fmt.Errorf("metric %q: label %q does not match its definition (%q)", e.Name, e.Label, d.label))
	}
	if d.values != nil && !slices.Contains(d.values, e.Label) {
		return r.reject(rejectLabel, fmt.Errorf("metric %q: %s %q not one of %q", e.Name, d.label, e.Label, d.values))
	}
	lv := []string{r.model}
	if d.label != "" {
		lv = append(lv, e.Label)
	}
	switch d.kind {
	case KindCounter:
		r.counters[e.Name].WithLabelValues(lv...).Add(e.Value)
	case KindGauge:
		r.gauges[e.Name].WithLabelValues(lv...).Set(e.Value)
	case KindHistogram:
		r.histograms[e.Name].WithLabelValues(lv...).Observe(e.Value)
	}
	r.received.WithLabelValues(d.kind.String()).Inc()
	return nil
}

// ApplyMessage decodes one message and applies its events, returning the
// first error (a malformed message applies nothing).
func (r *Registry) ApplyMessage(msg []byte, scratch []Event) ([]Event, error) {
	events, err := DecodeBatch(scratch[:0], msg)
	if err != nil {
		return events, r.reject(rejectMalformed, err)
	}
	var first error
	for _, e := range events {
		if err := r.Apply(e); err != nil && first == nil {
			first = err
		}
	}
	return events, first
}

func (r *Registry) reject(reason string, err error) error {
	r.rejected.WithLabelValues(reason).Inc()
	return err
}
