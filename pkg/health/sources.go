package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/gpu"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// ShmEngine reads the engine's load from shm: Running and Waiting (router)
// and LastProgressUnixNano (infer, on every emitted token).
func ShmEngine(l *shm.Load) func() (Engine, error) {
	return func() (Engine, error) {
		e := Engine{Running: l.Running.Load(), Waiting: l.Waiting.Load()}
		if ns := l.LastProgressUnixNano.Load(); ns > 0 {
			e.LastProgress = time.Unix(0, ns)
		}
		return e, nil
	}
}

// SupervisorRoles lists roles from the supervisor's status: readiness,
// state and the last heartbeat it received.
func SupervisorRoles(status func(context.Context) (*rolectl.Status, error)) func(context.Context) ([]RoleInfo, error) {
	return func(ctx context.Context) ([]RoleInfo, error) {
		st, err := status(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]RoleInfo, 0, len(st.Roles))
		for _, r := range st.Roles {
			out = append(out, RoleInfo{
				Role: r.Role, Pid: r.Pid, State: r.State, LastBeat: r.LastHeartbeat,
				Ready: r.Ready && r.State == rolectl.StateReady,
			})
		}
		return out, nil
	}
}

// ShmRoles lists roles from their shm records, for an instance without the
// lightllm supervisor (systemd units). A record counts only once its role
// has started (pid set); its heartbeat only once the role has beaten after
// starting, so a role that does not write shm heartbeats is never called
// silent. A pid that no longer exists is not ready.
func ShmRoles(r *shm.Region, roles []string) func(context.Context) ([]RoleInfo, error) {
	return func(context.Context) ([]RoleInfo, error) {
		var out []RoleInfo
		for _, name := range roles {
			role, err := shm.ParseRole(name)
			if err != nil {
				return nil, err
			}
			rs, err := r.Role(role)
			if err != nil {
				return nil, err
			}
			pid := int(rs.Pid.Load())
			if pid == 0 {
				continue
			}
			info := RoleInfo{Role: name, Pid: pid, Ready: PidAlive(pid)}
			if !info.Ready {
				info.State = "exited"
			}
			if hb, started := rs.HeartbeatUnixNano.Load(), rs.StartedUnixNano.Load(); hb > started {
				info.LastBeat = time.Unix(0, hb)
			}
			out = append(out, info)
		}
		return out, nil
	}
}

// ShmLoops reads the loop heartbeats of router, infer and detokenizer from
// their shm records (each stores the time on every turn of its loop), as
// ShmRoles reads them: a role that has not started is left out, and one
// whose loop has not turned since it started has no LastTurn.
func ShmLoops(r *shm.Region) func() ([]LoopBeat, error) {
	roles := ShmRoles(r, []string{config.RoleRouter, config.RoleInfer, config.RoleDetokenizer})
	return func() ([]LoopBeat, error) {
		list, err := roles(context.Background())
		if err != nil {
			return nil, err
		}
		out := make([]LoopBeat, 0, len(list))
		for _, ri := range list {
			out = append(out, LoopBeat{Role: ri.Role, Alive: ri.Ready, LastTurn: ri.LastBeat})
		}
		return out, nil
	}
}

// PidAlive reports whether a process exists in our pid namespace.
func PidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// GPUCheck reads dev and checks it; with inferPid set, infer must hold a
// context on it.
func GPUCheck(dev gpu.Device) func(inferPid int) (GPUReading, error) {
	return func(inferPid int) (GPUReading, error) {
		r, err := dev.Read()
		if err != nil {
			return GPUReading{}, err
		}
		return GPUReading{Readings: r, Problems: gpu.Check(r, gpu.Expect{InferPid: inferPid, PidVisible: PidAlive})}, nil
	}
}

// removeStaleSocket deletes a unix socket file nobody listens on (one a
// killed health role left behind); a live listener is an error.
func removeStaleSocket(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("%s: another process is listening there", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("probe stale socket %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path with data (write to a temp file, rename).
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
