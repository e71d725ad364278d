package infer

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Test hooks: fault injection for the end-to-end tests, compiled in but
// off unless the process environment has EnvTestHooks=1. Nothing a client
// or the configuration can reach turns them on.
const (
	// EnvTestHooks enables the test hooks when set to "1".
	EnvTestHooks = "LIGHTLLM_TEST_HOOKS"
	// WedgeTriggerFile, created in the run directory while hooks are on,
	// wedges infer: the next engine step hangs for good while the process
	// stays alive (a hung kernel). The hook removes the file as it fires,
	// so the infer process that replaces the wedged one runs normally.
	WedgeTriggerFile = "test-hook-wedge-infer"
)

// hookPollEvery bounds how often the trigger file is looked for.
const hookPollEvery = 10 * time.Millisecond

// TestHooks is the fault injection of one infer process; nil is off.
type TestHooks struct {
	trigger string
	log     zerolog.Logger

	mu     sync.Mutex
	lastAt time.Time
}

// TestHooksFromEnv returns the hooks when EnvTestHooks=1, else nil.
func TestHooksFromEnv(runDir string, log zerolog.Logger) *TestHooks {
	if os.Getenv(EnvTestHooks) != "1" {
		return nil
	}
	h := &TestHooks{trigger: filepath.Join(runDir, WedgeTriggerFile), log: log}
	log.Warn().Str("trigger", h.trigger).Msg("TEST HOOKS ENABLED (" + EnvTestHooks + "=1): never run a production server like this")
	return h
}

// wedgeDue reports, at most once per hookPollEvery, whether the trigger
// file exists; it consumes the file when it does.
func (h *TestHooks) wedgeDue() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.lastAt) < hookPollEvery {
		return false
	}
	h.lastAt = time.Now()
	if err := os.Remove(h.trigger); err != nil {
		return false // absent (or not ours to remove): no wedge
	}
	return true
}

// wedge blocks the calling goroutine until ctx ends. The infer loop calls
// it with a context that never ends: only SIGKILL (the supervisor's, after
// its stop timeout) ends a wedged infer, as with a hung device.
func (h *TestHooks) wedge(ctx context.Context) {
	h.log.Warn().Msg("test hook: infer wedged (alive, no more engine steps)")
	<-ctx.Done()
}
