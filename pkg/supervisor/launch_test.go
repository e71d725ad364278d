package supervisor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// TestLaunchAndClientCommands drives what `lightllm launch`, `status`,
// `restart` and `stop` do, with the role binaries found on $PATH (links to
// this test binary named lightllm-<role>).
func TestLaunchAndClientCommands(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, r := range config.AllRoles() {
		if err := os.Symlink(exe, filepath.Join(bin, "lightllm-"+r)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	t.Setenv(envTestMode, "child") // inherited by the roles; this process is past TestMain
	model := t.TempDir()
	if err := os.WriteFile(filepath.Join(model, "config.json"),
		[]byte(`{"max_position_embeddings": 256, "num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 16, "eos_token_id": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "lllaunch")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	instance := "launch-test"
	target := Target{Instance: instance, RunDir: filepath.Join(base, "run")}
	args := []string{"--model_dir", model, "--instance", instance, "--run_dir", target.RunDir,
		"--shm_dir", filepath.Join(base, "lightllm-"+instance), "--port", "18100", "--metric_port", "18101",
		"--max_total_token_num", "4096", "--log_format", "json", "--ready_timeout", "30s", "--stop_timeout", "5s",
		"--graceful_timeout", "0"}
	flagsFor := func(extra ...string) *config.Flags {
		fs := pflag.NewFlagSet("launch", pflag.ContinueOnError)
		f := config.RegisterFlags(fs)
		if err := fs.Parse(append(append([]string(nil), args...), extra...)); err != nil {
			t.Fatal(err)
		}
		return f
	}

	// --check-config resolves and prints without touching the run dir.
	var out bytes.Buffer
	if err := Launch(context.Background(), flagsFor("--check-config"), LaunchOptions{Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"max_req_total_len": 256`) {
		t.Fatalf("check-config output: %s", out.String())
	}
	if _, err := os.Stat(target.RunDir); !os.IsNotExist(err) {
		t.Fatalf("check-config created the run dir: %v", err)
	}

	// --prepare-only writes the resolved config a role started by systemd reads.
	out.Reset()
	if err := Launch(context.Background(), flagsFor(), LaunchOptions{PrepareOnly: true, Stdout: &out}); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(target.RunDir, config.ConfigFileName)
	if c, err := config.Load(cfgPath); err != nil || !c.Resolved || c.MaxReqTotalLen != 256 {
		t.Fatalf("prepared config: %v %+v", err, c)
	}

	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, flagsFor(), LaunchOptions{Stdout: logs, Stderr: logs}) }()

	var st *rolectl.Status
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err = QueryStatus(context.Background(), target)
		if err == nil && st.Phase == rolectl.PhaseRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never running: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var table bytes.Buffer
	if err := WriteStatus(&table, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"instance launch-test", "ROLE", "apiserver", "yes"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("status table lacks %q:\n%s", want, table.String())
		}
	}

	out.Reset()
	if err := RestartRole(context.Background(), target, "detokenizer", true, time.Minute, &out); err != nil {
		t.Fatalf("restart: %v\n%s", err, logs.String())
	}
	if !strings.Contains(out.String(), "detokenizer restarted: pid") {
		t.Errorf("restart output %q", out.String())
	}
	if err := RestartRole(context.Background(), target, "gpu", true, time.Minute, &out); err == nil {
		t.Error("restart of an unknown role accepted")
	}

	out.Reset()
	if err := StopInstance(context.Background(), target, time.Minute, &out); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("launch returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("launch did not return after stop")
	}
	if !strings.Contains(out.String(), "instance launch-test stopped") {
		t.Errorf("stop output %q", out.String())
	}
	for _, want := range []string{`"message":"effective configuration"`, `"role":"supervisor"`, `"role":"router"`, `"instance":"launch-test"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s", want)
		}
	}
	c, _ := target.Config()
	c.ShmDir = filepath.Join(base, "lightllm-"+instance)
	assertNoInstanceFiles(t, c)

	// Now nothing runs: status fails, stop reports it, restart fails.
	if _, err := QueryStatus(context.Background(), target); !errors.Is(err, rolectl.ErrNotRunning) {
		t.Fatalf("status after stop: %v", err)
	}
	out.Reset()
	// Nothing stopped and nothing cleaned is an error (exit 1), so that a
	// script sees it.
	if err := StopInstance(context.Background(), target, time.Minute, &out); !errors.Is(err, rolectl.ErrNotRunning) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("second stop: %v %q", err, out.String())
	}
}
