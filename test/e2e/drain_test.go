package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

// drainPrompts are the long in-flight requests of the drain tests.
var drainPrompts = []string{"", "Once upon a time", "Lily", "The cat"}

// drainParams: greedy to max_new_tokens, long enough that the streams are
// still running when SIGTERM arrives.
func drainParams() map[string]any {
	return map[string]any{"max_new_tokens": 400, "ignore_eos": true, "skip_special_tokens": true}
}

// streamAll starts one stream per prompt and closes started once every
// stream has received minEvents events.
func streamAll(ctx context.Context, s *server, prompts []string, minEvents int, started chan<- struct{}) []outcome {
	out := make([]outcome, len(prompts))
	var wg sync.WaitGroup
	var reached atomic.Int32
	var once sync.Once
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hit := false
			text, reason, err := s.stream(ctx, p, drainParams(), func(n int) {
				if !hit && n >= minEvents {
					hit = true
					if int(reached.Add(1)) == len(prompts) && started != nil {
						once.Do(func() { close(started) })
					}
				}
			})
			out[i] = outcome{text, reason, err}
		}()
	}
	wg.Wait()
	return out
}

// probeDraining polls until a new request is refused with 503 and
// Retry-After and /readiness fails; it reports what it saw.
func probeDraining(ctx context.Context, s *server, until time.Duration) (refused, unready bool, why string) {
	deadline := time.Now().Add(until)
	for time.Now().Before(deadline) && (!refused || !unready) {
		if !refused {
			a := s.postGenerate(ctx, "", params(4))
			switch {
			case a.err != nil:
				return refused, unready, "new request: " + a.err.Error()
			case a.status == http.StatusServiceUnavailable:
				if secs, err := strconv.Atoi(a.retryAfter); err != nil || secs < 1 {
					return refused, unready, "503 without a valid Retry-After: " + a.retryAfter
				}
				refused = true
			case a.status != http.StatusOK: // admitted before the apiserver got the signal
				return refused, unready, "new request: status " + strconv.Itoa(a.status) + " " + a.text
			}
		}
		if !unready {
			resp, err := http.Get(s.base + "/readiness")
			if err != nil {
				return refused, unready, "readiness: " + err.Error()
			}
			resp.Body.Close()
			unready = resp.StatusCode == http.StatusServiceUnavailable
		}
		time.Sleep(5 * time.Millisecond)
	}
	return refused, unready, ""
}

// stopOrder returns the roles in the order the supervisor logged "role
// stopped".
func stopOrder(log string) []string {
	var order []string
	for _, line := range strings.Split(log, "\n") {
		var ev struct {
			Role    string `json:"role"`
			Target  string `json:"target"`
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Role == "supervisor" && ev.Message == "role stopped" {
			order = append(order, ev.Target)
		}
	}
	return order
}

// checkStopOrder checks that the roles stopped stage by stage.
func checkStopOrder(t *testing.T, got []string) {
	t.Helper()
	stageOf := map[string]int{}
	for i, st := range supervisor.StopStages() {
		for _, r := range st {
			stageOf[r] = i
		}
	}
	if len(got) != len(config.AllRoles()) {
		t.Errorf("roles stopped: %v, want all %d", got, len(config.AllRoles()))
	}
	if !slices.IsSortedFunc(got, func(a, b string) int { return stageOf[a] - stageOf[b] }) {
		t.Errorf("roles stopped in the order %v, want the stages %v", got, supervisor.StopStages())
	}
}

// waitGone waits for the launcher to exit and checks that nothing of the
// instance is left: no process, no shm directory, no socket.
func waitGone(t *testing.T, s *server, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-s.exited:
	case <-time.After(d):
		t.Fatalf("launcher did not exit within %s of SIGTERM", d)
	}
	took := time.Since(start)
	if left := s.processes(); len(left) > 0 {
		t.Errorf("processes left after SIGTERM: %v", left)
	}
	if _, err := os.Stat(s.shmDir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after SIGTERM (%v)", s.shmDir, err)
	}
	if socks, _ := filepath.Glob(filepath.Join(s.runDir, "*.sock")); len(socks) > 0 {
		t.Errorf("sockets left after SIGTERM: %v", socks)
	}
	return took
}

// TestStop covers stopping the server (issue 9), one build for all cases.
func TestStop(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	t.Run("graceful", func(t *testing.T) { gracefulStop(t, models, bin) })
	t.Run("graceful_timeout", func(t *testing.T) { gracefulTimeout(t, models, bin) })
	t.Run("lost_log_reader", func(t *testing.T) { lostLogReader(t, models, bin) })
}

// gracefulStop is issue 9's graceful stop: SIGTERM to the supervisor
// while long greedy streams run. New requests get 503 with Retry-After and
// /readiness fails at once; the streams in flight complete with exactly
// the text of an undisturbed run; then the roles stop in order and no
// process, shm directory or socket is left.
func gracefulStop(t *testing.T, models, bin string) {
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"), "--graceful_timeout", "30s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ref := streamAll(ctx, s, drainPrompts, 0, nil)
	for i, o := range ref {
		if o.err != nil || o.reason != "length" {
			t.Fatalf("reference stream %d: %s, %v", i, o.reason, o.err)
		}
	}

	started := make(chan struct{})
	var got []outcome
	streamsDone := make(chan struct{})
	go func() {
		defer close(streamsDone)
		got = streamAll(ctx, s, drainPrompts, 10, started)
	}()
	select {
	case <-started:
	case <-streamsDone:
		t.Fatal("the streams ended before they all started")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	refused, unready, why := probeDraining(ctx, s, 10*time.Second)
	select {
	case <-streamsDone:
		t.Errorf("the streams had finished before the drain was seen; the test proves nothing (raise max_new_tokens)")
	default:
	}
	if !refused || !unready || why != "" {
		t.Errorf("while draining: new request refused with 503 = %v, /readiness 503 = %v; %s", refused, unready, why)
	}
	<-streamsDone
	for i, o := range got {
		if o.err != nil || o.reason != ref[i].reason || o.text != ref[i].text {
			t.Errorf("in-flight stream %d (%q): %s, %v:\n got %s\nwant %s", i, drainPrompts[i], o.reason, o.err,
				describe(o.text), describe(ref[i].text))
		}
	}
	took := waitGone(t, s, 30*time.Second)
	t.Logf("launcher exited %s after the streams completed", took.Round(time.Millisecond))
	checkStopOrder(t, stopOrder(s.log.String()))
}

// gracefulTimeout: requests that outlast --graceful_timeout are cut
// off, and the server still stops completely soon after the deadline (the
// synthetic backend makes the requests slow on purpose).
func gracefulTimeout(t *testing.T, models, bin string) {
	const grace = time.Second
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"), "--graceful_timeout", grace.String(),
		"--backend", "synthetic", "--synthetic_step_ms", "20")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	started := make(chan struct{})
	var got []outcome
	streamsDone := make(chan struct{})
	go func() {
		defer close(streamsDone)
		got = streamAll(ctx, s, drainPrompts[:2], 3, started) // 400 tokens × 20 ms: 8 s
	}()
	select {
	case <-started:
	case <-streamsDone:
		t.Fatal("the streams ended before they all started")
	}
	sent := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-streamsDone
	cut := time.Since(sent)
	for i, o := range got {
		if o.err == nil && o.reason == "length" {
			t.Errorf("stream %d completed (%d bytes) although it outlasts --graceful_timeout %s", i, len(o.text), grace)
		}
	}
	if cut < grace-100*time.Millisecond {
		t.Errorf("streams cut %s after SIGTERM, before --graceful_timeout %s", cut, grace)
	}
	waitGone(t, s, 20*time.Second)
	total := time.Since(sent)
	t.Logf("streams cut %s after SIGTERM; everything stopped after %s", cut.Round(time.Millisecond), total.Round(time.Millisecond))
	if total > grace+5*time.Second {
		t.Errorf("stopping took %s with --graceful_timeout %s", total, grace)
	}
	checkStopOrder(t, stopOrder(s.log.String()))
}

// lostLogReader: whoever reads the launcher's output may go away (a
// closed terminal, `lightllm launch | head`). The launcher and its roles
// keep serving instead of dying of SIGPIPE, and SIGTERM still stops
// everything in order and removes the shm directory.
func lostLogReader(t *testing.T, models, bin string) {
	port := freePort(t)
	inst := fmt.Sprintf("e2e-%d-%d", os.Getpid(), port)
	runBase := t.TempDir()
	s := &server{t: t, bin: bin, instance: inst, runDir: filepath.Join(runBase, inst), shmDir: config.ShmDirFor(inst),
		base: fmt.Sprintf("http://127.0.0.1:%d", port), log: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(filepath.Join(bin, "lightllm"), "launch", "--normal", "--model_dir",
		filepath.Join(models, "stories260K", "hf"), "--port", strconv.Itoa(port), "--instance", inst, "--log_format", "json")
	s.cmd.Env = append(os.Environ(), config.EnvRunDir+"="+runBase)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		_ = os.RemoveAll(s.shmDir)
	})
	// Read the first log line, then go away.
	if _, err := out.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	out.Close()
	s.waitHealthy(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Every role logs while serving; none may die of it.
	before := s.rolesUp(30 * time.Second)
	for range 3 {
		if a := s.postGenerate(ctx, "", params(16)); a.err != nil || a.status != http.StatusOK || a.count != 16 {
			t.Fatalf("/generate with no log reader: status %d, %d tokens, %v", a.status, a.count, a.err)
		}
	}
	if after := rolePids(s.status()); len(after) != len(before) {
		t.Errorf("roles %v, then %v", before, after)
	} else {
		for r, pid := range before {
			if after[r] != pid {
				t.Errorf("role %s restarted (%d → %d) with no log reader", r, pid, after[r])
			}
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, s, 30*time.Second)
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("launcher exit status %v after SIGTERM, want 0", s.cmd.ProcessState)
	}
}
