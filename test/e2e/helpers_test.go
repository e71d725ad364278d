// Package e2e holds the end-to-end tests: they build the real binaries
// (cmd/lightllm and the six roles) into a temporary directory, launch a
// server with `lightllm launch --normal` on a free port serving
// stories260K, and drive it over HTTP while killing roles. They are skipped
// under -short and when the shared models are absent.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/supervisor"
	"github.com/lightllm-go/lightllm/pkg/testmodels"
	"github.com/lightllm-go/lightllm/shm"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// modelsDir finds the shared test models (LIGHTLLM_TEST_MODELS or
// ../shared/models from the repository root) or skips.
func modelsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LIGHTLLM_TEST_MODELS")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "..", "shared", "models")
	}
	if _, err := os.Stat(filepath.Join(dir, "stories260K", "hf", "config.json")); err != nil {
		testmodels.Missing(t, fmt.Sprintf("stories260K not found under %s (set LIGHTLLM_TEST_MODELS): %v", dir, err), nil)
	}
	return dir
}

// envBinDir names a directory of already built binaries to test instead of
// building them (CI that builds once, or a debugging loop).
const envBinDir = "LIGHTLLM_E2E_BIN"

// buildBinaries builds cmd/lightllm and every role into a temp dir, the
// layout the supervisor expects (role binaries next to lightllm).
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envBinDir)
	if dir == "" {
		dir = t.TempDir()
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/...")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
		}
	}
	for _, b := range append([]string{"lightllm"}, config.AllRoles()...) {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Skipf("binary %s was not built (cmd/%s has no main package yet?)", b, b)
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// server is one launched instance.
type server struct {
	t        *testing.T
	bin      string
	instance string
	runDir   string // the instance's run dir
	shmDir   string
	base     string // http://127.0.0.1:port
	cmd      *exec.Cmd
	log      *syncBuffer
	exited   chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// launch starts `lightllm launch --normal` and waits for /health.
func launch(t *testing.T, bin, model string, extra ...string) *server {
	t.Helper()
	port := freePort(t)
	inst := fmt.Sprintf("e2e-%d-%d", os.Getpid(), port)
	runBase := t.TempDir()
	s := &server{t: t, bin: bin, instance: inst, runDir: filepath.Join(runBase, inst),
		shmDir: config.ShmDirFor(inst),
		base:   fmt.Sprintf("http://127.0.0.1:%d", port), log: &syncBuffer{}, exited: make(chan struct{})}
	args := append([]string{"launch", "--normal", "--model_dir", model, "--port", strconv.Itoa(port),
		"--instance", inst, "--log_format", "json", "--restart_backoff", "100ms"}, extra...)
	s.cmd = exec.Command(filepath.Join(bin, "lightllm"), args...)
	s.cmd.Env = append(os.Environ(), config.EnvRunDir+"="+runBase)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(20 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		_ = os.RemoveAll(s.shmDir)
		if t.Failed() {
			log := s.log.String()
			t.Logf("server log, errors and warnings (first 8 KiB):\n%s", head(problems(log), 8192))
			t.Logf("server log (last 8 KiB%s):\n%s", keepLog(log), tail(log, 8192))
		}
	})
	s.waitHealthy(30 * time.Second)
	return s
}

// keepLog writes a failed test's whole server log to a file that outlives
// the test, since the error that explains a failure (a kill storm's lost
// request) usually scrolled out of the 8 KiB shown; it returns the file's
// name for the message, or nothing when it cannot be written.
func keepLog(log string) string {
	f, err := os.CreateTemp("", "lightllm-e2e-server-*.log")
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.WriteString(log); err != nil {
		return ""
	}
	return "; all of it in " + f.Name()
}

// problems is the lines of a JSON server log at level warn or above: the
// CI output shows them even when the failure's cause scrolled out of the
// tail and the kept file is on a machine nobody can reach.
func problems(log string) string {
	var b strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"level":"warn"`) || strings.Contains(line, `"level":"error"`) ||
			strings.Contains(line, `"level":"fatal"`) || strings.Contains(line, `"level":"panic"`) ||
			strings.HasPrefix(line, "panic:") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "\n[...]"
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitHealthy waits until /health answers 200.
func (s *server) waitHealthy(d time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.t.Fatalf("launcher exited: %v\n%s", s.cmd.ProcessState, tail(s.log.String(), 8192))
		default:
		}
		resp, err := http.Get(s.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("no healthy server within %s", d)
}

// status asks the supervisor for the roles' pids and states.
func (s *server) status() *rolectl.Status {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := supervisor.QueryStatus(ctx, supervisor.Target{Instance: s.instance, RunDir: s.runDir})
	if err != nil {
		s.t.Fatalf("status: %v", err)
	}
	return st
}

func rolePids(st *rolectl.Status) map[string]int {
	m := map[string]int{}
	for _, r := range st.Roles {
		m[r.Role] = r.Pid
	}
	return m
}

// rolesUp waits until every role runs as a ready process and returns
// their pids. /health is 200 before the health role, which starts last,
// has a pid, so pids read at the first 200 can show it as 0 and a later
// read as "restarted".
func (s *server) rolesUp(d time.Duration) map[string]int {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := s.status()
		up := len(st.Roles) == len(config.AllRoles())
		for _, r := range st.Roles {
			up = up && r.Pid != 0 && r.Ready
		}
		if up {
			return rolePids(st)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("not every role up within %s: %+v", d, st.Roles)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRestarted waits until role runs as a ready process other than oldPid,
// and returns its pid.
func (s *server) waitRestarted(role string, oldPid int, d time.Duration) int {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, r := range s.status().Roles {
			if r.Role == role && r.Pid != 0 && r.Pid != oldPid && r.Ready {
				return r.Pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("role %s (pid %d) was not restarted within %s", role, oldPid, d)
	return 0
}

// kill9 SIGKILLs a role's current process and returns its pid.
func (s *server) kill9(role string) int {
	s.t.Helper()
	pid := rolePids(s.status())[role]
	if pid == 0 {
		s.t.Fatalf("role %s has no process", role)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9 %s (%d): %v", role, pid, err)
	}
	return pid
}

// genResult is a /generate answer.
type genResult struct {
	GeneratedText []string `json:"generated_text"`
	FinishReason  any      `json:"finish_reason"`
	Count         any      `json:"count_output_tokens"`
}

func params(maxNew int) map[string]any {
	// Token 1 ends a stories260K story (see ../shared/models/README.md);
	// special tokens are left out of the text, as llama.cpp's golden text.
	return map[string]any{"max_new_tokens": maxNew, "stop_sequences": [][]int{{1}}, "skip_special_tokens": true}
}

func (s *server) generate(ctx context.Context, inputs string, p map[string]any) (string, error) {
	body, _ := json.Marshal(map[string]any{"inputs": inputs, "parameters": p})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/generate", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/generate: %s: %s", resp.Status, b)
	}
	var r genResult
	if err := json.Unmarshal(b, &r); err != nil || len(r.GeneratedText) != 1 {
		return "", fmt.Errorf("/generate: bad answer %s (%v)", b, err)
	}
	return r.GeneratedText[0], nil
}

// streamEvent is one /generate_stream event.
type streamEvent struct {
	Token struct {
		ID   int    `json:"id"`
		Text string `json:"text"`
	} `json:"token"`
	Finished     bool    `json:"finished"`
	FinishReason *string `json:"finish_reason"`
}

// stream runs /generate_stream, calling onEvent (if set) after each event,
// and returns the concatenated text and finish reason.
func (s *server) stream(ctx context.Context, inputs string, p map[string]any, onEvent func(n int)) (string, string, error) {
	body, _ := json.Marshal(map[string]any{"inputs": inputs, "parameters": p})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/generate_stream", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", "", fmt.Errorf("/generate_stream: %s: %s", resp.Status, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var text strings.Builder
	n := 0
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var ev streamEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return text.String(), "", fmt.Errorf("bad event %q: %w", line, err)
		}
		text.WriteString(ev.Token.Text)
		n++
		if onEvent != nil {
			onEvent(n)
		}
		if ev.Finished {
			reason := ""
			if ev.FinishReason != nil {
				reason = *ev.FinishReason
			}
			return text.String(), reason, nil
		}
	}
	if err := sc.Err(); err != nil {
		return text.String(), "", err
	}
	return text.String(), "", errors.New("stream ended without a finished event")
}

// golden is llama.cpp's greedy run of stories260K.
type golden struct {
	TextUntilStop string `json:"text_until_stop"`
}

func loadGolden(t *testing.T, models string) golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(models, "stories260K", "golden_greedy_llamacpp.json"))
	if err != nil {
		testmodels.Missing(t, fmt.Sprintf("golden file: %v", err), nil)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// children lists the supervisor's child processes: pid → executable path.
func children(t *testing.T, ppid int) map[int]string {
	t.Helper()
	out, err := exec.Command("ps", "-o", "pid=", "--ppid", strconv.Itoa(ppid)).Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("ps --ppid %d: %v", ppid, err)
	}
	m := map[int]string{}
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue // exited meanwhile
		}
		m[pid] = exe
	}
	return m
}

// processesOf lists live processes of the instance: the launcher, and every
// process whose command line names the instance's run directory (the roles
// get --config <run_dir>/config.json).
func (s *server) processes() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if pid == s.cmd.Process.Pid || strings.Contains(args, s.runDir+string(os.PathSeparator)) || strings.Contains(args, s.instance) {
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is not running
			}
			out = append(out, fmt.Sprintf("%d %s", pid, args))
		}
	}
	return out
}

// slotsInUse counts the region's slots that are not free, and the KV tokens
// in use; ok is false when the region cannot be attached.
func slotsInUse(shmDir string) (slots int, kvUsed int64, ok bool) {
	r, err := shm.AttachFile(filepath.Join(shmDir, shm.StateFile))
	if err != nil {
		return 0, 0, false
	}
	defer r.Close()
	for i := 0; i < r.NumSlots(); i++ {
		s, err := r.Slot(i)
		if err != nil {
			return 0, 0, false
		}
		if st, _ := s.Load(); st != shm.StateFree {
			slots++
		}
	}
	l := r.Load()
	return slots, l.MaxTotalTokenNum.Load() - l.FreeKVTokens.Load() - l.EvictableKVTokens.Load(), true
}
