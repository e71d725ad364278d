package metrics

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lightllm-go/lightllm/pkg/ipc"
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
// token-count buckets as LightLLM does. Counters and histograms start at
// zero; gauges appear once a role sets them (a gauge nobody set is unknown,
// not 0).
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
		case ipc.CounterAdd:
			v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.exportName(), Help: d.help}, labels)
			r.counters[d.name], c = v, v
			if d.label == "" {
				v.WithLabelValues(modelName) // exported as 0 from the start, so rate() and alerts work
			}
		case ipc.GaugeSet:
			v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.name, Help: d.help}, labels)
			r.gauges[d.name], c = v, v
		case ipc.HistogramObserve:
			v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.name, Help: d.help, Buckets: buckets(d.buckets, maxReqTotalLen)}, labels)
			r.histograms[d.name], c = v, v
			if d.label == "" {
				v.WithLabelValues(modelName)
			}
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

// Apply applies one metric event. An event that does not fit its
// definition (an unknown name, the wrong kind, a label other than the
// metric's own, a negative counter increment, a NaN) is rejected and
// counted, never applied halfway. model_name is the registry's own: a
// sender does not set it.
func (r *Registry) Apply(m *ipc.Metric) error {
	d, ok := r.defs[m.Name]
	if !ok {
		return r.reject(rejectUnknown, fmt.Errorf("metric %q: unknown", m.Name))
	}
	if d.kind != m.Kind {
		return r.reject(rejectKind, fmt.Errorf("metric %q is a %s, got a %s event", m.Name, kindName(d.kind), kindName(m.Kind)))
	}
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || (d.kind == ipc.CounterAdd && m.Value < 0) {
		return r.reject(rejectValue, fmt.Errorf("metric %q: bad value %v", m.Name, m.Value))
	}
	lv := []string{r.model}
	switch {
	case d.label == "" && len(m.Labels) == 0:
	case d.label != "" && len(m.Labels) == 1 && m.Labels[0].Name == d.label:
		if d.values != nil && !slices.Contains(d.values, m.Labels[0].Value) {
			return r.reject(rejectLabel, fmt.Errorf("metric %q: %s %q not one of %q", m.Name, d.label, m.Labels[0].Value, d.values))
		}
		lv = append(lv, m.Labels[0].Value)
	default:
		return r.reject(rejectLabel, fmt.Errorf("metric %q: labels %v, want %s", m.Name, m.Labels, labelWant(d)))
	}
	switch d.kind {
	case ipc.CounterAdd:
		r.counters[m.Name].WithLabelValues(lv...).Add(m.Value)
	case ipc.GaugeSet:
		r.gauges[m.Name].WithLabelValues(lv...).Set(m.Value)
	case ipc.HistogramObserve:
		r.histograms[m.Name].WithLabelValues(lv...).Observe(m.Value)
	}
	r.received.WithLabelValues(kindName(d.kind)).Inc()
	return nil
}

func labelWant(d def) string {
	if d.label == "" {
		return "none"
	}
	return "exactly " + d.label
}

// ApplyMessage applies one received message; anything but a Metric is
// rejected.
func (r *Registry) ApplyMessage(msg ipc.Message) error {
	m, ok := msg.(*ipc.Metric)
	if !ok {
		return r.reject(rejectMalformed, fmt.Errorf("metric role: got a %T, not a metric", msg))
	}
	return r.Apply(m)
}

func (r *Registry) reject(reason string, err error) error {
	r.rejected.WithLabelValues(reason).Inc()
	return err
}
