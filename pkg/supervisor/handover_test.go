package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// TestRestartAPIServerHandsOver: `lightllm restart apiserver` starts the
// new apiserver while the old one runs, gives both the supervisor's API
// socket (the child checks fd 3 is a listener), and stops the old one only
// once the new one is ready; then a stop leaves nothing behind.
func TestRestartAPIServerHandsOver(t *testing.T) {
	cfg := testConfig(t)
	h := newHarness(t, cfg, [][]string{{config.RoleAPIServer}}, nil, nil)
	h.run()
	old := roleOf(h.waitRunning(), config.RoleAPIServer).Pid
	if _, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpRestart, Target: config.RoleAPIServer}); err != nil {
		t.Fatal(err)
	}
	st := h.waitUntil("new apiserver ready, old one gone", 60*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleAPIServer)
		return r.Ready && r.Pid != old && r.Pid != 0 && !alive(old) && strings.Contains(h.out.String(), "old process stopped")
	})
	if r := roleOf(st, config.RoleAPIServer); r.Restarts != 1 {
		t.Errorf("apiserver after the handover: %+v, want 1 restart", r)
	}
	log := h.out.String()
	steps := []string{"starting the new process before stopping the old one", `"message":"role ready"`,
		"new process ready; stopping the old one", "old process stopped"}
	at := 0
	for _, s := range steps {
		i := strings.Index(log[at:], s)
		if i < 0 {
			t.Fatalf("supervisor log lacks %q after the restart request (in order: %q):\n%s", s, steps, log)
		}
		at += i
	}
	if strings.Contains(log, "listener check failed") {
		t.Errorf("a child did not get the API socket as fd 3:\n%s", log)
	}
	h.cancel()
	if err := h.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	h.assertAllGone()
}
