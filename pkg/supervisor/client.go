package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// Target names an instance for `lightllm status|stop|restart`.
type Target struct {
	Instance string // default: the port
	Port     int
	RunDir   string // default: config.RunDirFor(instance); the lock file's record when no supervisor answers there
	ShmDir   string // default: config.ShmDirFor(instance)
}

// Config returns the minimal config that locates the instance's files.
func (t Target) Config() (*config.Config, error) {
	c := config.DefaultConfig()
	if t.Port != 0 {
		c.Port = t.Port
	}
	c.Instance, c.RunDir, c.ShmDir = t.Instance, t.RunDir, t.ShmDir
	if err := c.FillNames(); err != nil {
		return nil, err
	}
	// A cleanup removes the shm dir: the same guard as a launch's.
	if !filepath.IsAbs(c.ShmDir) || !strings.HasPrefix(filepath.Base(c.ShmDir), "lightllm-") {
		return nil, fmt.Errorf("shm_dir %q must be an absolute path to a directory named lightllm-*", c.ShmDir)
	}
	if !filepath.IsAbs(c.RunDir) {
		return nil, fmt.Errorf("run_dir %q must be an absolute path", c.RunDir)
	}
	return &c, nil
}

// locate finds the instance t names and asks its supervisor for its
// status. The run dir t names or guesses ($LIGHTLLM_RUN_DIR) need not be
// the one the instance was launched with: when no supervisor answers there,
// the lock file in the shm dir says where the live one is. With no live
// supervisor the error wraps rolectl.ErrNotRunning and cfg points at the
// run dir the last one recorded, where its leftovers are.
func (t Target) locate(ctx context.Context) (*config.Config, *rolectl.Status, error) {
	cfg, err := t.Config()
	if err != nil {
		return nil, nil, err
	}
	st, err := askStatus(ctx, cfg)
	if !errors.Is(err, rolectl.ErrNotRunning) {
		return cfg, st, err
	}
	if li, lerr := ReadLockInfo(cfg.SupervisorLockPath()); lerr == nil && li.RunDir != cfg.RunDir && filepath.IsAbs(li.RunDir) {
		c := *cfg
		c.RunDir = li.RunDir
		cfg = &c
		st, err = askStatus(ctx, cfg)
		if !errors.Is(err, rolectl.ErrNotRunning) {
			return cfg, st, err
		}
	}
	return cfg, nil, fmt.Errorf("instance %s is not running (no supervisor at %s): %w", cfg.Instance, cfg.ControlSocketPath(), rolectl.ErrNotRunning)
}

func askStatus(ctx context.Context, cfg *config.Config) (*rolectl.Status, error) {
	resp, err := rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
	if err != nil {
		return nil, err
	}
	if resp.Status == nil {
		return nil, fmt.Errorf("supervisor at %s answered status without one", cfg.ControlSocketPath())
	}
	return resp.Status, nil
}

// QueryStatus returns the status of a running instance.
func QueryStatus(ctx context.Context, t Target) (*rolectl.Status, error) {
	_, st, err := t.locate(ctx)
	return st, err
}

// WriteStatus prints a status as `lightllm status` shows it.
func WriteStatus(w io.Writer, st *rolectl.Status, now time.Time) error {
	fmt.Fprintf(w, "instance %s  supervisor pid %d  up %s  %s\n", st.Instance, st.SupervisorPid, roundDur(now.Sub(st.StartedAt)), st.Phase)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPID\tSTATE\tREADY\tUPTIME\tRESTARTS\tLAST EXIT")
	for _, r := range st.Roles {
		pid, up, ready, last := "-", "-", "no", "-"
		if r.Pid != 0 {
			pid, up = fmt.Sprint(r.Pid), roundDur(r.Uptime(now)).String()
		}
		if r.Ready {
			ready = "yes"
		}
		if r.LastExit != "" {
			last = r.LastExit
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Role, pid, r.State, ready, up, r.Restarts, last)
	}
	return tw.Flush()
}

func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// StopInstance asks the instance's supervisor to stop and waits until it is
// gone. With no supervisor running it removes what a dead one left behind;
// it never removes the files of a live one (CleanupStale refuses).
func StopInstance(ctx context.Context, t Target, timeout time.Duration, w io.Writer) error {
	cfg, _, err := t.locate(ctx)
	if err == nil {
		_, err = rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStop})
	}
	if errors.Is(err, rolectl.ErrNotRunning) {
		did, cerr := CleanupStale(cfg, zerolog.Nop())
		if cerr != nil {
			return fmt.Errorf("stop: %w", cerr)
		}
		if len(did) == 0 {
			// Nothing stopped, nothing cleaned: a script must see it.
			return fmt.Errorf("instance %s is not running (`lightllm ps` lists the instances on this host): %w", cfg.Instance, rolectl.ErrNotRunning)
		} else {
			fmt.Fprintf(w, "instance %s is not running; cleaned up after it:\n  %s\n", cfg.Instance, strings.Join(did, "\n  "))
		}
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stopping instance %s ...\n", cfg.Instance)
	deadline := time.Now().Add(timeout)
	for {
		_, err := rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
		if errors.Is(err, rolectl.ErrNotRunning) {
			fmt.Fprintf(w, "instance %s stopped\n", cfg.Instance)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s still stopping after %s", cfg.Instance, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RestartRole asks the supervisor to restart one role and, when wait is
// set, waits until its new process is ready.
func RestartRole(ctx context.Context, t Target, role string, wait bool, timeout time.Duration, w io.Writer) error {
	if !config.IsRole(role) {
		return fmt.Errorf("unknown role %q (roles: %s)", role, strings.Join(config.AllRoles(), ", "))
	}
	cfg, st, err := t.locate(ctx)
	if err != nil {
		return err
	}
	old := 0
	for _, r := range st.Roles {
		if r.Role == role {
			old = r.Pid
		}
	}
	if _, err := rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpRestart, Target: role}); err != nil {
		return err
	}
	if !wait {
		fmt.Fprintf(w, "restart of %s requested\n", role)
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		st, err := askStatus(ctx, cfg)
		if err != nil {
			return err
		}
		for _, r := range st.Roles {
			if r.Role == role && r.Ready && r.Pid != 0 && r.Pid != old {
				fmt.Fprintf(w, "%s restarted: pid %d → %d\n", role, old, r.Pid)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready again after %s", role, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
