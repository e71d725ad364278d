package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// TestCLIFindsInstance (issue #22): `lightllm ps`, `status` and `stop` with
// no flags find the instance running on this host whatever its port, and
// `stop` exits 1 when nothing was running. The shm base is private to the
// test (LIGHTLLM_SHM_DIR), so instances of other tests on the machine do
// not count.
func TestCLIFindsInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: builds and launches the server")
	}
	models := modelsDir(t)
	bin := buildBinaries(t)
	base, err := os.MkdirTemp("/dev/shm", "lightllm-e2e-base-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	inst := "cliops" + strconv.Itoa(os.Getpid())
	s := launch(t, bin, filepath.Join(models, "stories260K", "hf"), "--instance", inst,
		"--shm_dir", filepath.Join(base, "lightllm-"+inst))
	port := s.base[strings.LastIndexByte(s.base, ':')+1:]
	cli := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "lightllm"), args...)
		cmd.Env = append(os.Environ(), config.EnvShmDir+"="+base)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := cli("ps")
	if err != nil || !strings.Contains(out, inst) || !strings.Contains(out, "launch") || !strings.Contains(out, ":"+port) || !strings.Contains(out, "6/6") {
		t.Fatalf("ps: %v\n%s", err, out)
	}
	t.Logf("lightllm ps:\n%s", out)
	if out, err := cli("status"); err != nil || !strings.Contains(out, "instance "+inst) || !strings.Contains(out, "apiserver") {
		t.Fatalf("status with no flags: %v\n%s", err, out)
	}
	if out, err := cli("status", "--instanse", inst); err == nil || !strings.Contains(out, "did you mean --instance?") {
		t.Fatalf("misspelt flag: %v\n%s", err, out)
	}
	if out, err := cli("stop"); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("stop with no flags: %v\n%s", err, out)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the launcher did not exit after `lightllm stop`")
	}
	out, err = cli("stop")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, "no instance is running") {
		t.Fatalf("stop with nothing running: %v\n%s", err, out)
	}
	if out, err := cli("stop", "--instance", inst); err == nil || !strings.Contains(out, "not running") {
		t.Fatalf("stop of a stopped instance: %v\n%s", err, out)
	}
}
