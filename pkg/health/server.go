package health

import (
	"fmt"
	"net/http"
)

// Handler serves the monitor's view, as Prometheus does for itself:
//
//	GET /-/healthy  200 while not unhealthy (degraded still serves), else 503
//	GET /-/ready    200 once every role is ready and the engine answered, else 503
//	GET /status     the last report as JSON
//
// The health role serves it on <run_dir>/health.sock.
func Handler(m *Monitor) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		r := m.Report()
		if !r.Healthy() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, r.Status)
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !m.Report().Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(m.Report().JSON(), '\n'))
	})
	return mux
}
