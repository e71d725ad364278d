package eppproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWithRealEPP runs the proxy against a real llm-d-router EPP binary
// (LIGHTLLM_EPP_BIN; the module proxy does not serve llm-d-router everywhere,
// so CI skips it) in file-discovery mode, with the EndpointPickerConfig of
// deploy/kubernetes/epp.yaml as scripts/scaleout-local.sh prints it, and two
// model-server doubles that serve lightllm's live gauges with values the test
// sets. It checks that the EPP reads our metric names and that the proxy
// follows its decisions.
func TestWithRealEPP(t *testing.T) {
	epp := os.Getenv("LIGHTLLM_EPP_BIN")
	if epp == "" {
		t.Skip("LIGHTLLM_EPP_BIN not set (an epp binary of llm-d-router v0.10.0)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	dir := t.TempDir()
	endpoints := filepath.Join(dir, "endpoints.yaml")
	cfg, err := exec.Command(bash, "../../scripts/scaleout-local.sh", "print-epp-config", endpoints).Output()
	if err != nil {
		t.Fatalf("print-epp-config: %v", err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	a, b := newGaugeServer(t), newGaugeServer(t)
	writeEndpoints := func(servers ...*gaugeServer) {
		var sb strings.Builder
		sb.WriteString("endpoints:\n")
		for i, s := range servers {
			_, port, _ := net.SplitHostPort(s.addr)
			fmt.Fprintf(&sb, "- name: s%d\n  address: \"127.0.0.1\"\n  port: %q\n  labels: {llm-d.ai/engine-type: lightllm-go}\n", i, port)
		}
		tmp := endpoints + ".tmp"
		if err := os.WriteFile(tmp, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, endpoints); err != nil {
			t.Fatal(err)
		}
	}
	writeEndpoints(a, b)

	grpcPort := freePort(t)
	cmd := exec.Command(epp, "--pool-name", "test", "--pool-namespace", "test", "--config-file", cfgPath,
		"--grpc-port", fmt.Sprint(grpcPort), "--grpc-health-port", fmt.Sprint(freePort(t)),
		"--metrics-port", fmt.Sprint(freePort(t)), "--secure-serving=false", "--tracing=false",
		"--metrics-endpoint-auth=false", "--enable-pprof=false")
	logf, err := os.Create(filepath.Join(dir, "epp.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", epp, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			t.Logf("epp log tail:\n%s", tail(string(log), 3000))
		}
	})
	picker := fmt.Sprintf("127.0.0.1:%d", grpcPort)
	waitListening(t, picker)
	srv := newTestProxy(t, Options{PickerAddr: picker})

	send := func(prompt string) string {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":4}`, prompt)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		return resp.Header.Get(ServedEndpointKey)
	}
	settle := func() { time.Sleep(300 * time.Millisecond) } // > the 50 ms scrape, with slack

	t.Run("queued instance avoided", func(t *testing.T) {
		for _, tc := range []struct{ busy, idle *gaugeServer }{{a, b}, {b, a}} {
			tc.busy.waiting.Store(6)
			tc.idle.waiting.Store(0)
			settle()
			for i := range 5 {
				if got := send(fmt.Sprintf("distinct prompt %d %d", i, time.Now().UnixNano())); got != tc.idle.addr {
					t.Errorf("request %d went to %s; %s has 6 queued, %s none", i, got, tc.busy.addr, tc.idle.addr)
				}
			}
		}
		a.waiting.Store(0)
		b.waiting.Store(0)
	})
	t.Run("prefix sticks", func(t *testing.T) {
		settle()
		long := strings.Repeat("Once upon a time there was a little dog who liked to run in the park. ", 8)
		first := send(long)
		for i := range 5 {
			if got := send(long); got != first {
				t.Errorf("repeat %d went to %s, the first to %s", i, got, first)
			}
		}
	})
	t.Run("removed from the file", func(t *testing.T) {
		writeEndpoints(a)
		settle()
		for i := range 6 {
			if got := send(fmt.Sprintf("after removal %d", i)); got != a.addr {
				t.Errorf("request %d went to %s after it left the endpoints file", i, got)
			}
		}
	})
}

// gaugeServer is a model-server double: /metrics serves lightllm's live
// gauges (waiting as set by the test), /v1/completions answers at once.
type gaugeServer struct {
	addr    string
	waiting atomic.Int64
}

func newGaugeServer(t *testing.T) *gaugeServer {
	t.Helper()
	g := &gaugeServer{}
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/metrics" {
			fmt.Fprintf(w, "# TYPE lightllm_num_requests_waiting gauge\nlightllm_num_requests_waiting{model_name=\"stories\"} %d\n", g.waiting.Load())
			fmt.Fprint(w, "# TYPE lightllm_num_requests_running gauge\nlightllm_num_requests_running{model_name=\"stories\"} 1\n")
			fmt.Fprintf(w, "# TYPE lightllm_kv_cache_usage_perc gauge\nlightllm_kv_cache_usage_perc{model_name=\"stories\"} %g\n", 0.1+0.1*float64(g.waiting.Load()))
			fmt.Fprint(w, "# TYPE lightllm_cache_config_info gauge\nlightllm_cache_config_info{block_size=\"1\",model_name=\"stories\",num_gpu_blocks=\"4096\"} 1\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	})
	g.addr = b.addr
	return g
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s after 30 s", addr)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
