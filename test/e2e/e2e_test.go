package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// TestServer launches the real processes and checks, in order: llama.cpp's
// greedy text through /generate and /generate_stream; six roles as separate
// processes of separate binaries; kill -9 of the detokenizer, the router
// and the metric role each restart that role alone and the next request
// succeeds; then the chaos test (issue 9) when not skipped; and SIGTERM
// leaves no process, no shm directory and no socket.
func TestServer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	gold := loadGolden(t, models)
	bin := buildBinaries(t)
	// 24 running slots for 32 concurrent chaos requests: some wait in the
	// router's queue, which a restarted router must rebuild from shm.
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"), "--running_max_req_size", "24")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("golden", func(t *testing.T) {
		const ouat = "Once upon a time"
		if !strings.HasPrefix(gold.TextUntilStop, ouat) {
			t.Fatalf("golden text does not start with %q", ouat)
		}
		cases := []struct{ prompt, want string }{
			{"", gold.TextUntilStop},                             // BOS only
			{ouat, strings.TrimPrefix(gold.TextUntilStop, ouat)}, // BOS + 4 prompt tokens
		}
		for _, c := range cases {
			got, err := s.generate(ctx, c.prompt, params(511))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("/generate %q:\n got %q\nwant %q", c.prompt, got, c.want)
			}
			got, reason, err := s.stream(ctx, c.prompt, params(511), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || reason != "stop" {
				t.Errorf("/generate_stream %q (%s):\n got %q\nwant %q", c.prompt, reason, got, c.want)
			}
		}
	})

	t.Run("processes", func(t *testing.T) {
		kids := children(t, s.cmd.Process.Pid)
		exes := map[string]bool{}
		for _, exe := range kids {
			exes[exe] = true
		}
		if len(kids) != 6 || len(exes) != 6 {
			t.Fatalf("supervisor has %d children running %d binaries, want 6 and 6: %v", len(kids), len(exes), kids)
		}
		for _, role := range config.AllRoles() {
			if !exes[filepath.Join(bin, role)] {
				t.Errorf("no process runs %s: %v", filepath.Join(bin, role), kids)
			}
		}
	})

	t.Run("kill9", func(t *testing.T) {
		for _, role := range []string{config.RoleDetokenizer, config.RoleRouter, config.RoleMetric} {
			before := s.rolesUp(30 * time.Second)
			old := s.kill9(role)
			s.waitRestarted(role, old, 15*time.Second)
			after := rolePids(s.status())
			for r, pid := range before {
				if r != role && after[r] != pid {
					t.Errorf("killing %s also restarted %s (%d → %d)", role, r, pid, after[r])
				}
			}
			got, err := s.generate(ctx, "", params(40))
			if err != nil {
				t.Fatalf("after kill -9 %s: %v", role, err)
			}
			if len(got) < 100 || !strings.HasPrefix(gold.TextUntilStop, got) {
				t.Errorf("after kill -9 %s: got %s, want 40 tokens of the golden text", role, describe(got))
			}
		}
	})

	if !t.Failed() {
		t.Run("chaos", func(t *testing.T) { chaos(ctx, t, s) })
	}

	t.Run("sigterm", func(t *testing.T) {
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			t.Fatal("launcher did not exit within 30s of SIGTERM")
		}
		if left := s.processes(); len(left) > 0 {
			t.Errorf("processes left after SIGTERM: %v", left)
		}
		if _, err := os.Stat(s.shmDir); !os.IsNotExist(err) {
			t.Errorf("%s still exists after SIGTERM (%v)", s.shmDir, err)
		}
		socks, _ := filepath.Glob(filepath.Join(s.runDir, "*.sock"))
		if len(socks) > 0 {
			t.Errorf("sockets left after SIGTERM: %v", socks)
		}
	})
}

// describe is a short form of a text for failure messages.
func describe(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…(%d bytes)", s[:80], len(s))
	}
	return fmt.Sprintf("%q", s)
}
