package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	RunDir   string // default: config.RunDirFor(instance)
}

// Config returns the minimal config that locates the instance's files.
func (t Target) Config() (*config.Config, error) {
	c := config.DefaultConfig()
	if t.Port != 0 {
		c.Port = t.Port
	}
	c.Instance, c.RunDir = t.Instance, t.RunDir
	if err := c.FillNames(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (t Target) status(ctx context.Context) (*config.Config, *rolectl.Status, error) {
	cfg, err := t.Config()
	if err != nil {
		return nil, nil, err
	}
	resp, err := rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStatus})
	if err != nil {
		if errors.Is(err, rolectl.ErrNotRunning) {
			return cfg, nil, fmt.Errorf("instance %s is not running (no supervisor at %s): %w", cfg.Instance, cfg.ControlSocketPath(), rolectl.ErrNotRunning)
		}
		return cfg, nil, err
	}
	return cfg, resp.Status, nil
}

// QueryStatus returns the status of a running instance.
func QueryStatus(ctx context.Context, t Target) (*rolectl.Status, error) {
	_, st, err := t.status(ctx)
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
// gone. With no supervisor running it removes what a dead one left behind.
func StopInstance(ctx context.Context, t Target, timeout time.Duration, w io.Writer) error {
	cfg, err := t.Config()
	if err != nil {
		return err
	}
	_, err = rolectl.Call(ctx, cfg.ControlSocketPath(), rolectl.Request{Op: rolectl.OpStop})
	if errors.Is(err, rolectl.ErrNotRunning) {
		did, cerr := CleanupStale(cfg, zerolog.Nop())
		if cerr != nil {
			return cerr
		}
		if len(did) == 0 {
			fmt.Fprintf(w, "instance %s is not running\n", cfg.Instance)
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
	cfg, st, err := t.status(ctx)
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
		_, st, err := t.status(ctx)
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
