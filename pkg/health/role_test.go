package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// The role in-process: shm in a temp dir, a fake apiserver answering the
// probe, no supervisor. It must report ready, serve its status on
// health.sock, write health.json, and turn unhealthy when the apiserver
// stops answering.
func TestRunInProcess(t *testing.T) {
	_, base := newRegion(t, "hrole")
	var fail atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		io.WriteString(w, `{"generated_text":["!"],"finish_reason":"length"}`)
	}))
	defer api.Close()
	host, port, _ := net.SplitHostPort(api.Listener.Addr().String())

	cfg := config.DefaultConfig()
	cfg.Instance = "hrole"
	cfg.RunDir = t.TempDir()
	cfg.ShmDir = filepath.Join(base, "lightllm-hrole")
	cfg.Host = host
	cfg.Port, _ = strconv.Atoi(port)
	cfg.HealthInterval = config.Duration(20 * time.Millisecond)
	cfg.HealthTimeout = config.Duration(time.Second)

	ctl := rolectl.NewStandalone(config.RoleHealth, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, &cfg, zerolog.Nop(), ctl) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	select {
	case <-ctl.ReadyC():
	case err := <-done:
		t.Fatalf("Run returned before ready: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("not ready")
	}

	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", cfg.SocketPath(config.RoleHealth))
	}}}
	status := func() Report {
		resp, err := client.Get("http://health/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rep Report
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	waitFor := func(what string, cond func(Report) bool) Report {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a loaded CI machine
		for {
			rep := status()
			if cond(rep) {
				return rep
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; last report %s", what, rep.JSON())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("healthy and ready", func(r Report) bool { return r.Status == Healthy && r.Ready })
	// The report is served before Publish writes the file: wait for it.
	var fromFile Report
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(cfg.RunDir, StatusFileName))
		if err == nil {
			if err = json.Unmarshal(b, &fromFile); err == nil && fromFile.Status == Healthy {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("status file: %v", err)
		}
	}

	fail.Store(true)
	rep := waitFor("unhealthy after the engine fails", func(r Report) bool { return r.Status == Unhealthy && len(r.Restarts) > 0 })
	if rep.Restarts[0] != config.RoleInfer || rep.Ready {
		t.Fatalf("report %s", rep.JSON())
	}
}
