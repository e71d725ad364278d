package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// TestRestartAPIServerZeroGap: `lightllm restart apiserver` under a steady
// request loop (8 clients, keep-alive connections, each request checked
// against the fault-free text) and 4 long streams in flight on the old
// apiserver. Not one request may fail: the new apiserver takes the
// supervisor's listening socket before the old one stops accepting, the
// old one answers what still arrives on its connections and finishes its
// streams (the new one's recovery leaves its slots alone), and afterwards
// every slot and KV token is free.
func TestRestartAPIServerZeroGap(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prompts := chaosPrompts()[:8]
	short := map[string]any{"max_new_tokens": 24, "skip_special_tokens": true}
	long := map[string]any{"max_new_tokens": 400, "ignore_eos": true, "skip_special_tokens": true}
	want := make([]string, len(prompts))
	wantLong := make([]string, 4)
	for i, p := range prompts {
		var err error
		if want[i], err = s.generate(ctx, p, short); err != nil {
			t.Fatal(err)
		}
		if i < len(wantLong) {
			if wantLong[i], err = s.generate(ctx, p, long); err != nil {
				t.Fatal(err)
			}
		}
	}

	var (
		ok, failed atomic.Int32
		mu         sync.Mutex
		failures   []string
		stop       = make(chan struct{})
		wg         sync.WaitGroup
	)
	fail := func(what string) {
		failed.Add(1)
		mu.Lock()
		if len(failures) < 10 {
			failures = append(failures, what)
		}
		mu.Unlock()
	}
	for i, p := range prompts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				text, err := s.generate(ctx, p, short)
				switch {
				case err != nil:
					fail(err.Error())
				case text != want[i]:
					fail("wrong text: " + describe(text) + " want " + describe(want[i]))
				default:
					ok.Add(1)
				}
			}
		}()
	}
	longOut := make([]outcome, len(wantLong))
	var longWG sync.WaitGroup
	started := make(chan struct{}, len(wantLong))
	for i := range wantLong {
		longWG.Add(1)
		go func() {
			defer longWG.Done()
			once := false
			text, reason, err := s.stream(ctx, prompts[i], long, func(n int) {
				if !once && n >= 5 {
					once = true
					started <- struct{}{}
				}
			})
			longOut[i] = outcome{text, reason, err}
		}()
	}
	for range wantLong {
		<-started
	}
	old := rolePids(s.status())[config.RoleAPIServer]
	before := ok.Load()
	cmd := exec.Command(filepath.Join(bin, "lightllm"), "restart", config.RoleAPIServer, "--instance", s.instance)
	cmd.Env = append(os.Environ(), config.EnvRunDir+"="+filepath.Dir(s.runDir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lightllm restart apiserver: %v\n%s", err, out)
	}
	newPid := s.waitRestarted(config.RoleAPIServer, old, 30*time.Second)
	longWG.Wait()
	// The old process exits once its streams are done and its clients gone.
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(old, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(old, 0) == nil {
		t.Errorf("the old apiserver (pid %d) still runs 20 s after the new one was ready", old)
	}
	after := ok.Load()
	time.Sleep(time.Second) // the loop goes on against the new one alone
	close(stop)
	wg.Wait()
	for i, o := range longOut {
		if o.err != nil || o.reason != "length" || o.text != wantLong[i] {
			t.Errorf("stream %d across the restart: %s, %v: got %s want %s", i, o.reason, o.err, describe(o.text), describe(wantLong[i]))
		}
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d requests failed across the restart; first: %s", n, strings.Join(failures, "\n"))
	}
	if after == before || ok.Load() == after {
		t.Errorf("the loop did not progress: %d before the restart, %d when the old one exited, %d at the end", before, after, ok.Load())
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		slots, kv, okRead := slotsInUse(s.shmDir)
		if okRead && slots == 0 && kv == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d slots and %d KV tokens in use 5 s after the loop stopped", slots, kv)
		}
	}
	t.Logf("apiserver %d → %d: %d requests ok (%d during the handover), %d failed", old, newPid, ok.Load(), after-before, failed.Load())
}
