package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape fetches url and parses the Prometheus text it returns.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d, %v", url, resp.StatusCode, err)
	}
	return parseText(t, string(body))
}

func parseText(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse metrics: %v\n%s", err, text)
	}
	return mfs
}

// series finds the metric of family name whose labels include want.
func series(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
