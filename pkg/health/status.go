package health

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/lightllm-go/lightllm/pkg/gpu"
)

// Status is how well a part of the instance works.
type Status int

// Statuses, from best to worst; the zero value is Healthy.
const (
	Healthy   Status = iota // works
	Degraded                // works, but something needs attention (hot GPU, starting role, shared device)
	Unhealthy               // does not work; counts towards a restart
)

func (s Status) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Degraded:
		return "degraded"
	case Unhealthy:
		return "unhealthy"
	}
	return fmt.Sprintf("status(%d)", int(s))
}

// MarshalText writes the name, so reports read as "healthy", not 0.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (s *Status) UnmarshalText(b []byte) error {
	for _, c := range []Status{Healthy, Degraded, Unhealthy} {
		if string(b) == c.String() {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown health status %q", b)
}

// Sources of findings.
const (
	SourceRoles     = "roles"     // supervisor / shm role records
	SourceHeartbeat = "heartbeat" // a role's heartbeat age
	SourceProgress  = "progress"  // the passive last-progress rule (busy)
	SourceProbe     = "probe"     // the active generation probe (idle)
	SourceGPU       = "gpu"       // NVML
	// SourceStall: a request-path loop that has not turned (the stall
	// watch). Not counted towards a restart: a forward step longer than
	// --stall_timeout on a big model is no fault, and a real wedge is the
	// supervisor's heartbeat timeout's to restart.
	SourceStall = "stall"
)

// Finding is one observation that is not plainly healthy.
type Finding struct {
	// Target is the role a restart would fix ("infer", "router", ...).
	Target string `json:"target"`
	Source string `json:"source"`
	Status Status `json:"status"`
	What   string `json:"what"`
}

// Report is the result of one check cycle.
type Report struct {
	At     time.Time `json:"at"`
	Status Status    `json:"status"`
	// Ready means every role is up and the engine answered (a probe, or
	// progress while busy) at least once since the health role started.
	Ready    bool      `json:"ready"`
	Findings []Finding `json:"findings,omitempty"`
	// Failures is the current count of consecutive failed checks per role.
	Failures map[string]int `json:"failures,omitempty"`
	// Restarts lists the restarts this cycle asked for.
	Restarts []string      `json:"restarts,omitempty"`
	GPU      *gpu.Readings `json:"gpu,omitempty"`
}

// Healthy reports whether the instance is not unhealthy (degraded counts
// as healthy: it serves).
func (r Report) Healthy() bool { return r.Status != Unhealthy }

// JSON is the report as indented JSON.
func (r Report) JSON() []byte {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil { // only plain data: cannot happen
		return []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	return b
}

func worst(fs []Finding) Status {
	s := Healthy
	for _, f := range fs {
		s = max(s, f.Status)
	}
	return s
}
