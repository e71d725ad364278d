package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// Instances on this host are found from their shm directories
// (${LIGHTLLM_SHM_DIR:-/dev/shm}/lightllm-<instance>), the one place every
// instance has however it was started: one under `lightllm launch` has a
// supervisor answering on its control socket; one run by systemd units has
// none, but its roles record their pids and heartbeats in the region.

// Managers of an instance.
const (
	ManagerLaunch  = "launch"  // a supervisor answers
	ManagerSystemd = "systemd" // roles alive, no supervisor (systemd units, or roles started by hand)
	ManagerStale   = "stale"   // nothing alive: leftovers `lightllm stop` cleans up
)

// Instance is one instance found on this host.
type Instance struct {
	Name    string
	Manager string
	RunDir  string
	ShmDir  string
	Pid     int // the supervisor's, 0 without one
	Host    string
	Port    int
	Model   string
	Status  *rolectl.Status // the supervisor's answer, or one built from shm
}

// Discover lists the instances on this host, by name.
func Discover(ctx context.Context) ([]Instance, error) {
	base := filepath.Dir(config.ShmDirFor("x"))
	dirs, err := filepath.Glob(filepath.Join(base, "lightllm-*"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", base, err)
	}
	var out []Instance
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		name := strings.TrimPrefix(filepath.Base(d), "lightllm-")
		if config.ValidInstance(name) != nil {
			continue
		}
		out = append(out, inspect(ctx, name, d))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// inspect describes the instance whose shm dir is shmDir.
func inspect(ctx context.Context, name, shmDir string) Instance {
	in := Instance{Name: name, ShmDir: shmDir, Manager: ManagerStale}
	cfg, st, err := Target{Instance: name, ShmDir: shmDir}.locate(ctx)
	if cfg != nil {
		in.RunDir = cfg.RunDir
	}
	if err == nil {
		in.Manager, in.Status, in.Pid = ManagerLaunch, st, st.SupervisorPid
	} else if st := shmStatus(name, shmDir, in.RunDir); st != nil {
		in.Manager, in.Status = ManagerSystemd, st
	}
	for _, p := range []string{filepath.Join(in.RunDir, config.ConfigFileName), filepath.Join(config.RunDirFor(name), config.ConfigFileName)} {
		if c, err := config.Load(p); err == nil {
			in.Host, in.Port, in.Model = c.Host, c.Port, c.ModelDir
			if in.RunDir == "" {
				in.RunDir = filepath.Dir(p)
			}
			break
		}
	}
	return in
}

// shmStatus builds a status from the region's role records when a role
// process is alive; nil otherwise.
func shmStatus(name, shmDir, runDir string) *rolectl.Status {
	r, err := shm.AttachFile(filepath.Join(shmDir, shm.StateFile))
	if err != nil {
		return nil
	}
	defer r.Close()
	st := &rolectl.Status{Instance: name, Phase: "running (no supervisor: systemd units or roles started by hand)",
		RunDir: runDir, ShmDir: shmDir}
	alive := 0
	now := time.Now()
	for _, role := range config.AllRoles() {
		sr, err := shm.ParseRole(role)
		if err != nil {
			continue
		}
		rs, err := r.Role(sr)
		if err != nil {
			continue
		}
		line := rolectl.RoleStatus{Role: role, State: "stopped"}
		if pid := int(rs.Pid.Load()); pid > 0 && processAlive(pid) {
			alive++
			line.Pid, line.State, line.Ready = pid, "running", true
			line.StartedAt = time.Unix(0, rs.StartedUnixNano.Load())
			if hb := rs.HeartbeatUnixNano.Load(); hb > 0 {
				line.LastHeartbeat = time.Unix(0, hb)
			}
		}
		st.Roles = append(st.Roles, line)
	}
	if alive == 0 {
		return nil
	}
	st.StartedAt = now
	for _, l := range st.Roles {
		if !l.StartedAt.IsZero() && l.StartedAt.Before(st.StartedAt) {
			st.StartedAt = l.StartedAt
		}
	}
	return st
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// FindRunning picks the instance a command with no --instance or --port
// means: the one running on this host. None or several are an error that
// says which exist.
func FindRunning(ctx context.Context) (*Instance, error) {
	all, err := Discover(ctx)
	if err != nil {
		return nil, err
	}
	var running []Instance
	var names []string
	for _, in := range all {
		if in.Manager != ManagerStale {
			running = append(running, in)
			names = append(names, fmt.Sprintf("%s (port %d)", in.Name, in.Port))
		}
	}
	switch len(running) {
	case 0:
		return nil, fmt.Errorf("no instance is running on this host (`lightllm ps` lists what there is): %w", rolectl.ErrNotRunning)
	case 1:
		return &running[0], nil
	}
	return nil, fmt.Errorf("%d instances are running: %s; name one with --instance", len(running), strings.Join(names, ", "))
}

// WritePs prints instances as `lightllm ps` does.
func WritePs(w io.Writer, all []Instance, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tMANAGER\tADDRESS\tROLES UP\tUPTIME\tMODEL")
	for _, in := range all {
		addr, up, roles := "-", "-", "0/0"
		if in.Port != 0 {
			addr = fmt.Sprintf("%s:%d", in.Host, in.Port)
		}
		if in.Status != nil {
			n := 0
			for _, r := range in.Status.Roles {
				if r.Pid != 0 {
					n++
				}
			}
			roles = fmt.Sprintf("%d/%d", n, len(in.Status.Roles))
			up = roundDur(now.Sub(in.Status.StartedAt)).String()
		}
		model := in.Model
		if model == "" {
			model = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.Name, in.Manager, addr, roles, up, model)
	}
	return tw.Flush()
}

// Inspect describes the instance t names.
func Inspect(ctx context.Context, t Target) (*Instance, error) {
	cfg, err := t.Config()
	if err != nil {
		return nil, err
	}
	in := inspect(ctx, cfg.Instance, cfg.ShmDir)
	return &in, nil
}
