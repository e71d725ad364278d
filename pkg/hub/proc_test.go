package hub

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a separate `pull` process.
const helperEnv = "LIGHTLLM_HUB_TEST_PULL"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helperPull(spec))
	}
	os.Exit(m.Run())
}

// helperPull resolves spec against the endpoint and cache given in the
// environment and prints the path.
func helperPull(spec string) int {
	getenv := func(k string) string {
		switch k {
		case "HF_ENDPOINT", "HF_HUB_CACHE":
			return os.Getenv(k)
		}
		return "" // never the real token or offline setting
	}
	opts := Options{Getenv: getenv, RetryWait: time.Millisecond, Progress: NewReporter(os.Stderr, ReporterOptions{Mode: ProgressLines})}
	p, err := Resolve(context.Background(), spec, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p)
	return 0
}

func TestResolveConcurrentProcesses(t *testing.T) {
	h, files := newStoriesHub(t)
	h.set(func() { h.throttle = 20 * time.Millisecond }) // the transfer outlasts the second process's start
	cache := t.TempDir()
	type proc struct {
		cmd    *exec.Cmd
		stdout bytes.Buffer
		stderr bytes.Buffer
	}
	procs := make([]*proc, 2)
	for i := range procs {
		p := &proc{cmd: exec.Command(os.Args[0], "-test.run=^$")}
		p.cmd.Env = append(os.Environ(), helperEnv+"="+storiesRepo, "HF_ENDPOINT="+h.hub.URL, "HF_HUB_CACHE="+cache)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = p
	}
	var paths []string
	for i, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v: %s", i, err, p.stderr.String())
		}
		paths = append(paths, strings.TrimSpace(p.stdout.String()))
	}
	overlapped := strings.Contains(procs[0].stderr.String()+procs[1].stderr.String(), "waiting for another download")
	t.Logf("one process waited on the other's lock: %v", overlapped)
	if paths[0] == "" || paths[0] != paths[1] {
		t.Fatalf("processes resolved %q and %q", paths[0], paths[1])
	}
	checkModelDir(t, paths[0], files)
	if n := h.count("cdn", "GET", "/cdn/"+sha256Hex(files["model.safetensors"])); n != 1 {
		t.Errorf("weights downloaded %d times by two processes, want 1", n)
	}
	assertNoLeftovers(t, cache)
}
