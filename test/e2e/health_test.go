package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/health"
	"github.com/lightllm-go/lightllm/pkg/infer"
)

// TestHealthRestartsWedgedInfer is issue 6's wedge scenario: infer stops
// making progress while alive (the test hook hangs its engine step, as a
// hung kernel would). The health role must see it by LightLLM's passive
// rule (busy, no progress for --health_timeout), ask the supervisor to
// restart infer alone, and the requests in flight must complete with the
// fault-free text once the new infer resumes them. /health answers 503
// while the engine is stuck and 200 again afterwards.
func TestHealthRestartsWedgedInfer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	t.Setenv(infer.EnvTestHooks, "1") // inherited by the roles; only this test's server has hooks
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"),
		"--health_interval", "200ms", "--health_timeout", "1s", "--health_failures", "2", "--stop_timeout", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prompts := chaosPrompts()[:8]

	ref, _ := streamRound(ctx, s, prompts, longParams(), 0, 0, nil)
	for i, o := range ref {
		if o.err != nil || o.reason != "length" {
			t.Fatalf("fault-free request %d (%q): %s, %v", i, prompts[i], o.reason, o.err)
		}
	}

	before := s.rolesUp(30 * time.Second)
	trigger := filepath.Join(s.runDir, infer.WedgeTriggerFile)
	var (
		mu          sync.Mutex
		codes       []int // /health answers from the wedge on
		wedgedAt    time.Time
		stopWatcher = make(chan struct{})
		watcherDone = make(chan struct{})
	)
	go func() { // /health every 50 ms from the wedge until the round ends
		defer close(watcherDone)
		for {
			select {
			case <-stopWatcher:
				return
			case <-time.After(50 * time.Millisecond):
			}
			mu.Lock()
			on := !wedgedAt.IsZero()
			mu.Unlock()
			if !on {
				continue
			}
			if resp, err := http.Get(s.base + "/health"); err == nil {
				resp.Body.Close()
				mu.Lock()
				codes = append(codes, resp.StatusCode)
				mu.Unlock()
			}
		}
	}()
	got, doneAtWedge := streamRound(ctx, s, prompts, longParams(), 10, len(prompts), func() {
		if err := os.WriteFile(trigger, nil, 0o600); err != nil {
			t.Error(err)
		}
		mu.Lock()
		wedgedAt = time.Now()
		mu.Unlock()
	})
	close(stopWatcher)
	<-watcherDone
	if doneAtWedge != 0 {
		t.Errorf("%d of %d streams had already finished at the wedge; it was not mid-stream", doneAtWedge, len(prompts))
	}
	for i, o := range got {
		if o.err != nil || o.text != ref[i].text || o.reason != ref[i].reason {
			t.Errorf("request %d (%q) across the wedge: %s, %v:\n got %s\nwant %s", i, prompts[i], o.reason, o.err,
				describe(o.text), describe(ref[i].text))
		}
	}
	t.Logf("wedge → all %d streams complete: %s", len(prompts), time.Since(wedgedAt).Round(time.Millisecond))

	// Infer alone was restarted, at the health role's request.
	newPid := s.waitRestarted(config.RoleInfer, before[config.RoleInfer], 10*time.Second)
	after := rolePids(s.status())
	for r, pid := range before {
		if r != config.RoleInfer && after[r] != pid {
			t.Errorf("the wedge also restarted %s (%d → %d)", r, pid, after[r])
		}
	}
	if _, err := os.Stat(trigger); !os.IsNotExist(err) {
		t.Errorf("the trigger file was not consumed: %v", err)
	}
	// One request, by the passive progress rule (not the 30 s heartbeat).
	if reasons := hlRestartRequests(s.log.String(), config.RoleInfer); len(reasons) != 1 || !strings.Contains(reasons[0], "no progress") {
		t.Errorf("restart requests for infer by the health role in the supervisor's log: %q, want one for no progress", reasons)
	}
	for _, r := range s.status().Roles {
		if r.Role == config.RoleInfer && r.Restarts != 1 {
			t.Errorf("infer restarted %d times, want 1", r.Restarts)
		}
	}
	mu.Lock()
	unhealthy := 0
	for _, c := range codes {
		if c != http.StatusOK {
			unhealthy++
		}
	}
	mu.Unlock()
	if unhealthy == 0 {
		t.Errorf("/health never failed while infer was wedged (%d answers)", len(codes))
	}

	// Healthy again: /health, the health role's own report, and requests.
	s.waitHealthy(10 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		rep, err := hlReport(s)
		if err == nil && rep.Status == "healthy" && rep.Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health report not healthy and ready 5 s after infer's restart (pid %d): %+v, %v", newPid, rep, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	text, err := s.generate(ctx, prompts[0], longParams())
	if err != nil || text != ref[0].text {
		t.Errorf("after the restart: %v, %s, want %s", err, describe(text), describe(ref[0].text))
	}

	t.Run("infer down", func(t *testing.T) { hlInferDown(t, s) })
	t.Run("sigterm", func(t *testing.T) { hlSigterm(ctx, t, s) })
}

// hlHealthCode is one GET /health status (0 when it could not be asked).
func hlHealthCode(s *server) int {
	resp, err := http.Get(s.base + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// hlInferDown: with no request in flight, killing infer turns /health to
// 503 at once (no model is loaded), and 200 again once the new infer has
// loaded it.
func hlInferDown(t *testing.T, s *server) {
	old := s.kill9(config.RoleInfer)
	killed := time.Now()
	for hlHealthCode(s) != http.StatusServiceUnavailable {
		if time.Since(killed) > 500*time.Millisecond {
			t.Fatal("/health still 200 500 ms after infer was killed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	down := time.Since(killed)
	s.waitRestarted(config.RoleInfer, old, 10*time.Second)
	s.waitHealthy(10 * time.Second)
	t.Logf("/health 503 %v after kill -9 infer, 200 again %v after it", down.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

// hlSigterm: SIGTERM to the launcher fails /health at once (the supervisor
// stops the apiserver first and it drains) while a running stream still
// completes.
func hlSigterm(ctx context.Context, t *testing.T, s *server) {
	type result struct {
		reason string
		err    error
	}
	started := make(chan struct{})
	done := make(chan result, 1)
	go func() {
		var once sync.Once
		_, reason, err := s.stream(ctx, "Lily", map[string]any{"max_new_tokens": 300, "ignore_eos": true},
			func(int) { once.Do(func() { close(started) }) })
		done <- result{reason, err}
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("stream ended before SIGTERM: %+v", r)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for hlHealthCode(s) == http.StatusOK {
		if time.Since(sent) > 500*time.Millisecond {
			t.Fatal("/health still 200 500 ms after SIGTERM")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("/health failed %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if r := <-done; r.err != nil || r.reason != "length" {
		t.Errorf("stream in flight at SIGTERM: %+v, want it finished (length)", r)
	}
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Error("launcher did not exit within 20 s of SIGTERM")
	}
}

// hlRestartRequests returns the reasons of the supervisor's "restart
// requested" log lines for target made by the health role.
func hlRestartRequests(log, target string) []string {
	var reasons []string
	for _, line := range strings.Split(log, "\n") {
		var e struct {
			Role        string `json:"role"`
			Target      string `json:"target"`
			RequestedBy string `json:"requested_by"`
			Reason      string `json:"reason"`
			Message     string `json:"message"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Role == "supervisor" && e.Message == "restart requested" && e.Target == target && e.RequestedBy == config.RoleHealth {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// hlHealthReport is the part of the health role's status file the test reads.
type hlHealthReport struct {
	Status   string `json:"status"`
	Ready    bool   `json:"ready"`
	Findings []struct {
		Target string `json:"target"`
		Source string `json:"source"`
	} `json:"findings"`
}

// stalled reports whether the report has the stall watch's finding for role.
func (r hlHealthReport) stalled(role string) bool {
	for _, f := range r.Findings {
		if f.Source == health.SourceStall && f.Target == role {
			return true
		}
	}
	return false
}

// hlReport reads the health role's last report from the run directory.
func hlReport(s *server) (hlHealthReport, error) {
	var r hlHealthReport
	b, err := os.ReadFile(filepath.Join(s.runDir, health.StatusFileName))
	if err != nil {
		return r, err
	}
	err = json.Unmarshal(b, &r)
	return r, err
}
