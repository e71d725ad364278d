package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// healthWatch polls /health every 25 ms until stopped and records when it
// answered what.
type healthWatch struct {
	s    *server
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	seen []healthSample
}

type healthSample struct {
	at   time.Time
	code int // 0: no answer
}

func watchHealth(s *server) *healthWatch {
	w := &healthWatch{s: s, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			c := hlHealthCode(s)
			w.mu.Lock()
			w.seen = append(w.seen, healthSample{time.Now(), c})
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
	return w
}

// end stops the watcher (joined) and returns what it saw.
func (w *healthWatch) end() []healthSample {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// firstNot returns how long after from /health first answered something
// other than code (-1: never).
func firstNot(seen []healthSample, from time.Time, code int) time.Duration {
	for _, h := range seen {
		if h.at.After(from) && h.code != code {
			return h.at.Sub(from)
		}
	}
	return -1
}

// TestSigstopInfer: infer frozen (SIGSTOP) for 10 s with 8 streams in
// flight. /health must turn 503 within 5 s (the apiserver sees infer's
// shm heartbeat stop, --stall_timeout 3 s), and the health role's report
// name the stall within 5 s too (its stall watch reads the same record),
// while the supervisor's 30 s heartbeat timeout has not fired, and after SIGCONT every stream must
// finish with exactly the fault-free text, and /health be 200 again.
func TestSigstopInfer(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompts := chaosPrompts()[:8]
	ref, _ := streamRound(ctx, s, prompts, longParams(), 0, 0, nil)
	for i, o := range ref {
		if o.err != nil || o.reason != "length" {
			t.Fatalf("fault-free request %d (%q): %s, %v", i, prompts[i], o.reason, o.err)
		}
	}
	pid := rolePids(s.status())[config.RoleInfer]
	w := watchHealth(s)
	var stoppedAt, contAt time.Time
	healthRole := time.Duration(-1) // when the health role's report named the stall
	got, doneAtStop := streamRound(ctx, s, prompts, longParams(), 10, len(prompts), func() {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Error(err)
			return
		}
		stoppedAt = time.Now()
		for time.Since(stoppedAt) < 10*time.Second {
			if r, err := hlReport(s); healthRole < 0 && err == nil && r.stalled(config.RoleInfer) {
				healthRole = time.Since(stoppedAt)
			}
			time.Sleep(100 * time.Millisecond)
		}
		contAt = time.Now()
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Error(err)
		}
	})
	s.waitHealthy(10 * time.Second)
	seen := w.end()
	if stoppedAt.IsZero() {
		t.Fatal("the streams never reached the stop point")
	}
	if doneAtStop != 0 {
		t.Errorf("%d of %d streams had finished at SIGSTOP; it was not mid-stream", doneAtStop, len(prompts))
	}
	down := firstNot(seen, stoppedAt, http.StatusOK)
	if down < 0 || down > 5*time.Second {
		t.Errorf("/health first non-200 %v after SIGSTOP, want within 5 s", down)
	}
	// 503 through the end of the stop (from the first 503 on).
	for _, h := range seen {
		if down >= 0 && h.at.After(stoppedAt.Add(down)) && h.at.Before(contAt) && h.code != http.StatusServiceUnavailable {
			t.Errorf("/health answered %d at %v into the stop", h.code, h.at.Sub(stoppedAt).Round(time.Millisecond))
			break
		}
	}
	for i, o := range got {
		if o.err != nil || o.text != ref[i].text || o.reason != ref[i].reason {
			t.Errorf("request %d (%q) across SIGSTOP: %s, %v:\n got %s\nwant %s", i, prompts[i], o.reason, o.err,
				describe(o.text), describe(ref[i].text))
		}
	}
	if healthRole < 0 || healthRole > 5*time.Second {
		t.Errorf("the health role's report named infer's stall %v after SIGSTOP, want within 5 s", healthRole)
	}
	for cleared := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := hlReport(s)
		if err == nil && !r.stalled(config.RoleInfer) {
			break
		}
		if time.Now().After(cleared) {
			t.Errorf("the health role's report still names the stall 5 s after /health is 200 again (%+v, %v)", r, err)
			break
		}
	}
	if now := rolePids(s.status())[config.RoleInfer]; now != pid {
		t.Errorf("infer was restarted (%d → %d); the 10 s stop is below the heartbeat timeout", pid, now)
	}
	t.Logf("/health 503 %v after SIGSTOP, the health role's report %v; all streams exact after SIGCONT",
		down.Round(time.Millisecond), healthRole.Round(time.Millisecond))
}

// TestModelUnreadable: the weights become unreadable (moved away: a mode-000
// file is still readable to root, as CI runs) and infer is killed,
// so every restart fails to load. The server must degrade, not stop: the
// streams in flight end with an explicit error within 10 s, /health is 503
// throughout, and once the file is readable again (20 s later) infer comes
// back by itself, /health is 200 and requests get the fault-free text.
func TestModelUnreadable(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	// A private copy: the shared models are read-only and shared.
	dir := t.TempDir()
	src := filepath.Join(models, "stories260K", "hf")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, e.Name()))
	}
	weights := filepath.Join(dir, "model.safetensors")
	// The shortest backoff of the launch helper (100 ms) doubles to the
	// default maximum: what an operator gets, only faster at the start.
	s := launch(t, bin, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prompts := chaosPrompts()[:8]
	ref, _ := streamRound(ctx, s, prompts, chaosParams(), 0, 0, nil)
	for i, o := range ref {
		if o.err != nil || o.reason != "length" {
			t.Fatalf("fault-free request %d (%q): %s, %v", i, prompts[i], o.reason, o.err)
		}
	}

	w := watchHealth(s)
	var killedAt time.Time
	ended := make([]time.Time, len(prompts))
	var mu sync.Mutex
	got := make([]outcome, len(prompts))
	var wg sync.WaitGroup
	started := make(chan struct{}, len(prompts))
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			once := false
			text, reason, err := s.stream(ctx, p, map[string]any{"max_new_tokens": 400, "ignore_eos": true}, func(n int) {
				if !once && n >= 5 {
					once = true
					started <- struct{}{}
				}
			})
			mu.Lock()
			got[i], ended[i] = outcome{text, reason, err}, time.Now()
			mu.Unlock()
		}()
	}
	for range prompts {
		<-started
	}
	hidden := weights + ".away"
	if err := os.Rename(weights, hidden); err != nil {
		t.Fatal(err)
	}
	restored := false
	defer func() {
		if !restored {
			_ = os.Rename(hidden, weights)
		}
	}()
	s.kill9(config.RoleInfer)
	killedAt = time.Now()
	wg.Wait()
	for i, o := range got {
		if o.reason != "error" || ended[i].Sub(killedAt) > 10*time.Second {
			t.Errorf("stream %d: ended %v after the kill with %q, %v; want an error event within 10 s",
				i, ended[i].Sub(killedAt).Round(time.Millisecond), o.reason, o.err)
		}
	}
	// A new request while infer cannot load: refused with 503 + Retry-After
	// after the bounded wait, not held.
	a := s.postGenerate(ctx, prompts[0], chaosParams())
	if a.status != http.StatusServiceUnavailable || a.retryAfter == "" {
		t.Errorf("new request while infer is down: %d (Retry-After %q) %s, want 503 with Retry-After", a.status, a.retryAfter, a.text)
	}
	time.Sleep(time.Until(killedAt.Add(20 * time.Second)))
	st := s.status()
	for _, r := range st.Roles {
		if r.Role == config.RoleInfer && (!r.CrashLooping || r.Ready) {
			t.Errorf("infer after 20 s of failed loads: %+v, want crash-looping and not ready", r)
		}
	}
	if err := os.Rename(hidden, weights); err != nil {
		t.Fatal(err)
	}
	restored = true
	restoredAt := time.Now()
	s.waitHealthy(30 * time.Second)
	back := time.Since(restoredAt)
	seen := w.end()
	for _, h := range seen {
		if h.at.After(killedAt.Add(500*time.Millisecond)) && h.at.Before(restoredAt) && h.code != http.StatusServiceUnavailable {
			t.Errorf("/health answered %d %v after the kill, while infer could not load", h.code, h.at.Sub(killedAt).Round(time.Millisecond))
			break
		}
	}
	text, err := s.generate(ctx, prompts[0], chaosParams())
	if err != nil || text != ref[0].text {
		t.Errorf("after recovery: %v, %s, want %s", err, describe(text), describe(ref[0].text))
	}
	t.Logf("streams ended with an error %v after the kill; healthy %v after the file was restored",
		maxEnd(ended, killedAt).Round(time.Millisecond), back.Round(time.Millisecond))
}

func maxEnd(ts []time.Time, from time.Time) time.Duration {
	var m time.Duration
	for _, t := range ts {
		m = max(m, t.Sub(from))
	}
	return m
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
