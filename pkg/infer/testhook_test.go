package infer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestTestHooks(t *testing.T) {
	tests := map[string]struct {
		env     string
		trigger bool
		want    bool
	}{
		"off by default":       {"", true, false},
		"other values are off": {"true", true, false},
		"on without a trigger": {"1", false, false},
		"on with a trigger":    {"1", true, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvTestHooks, tc.env)
			dir := t.TempDir()
			trigger := filepath.Join(dir, WedgeTriggerFile)
			if tc.trigger {
				if err := os.WriteFile(trigger, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			h := TestHooksFromEnv(dir, zerolog.Nop())
			if (h != nil) != (tc.env == "1") {
				t.Fatalf("hooks %v with %s=%q", h != nil, EnvTestHooks, tc.env)
			}
			if got := h.wedgeDue(); got != tc.want {
				t.Fatalf("wedgeDue = %v, want %v", got, tc.want)
			}
			if tc.want {
				if _, err := os.Stat(trigger); !os.IsNotExist(err) {
					t.Errorf("trigger not consumed: %v", err)
				}
				h.lastAt = time.Time{}
				if h.wedgeDue() {
					t.Error("a consumed trigger fired again")
				}
			}
		})
	}
}

func TestWedgeBlocksUntilContextEnds(t *testing.T) {
	h := &TestHooks{log: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.wedge(ctx); close(done) }()
	select {
	case <-done:
		t.Fatal("wedge returned before its context ended")
	case <-time.After(30 * time.Millisecond):
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("wedge did not return after its context ended")
	}
}
