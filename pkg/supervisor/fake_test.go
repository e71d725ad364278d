package supervisor

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// fakeProcess is a test double for Process: no exec; it reports ready over
// the control socket like a role would and "exits" when signalled.
type fakeProcess struct {
	pid  int
	done chan struct{}
	once sync.Once
	st   ExitStatus
}

func (f *fakeProcess) Pid() int              { return f.pid }
func (f *fakeProcess) Done() <-chan struct{} { return f.done }
func (f *fakeProcess) Output() string        { return "fake output" }
func (f *fakeProcess) Wait() ExitStatus      { <-f.done; return f.st }

func (f *fakeProcess) exit(st ExitStatus) {
	f.once.Do(func() { st.Pid, st.ExitedAt = f.pid, time.Now(); f.st = st; close(f.done) })
}

func (f *fakeProcess) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGTERM {
		f.exit(ExitStatus{Code: 0})
	} else {
		f.exit(ExitStatus{Code: -1, Signal: sigName(sig)})
	}
	return nil
}

// TestProcessSeamWithFakes runs the supervisor with fake processes: launch,
// a crash restarted alone, then a clean stop, without forking anything.
func TestProcessSeamWithFakes(t *testing.T) {
	cfg := testConfig(t)
	var nextPid atomic.Int64
	nextPid.Store(1 << 22) // beyond pid_max: never a real process
	var mu sync.Mutex
	procs := map[string][]*fakeProcess{}
	sup, err := New(Options{
		Config: cfg, Log: zerolog.Nop(),
		FindBinary: func(role string) (string, error) { return "/fake/" + role, nil },
		StartProcess: func(spec Spec) (Process, error) {
			p := &fakeProcess{pid: int(nextPid.Add(1)), done: make(chan struct{})}
			mu.Lock()
			procs[spec.Role] = append(procs[spec.Role], p)
			mu.Unlock()
			go func() {
				_, _ = rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpReady, Role: spec.Role, Pid: p.pid})
			}()
			return p, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- sup.Run(ctx) }()
	h := &harness{t: t, cfg: cfg, sup: sup, out: &syncBuffer{}}
	h.waitRunning()

	mu.Lock()
	victim := procs[config.RoleInfer][0]
	mu.Unlock()
	victim.exit(ExitStatus{Code: 139})
	st := h.waitUntil("infer restarted", 10*time.Second, func(st rolectl.Status) bool {
		r := roleOf(st, config.RoleInfer)
		return r.Ready && r.Pid != victim.pid
	})
	for _, r := range st.Roles {
		want := 0
		if r.Role == config.RoleInfer {
			want = 1
		}
		if r.Restarts != want {
			t.Errorf("%s restarts %d, want %d", r.Role, r.Restarts, want)
		}
	}
	if r := roleOf(st, config.RoleInfer); r.LastExit != "exit status 139" {
		t.Errorf("infer last exit %q", r.LastExit)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	mu.Lock()
	defer mu.Unlock()
	for role, ps := range procs {
		for _, p := range ps {
			select {
			case <-p.done:
			default:
				t.Errorf("%s pid %d never stopped", role, p.pid)
			}
		}
	}
	assertNoInstanceFiles(t, cfg)
}
