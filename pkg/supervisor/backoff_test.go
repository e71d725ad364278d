package supervisor

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// TestBackoffCountsFailuresInARow: the delay doubles per failure in a row
// and starts over from restart_backoff when the role had served (been
// ready) for StableAfter before failing, however many failures the window
// holds.
func TestBackoffCountsFailuresInARow(t *testing.T) {
	const stable = 5 * time.Second
	tests := map[string]struct {
		served  []time.Duration // time ready before each failure
		delays  []time.Duration // restart delays, base 250ms, max 30s
		looping []bool
	}{
		"never ready: 250ms doubling to the 30s cap": {
			served:  []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			delays:  []time.Duration{250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000},
			looping: []bool{false, false, true, true, true, true, true, true, true, true},
		},
		"served 6s before every kill: always the shortest delay": {
			served:  []time.Duration{6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000},
			delays:  []time.Duration{250, 250, 250, 250, 250, 250, 250, 250},
			looping: []bool{false, false, false, false, false, false, false, false},
		},
		"two quick kills after a served one count on; serving again starts over": {
			served:  []time.Duration{6000, 0, 150, 7000},
			delays:  []time.Duration{250, 500, 1000, 250},
			looping: []bool{false, false, true, false},
		},
		"served 4.9s (under StableAfter) keeps counting": {
			served:  []time.Duration{4900, 4900, 4900},
			delays:  []time.Duration{250, 500, 1000},
			looping: []bool{false, false, true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := config.DefaultConfig()
			cfg.RestartBackoff, cfg.RestartBackoffMax = config.Duration(250*time.Millisecond), config.Duration(30*time.Second)
			s := &Supervisor{cfg: &cfg, opts: Options{StableAfter: stable}}
			r := &roleProc{name: "router"}
			for i, served := range tc.served {
				d, looping := s.nextDelay(r, served*time.Millisecond)
				if want := tc.delays[i] * time.Millisecond; d != want || looping != tc.looping[i] {
					t.Fatalf("failure %d (served %v): delay %v crash-looping %v, want %v %v",
						i+1, served*time.Millisecond, d, looping, want, tc.looping[i])
				}
			}
		})
	}
}

// TestPortInUseRefusedBeforeAnyRoleStarts: a taken --port is found before
// the model loads (minutes for a big one), not when the apiserver binds.
func TestPortInUseRefusedBeforeAnyRoleStarts(t *testing.T) {
	cfg := testConfig(t)
	l, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := newHarness(t, cfg, nil, nil, nil)
	h.run()
	err = h.wait(30 * time.Second)
	if !errors.Is(err, ErrLaunch) || !strings.Contains(err.Error(), "--port") {
		t.Fatalf("want a launch error naming --port, got %v", err)
	}
	h.mu.Lock()
	started := len(h.started)
	h.mu.Unlock()
	if started != 0 {
		t.Fatalf("%d roles started before the port check", started)
	}
	assertNoInstanceFiles(t, cfg)
}
