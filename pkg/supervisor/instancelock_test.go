package supervisor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// assertFilesStay fails when any of paths is gone.
func assertFilesStay(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s of the live instance is gone: %v", p, err)
		}
	}
}

// The reported bug: a server launched with LIGHTLLM_RUN_DIR set, then
// `lightllm stop` without it. Stop's guessed run dir has no supervisor; it
// must find the real one through the lock in the shm dir and stop it
// properly, and a bare cleanup must refuse to touch the live instance.
func TestStopWithoutRunDirFindsLiveInstance(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	base := filepath.Dir(cfg.RunDir) // testConfig's temp dir
	runBase := filepath.Join(base, "launched-run")
	cfg.RunDir = filepath.Join(runBase, cfg.Instance) // as RunDirFor under LIGHTLLM_RUN_DIR=runBase
	shmBase := filepath.Join(base, "shm")
	cfg.ShmDir = filepath.Join(shmBase, "lightllm-"+cfg.Instance)
	path := filepath.Join(t.TempDir(), "cfg.json")
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envTestMode+"=supervisor", envTestConfig+"="+path,
		config.EnvRunDir+"="+runBase, config.EnvShmDir+"="+shmBase)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := rolectl.Call(context.Background(), cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
		if err == nil && resp.Status.Phase == rolectl.PhaseRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("supervisor never got to running: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	live := []string{cfg.ShmDir, cfg.ShmPath(config.RoleRouter), cfg.SupervisorLockPath(), cfg.ControlSocketPath(), cfg.SocketPath(config.RoleRouter)}

	// The client's environment: no LIGHTLLM_RUN_DIR, the same shm base.
	t.Setenv(config.EnvRunDir, "")
	t.Setenv(config.EnvShmDir, shmBase)
	target := Target{Instance: cfg.Instance}
	guess, err := target.Config()
	if err != nil {
		t.Fatal(err)
	}
	if guess.RunDir == cfg.RunDir || guess.ShmDir != cfg.ShmDir {
		t.Fatalf("guessed run dir %s shm dir %s; the test needs a wrong run dir and the right shm dir", guess.RunDir, guess.ShmDir)
	}
	if did, err := CleanupStale(guess, zerolog.Nop()); !errors.Is(err, ErrSupervisorAlive) || len(did) != 0 {
		t.Fatalf("cleanup of a live instance: did %v, err %v", did, err)
	}
	assertFilesStay(t, live...)

	st, err := QueryStatus(context.Background(), target)
	if err != nil || st.RunDir != cfg.RunDir || st.Phase != rolectl.PhaseRunning {
		t.Fatalf("status without the run dir: %v %+v", err, st)
	}
	li, err := ReadLockInfo(cfg.SupervisorLockPath())
	if err != nil || li.RunDir != cfg.RunDir || li.Pid != cmd.Process.Pid || li.ControlSocket != cfg.ControlSocketPath() {
		t.Fatalf("lock info %+v, %v", li, err)
	}

	var buf bytes.Buffer
	if err := StopInstance(context.Background(), target, time.Minute, &buf); err != nil {
		t.Fatalf("stop: %v\n%s", err, out.String())
	}
	if !strings.Contains(buf.String(), "instance "+cfg.Instance+" stopped") {
		t.Errorf("stop output %q", buf.String())
	}
	select {
	case err := <-waitc:
		if err != nil {
			t.Fatalf("supervisor exit: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("supervisor still running after stop\n%s", out.String())
	}
	assertNoInstanceFiles(t, cfg)
}

// While the lock is held nothing is removed, whatever the caller's run dir;
// once it is free (its holder died) the leftovers go.
func TestCleanupRefusesWhileLocked(t *testing.T) {
	cfg := testConfig(t)
	l, err := lockInstance(cfg.SupervisorLockPath(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	if err := l.record(LockInfo{Instance: cfg.Instance, Pid: os.Getpid(), RunDir: cfg.RunDir, ShmDir: cfg.ShmDir,
		ControlSocket: cfg.ControlSocketPath()}); err != nil {
		t.Fatal(err)
	}
	region := cfg.ShmPath(shm.StateFile)
	if err := os.WriteFile(region, []byte("region"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lockInstance(cfg.SupervisorLockPath(), true); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v", err)
	}

	// A holder that does not answer (wedged, or its run dir deleted): stop
	// refuses rather than guessing.
	t.Setenv(config.EnvRunDir, t.TempDir())
	var out bytes.Buffer
	err = StopInstance(context.Background(), Target{Instance: cfg.Instance, ShmDir: cfg.ShmDir}, time.Second, &out)
	if !errors.Is(err, ErrSupervisorAlive) || !strings.Contains(err.Error(), "not touching its files") {
		t.Fatalf("stop of a locked, silent instance: %v (%q)", err, out.String())
	}
	assertFilesStay(t, region, cfg.SupervisorLockPath())

	// Nor does a second supervisor of the instance start, whatever its run dir.
	other := *cfg
	other.RunDir = filepath.Join(t.TempDir(), "elsewhere")
	sup, err := New(Options{Config: &other, Log: zerolog.Nop(), FindBinary: func(string) (string, error) { return "/bin/true", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Run(context.Background()); !errors.Is(err, ErrAlreadyRunning) || !strings.Contains(err.Error(), cfg.RunDir) {
		t.Fatalf("second supervisor: %v", err)
	}
	assertFilesStay(t, region, cfg.SupervisorLockPath())

	l.release()
	did, err := CleanupStale(cfg, zerolog.Nop())
	if err != nil || len(did) == 0 {
		t.Fatalf("cleanup after the holder died: %v %v", did, err)
	}
	assertNoInstanceFiles(t, cfg)
}

// Roles run without a supervisor (systemd units) are alive by the shm
// region's heartbeats: their files stay too.
func TestCleanupRefusesWhileRegionRolesLive(t *testing.T) {
	cfg := testConfig(t)
	r, err := shm.Create(shm.CreateOptions{BaseDir: filepath.Dir(cfg.ShmDir), Instance: cfg.Instance, NoReserve: true,
		Sizes: shm.Sizes{Slots: 2, MaxReqTotalLen: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rs, err := r.Role(shm.RoleRouter)
	if err != nil {
		t.Fatal(err)
	}
	rs.Pid.Store(uint32(os.Getppid())) // a live process that is not this one
	rs.Beat()
	if _, err := CleanupStale(cfg, zerolog.Nop()); !errors.Is(err, ErrSupervisorAlive) || !strings.Contains(err.Error(), "router pid") {
		t.Fatalf("cleanup with a live router: %v", err)
	}
	assertFilesStay(t, cfg.ShmPath(shm.StateFile))

	rs.HeartbeatUnixNano.Store(time.Now().Add(-time.Hour).UnixNano()) // silent for an hour: dead
	if did, err := CleanupStale(cfg, zerolog.Nop()); err != nil || len(did) == 0 {
		t.Fatalf("cleanup with a stale router: %v %v", did, err)
	}
	assertNoInstanceFiles(t, cfg)
}

// A target's shm dir must look like an instance's: stop removes it.
func TestTargetRejectsForeignShmDir(t *testing.T) {
	for _, dir := range []string{"/dev/shm", "relative/lightllm-x", t.TempDir()} {
		if _, err := (Target{Instance: "x", ShmDir: dir}).Config(); err == nil {
			t.Errorf("shm dir %q accepted", dir)
		}
	}
}
