package health

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// newRegion creates a small shm region in a temp dir.
func newRegion(t *testing.T, instance string) (*shm.Region, string) {
	t.Helper()
	base := t.TempDir()
	r, err := shm.Create(shm.CreateOptions{BaseDir: base, Instance: instance, NoReserve: true,
		Sizes: shm.Sizes{Slots: 4, MaxReqTotalLen: 64}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Destroy() })
	return r, base
}

func TestShmEngine(t *testing.T) {
	r, _ := newRegion(t, "eng")
	read := ShmEngine(r.Load())
	if e, _ := read(); e.Running != 0 || !e.LastProgress.IsZero() {
		t.Fatalf("fresh region: %+v", e)
	}
	now := time.Now()
	r.Load().Running.Store(3)
	r.Load().Waiting.Store(2)
	r.Load().LastProgressUnixNano.Store(now.UnixNano())
	if e, _ := read(); e.Running != 3 || e.Waiting != 2 || !e.LastProgress.Equal(time.Unix(0, now.UnixNano())) {
		t.Fatalf("%+v", e)
	}
}

func TestShmRoles(t *testing.T) {
	r, _ := newRegion(t, "roles")
	// infer started and beats; router started in a process that is gone;
	// detokenizer never started.
	if _, err := r.BeginEpoch(shm.RoleInfer); err != nil {
		t.Fatal(err)
	}
	infer, _ := r.Role(shm.RoleInfer)
	time.Sleep(time.Millisecond)
	infer.Beat()
	router, _ := r.Role(shm.RoleRouter)
	router.Pid.Store(1 << 30) // no such pid
	started := time.Now().UnixNano()
	router.StartedUnixNano.Store(started)
	router.HeartbeatUnixNano.Store(started) // as BeginEpoch leaves it: never beat after start

	list, err := ShmRoles(r, []string{"infer", "router", "detokenizer"})(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("roles %+v, want infer and router", list)
	}
	if got := list[0]; got.Role != "infer" || got.Pid != os.Getpid() || !got.Ready || got.LastBeat.IsZero() {
		t.Errorf("infer %+v", got)
	}
	if got := list[1]; got.Role != "router" || got.Ready || got.State != "exited" || !got.LastBeat.IsZero() {
		t.Errorf("router %+v", got)
	}
	if _, err := ShmRoles(r, []string{"nope"})(context.Background()); err == nil {
		t.Error("unknown role accepted")
	}
}

func TestSupervisorRoles(t *testing.T) {
	beat := time.Now()
	list, err := SupervisorRoles(func(context.Context) (*rolectl.Status, error) {
		return &rolectl.Status{Roles: []rolectl.RoleStatus{
			{Role: "infer", Pid: 5, State: rolectl.StateReady, Ready: true, LastHeartbeat: beat},
			{Role: "router", Pid: 0, State: rolectl.StateBackoff},
		}}, nil
	})(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !list[0].Ready || list[0].Pid != 5 || !list[0].LastBeat.Equal(beat) || list[1].Ready || list[1].State != "backoff" {
		t.Fatalf("%+v", list)
	}
}

func TestPidAlive(t *testing.T) {
	if !PidAlive(os.Getpid()) || PidAlive(0) || PidAlive(1<<30) {
		t.Fatal("PidAlive")
	}
}

func TestRemoveStaleSocket(t *testing.T) {
	path := t.TempDir() + "/h.sock"
	if err := removeStaleSocket(path); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := removeStaleSocket(path); err == nil {
		t.Fatal("a live listener must not be removed")
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := removeStaleSocket(path); err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stale socket still there: %v", err)
	}
}
