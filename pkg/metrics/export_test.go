package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Used only by tests (issue 17: kept out of the shipped binaries).

// Endpoint is the ZeroMQ endpoint clients send to.
func (s *Server) Endpoint() string { return s.endpoint }

// APIHandler is APIHandlerWith with a fetch timeout and the default cache.
func APIHandler(live *prometheus.Registry, metricURL string, timeout time.Duration) http.Handler {
	return APIHandlerWith(live, APIOptions{MetricURL: metricURL, Timeout: timeout})
}
