package rolectl

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// Controller is what a role process uses to talk to whoever supervises it:
// the lightllm supervisor (over $LIGHTLLM_CONTROL_SOCKET), systemd (over
// $NOTIFY_SOCKET), both, or neither (a role started by hand or in a test, in
// which case the calls only mark readiness locally).
type Controller struct {
	role      string
	socket    string // "" when no supervisor
	pid       int
	log       zerolog.Logger
	sd        *sdNotifier
	heartbeat time.Duration

	readyOnce sync.Once
	readyC    chan struct{}

	mu       sync.Mutex
	progress func() error
}

// New returns the controller of a role process, configured from the
// environment the supervisor or systemd set.
func New(role string, cfg *config.Config, log zerolog.Logger) *Controller {
	return &Controller{
		role:      role,
		socket:    os.Getenv(EnvControlSocket),
		pid:       os.Getpid(),
		log:       log,
		sd:        newSDNotifier(),
		heartbeat: cfg.HeartbeatInterval.D(),
		readyC:    make(chan struct{}),
	}
}

// NewStandalone returns a controller with no supervisor and no systemd, for
// running a role in-process (tests, `lightllm run`). ReadyC still works.
func NewStandalone(role string, log zerolog.Logger) *Controller {
	return &Controller{role: role, pid: os.Getpid(), log: log, heartbeat: time.Second, readyC: make(chan struct{})}
}

// Role returns the role name.
func (c *Controller) Role() string { return c.role }

// Supervised reports whether a lightllm supervisor is listening for us.
func (c *Controller) Supervised() bool { return c.socket != "" }

// Ready reports that the role is serving: call it once, after binding its
// sockets and attaching shm. The supervisor starts the next roles only then.
// Later calls do nothing.
func (c *Controller) Ready(ctx context.Context) error {
	var err error
	c.readyOnce.Do(func() {
		close(c.readyC)
		if c.socket != "" {
			_, err = Call(ctx, c.socket, Request{Op: OpReady, Role: c.role, Pid: c.pid})
		}
		if serr := c.sd.notify("READY=1"); serr != nil && err == nil {
			err = serr
		}
		if err == nil {
			c.log.Info().Msg("ready")
		}
	})
	if err != nil {
		return fmt.Errorf("report ready: %w", err)
	}
	return nil
}

// ReadyC is closed once Ready has been called; in-process tests wait on it
// the way the supervisor waits for the ready message.
func (c *Controller) ReadyC() <-chan struct{} { return c.readyC }

// SetProgressCheck installs a check run before each heartbeat. While it
// returns an error the role sends no heartbeat (nor systemd WATCHDOG=1), so a
// role that is alive but wedged is killed and restarted after
// --heartbeat_timeout. A role whose main loop can stall (infer, router)
// should report the age of its last iteration here.
func (c *Controller) SetProgressCheck(f func() error) {
	c.mu.Lock()
	c.progress = f
	c.mu.Unlock()
}

// Heartbeat runs until ctx is done, sending a heartbeat every
// --heartbeat_interval (and WATCHDOG=1 at least twice per systemd watchdog
// period).
func (c *Controller) Heartbeat(ctx context.Context) {
	every := c.heartbeat
	if c.sd != nil && c.sd.watchdog > 0 && c.sd.watchdog/2 < every {
		every = c.sd.watchdog / 2
	}
	if c.socket == "" && (c.sd == nil || c.sd.watchdog == 0) {
		return // nobody listens
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.beat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Controller) beat(ctx context.Context) {
	c.mu.Lock()
	check := c.progress
	c.mu.Unlock()
	if check != nil {
		if err := check(); err != nil {
			c.log.Warn().Err(err).Msg("no progress; withholding heartbeat")
			return
		}
	}
	if c.socket != "" {
		cctx, cancel := context.WithTimeout(ctx, c.heartbeat)
		_, err := Call(cctx, c.socket, Request{Op: OpHeartbeat, Role: c.role, Pid: c.pid})
		cancel()
		if err != nil && ctx.Err() == nil {
			c.log.Debug().Err(err).Msg("heartbeat")
		}
	}
	if c.sd != nil && c.sd.watchdog > 0 {
		if err := c.sd.notify("WATCHDOG=1"); err != nil {
			c.log.Debug().Err(err).Msg("watchdog")
		}
	}
}

// Stopping tells systemd the role is shutting down.
func (c *Controller) Stopping() {
	if err := c.sd.notify("STOPPING=1"); err != nil {
		c.log.Debug().Err(err).Msg("sd_notify")
	}
}

// RequestRestart asks the supervisor to restart a role (the health role
// asks for "infer" when the engine is wedged). Without a supervisor it is an
// error: under systemd, restarts are systemd's (the watchdog does it).
func (c *Controller) RequestRestart(ctx context.Context, target, reason string) error {
	if c.socket == "" {
		return fmt.Errorf("restart %s: %w (not started by `lightllm launch`)", target, ErrNotRunning)
	}
	_, err := Call(ctx, c.socket, Request{Op: OpRestart, Role: c.role, Pid: c.pid, Target: target, Reason: reason})
	return err
}

// RestartForOperator forwards an operator's restart of target (the status
// page's button, behind --api_key) to the supervisor. The request carries
// no calling role, so the supervisor treats it as `lightllm restart ROLE`:
// it does not count against the target's restart budget as a crash would.
func (c *Controller) RestartForOperator(ctx context.Context, target, reason string) error {
	if c.socket == "" {
		return fmt.Errorf("restart %s: %w (not started by `lightllm launch`)", target, ErrNotRunning)
	}
	_, err := Call(ctx, c.socket, Request{Op: OpRestart, Target: target, Reason: reason})
	return err
}

// Status returns the supervisor's view of every role (pids, readiness, last
// heartbeat), which the health role uses to check the other roles.
func (c *Controller) Status(ctx context.Context) (*Status, error) {
	if c.socket == "" {
		return nil, fmt.Errorf("status: %w (not started by `lightllm launch`)", ErrNotRunning)
	}
	resp, err := Call(ctx, c.socket, Request{Op: OpStatus})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("status: empty reply")
	}
	return resp.Status, nil
}
