package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// StateFile is <run_dir>/state.json: what a later process needs to clean up
// after a supervisor that died without doing it (like containerd's
// bootstrap.json). Start ticks (field 22 of /proc/<pid>/stat) guard against
// pid reuse.
type StateFile struct {
	Instance        string      `json:"instance"`
	SupervisorPid   int         `json:"supervisor_pid"`
	SupervisorTicks uint64      `json:"supervisor_start_ticks"`
	StartedAt       time.Time   `json:"started_at"`
	RunDir          string      `json:"run_dir"`
	ShmDir          string      `json:"shm_dir"`
	Roles           []StateRole `json:"roles"`
}

// StateRole is one role in the state file.
type StateRole struct {
	Role       string    `json:"role"`
	Pid        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	Restarts   int       `json:"restarts"`
	Ready      bool      `json:"ready"`
}

func writeStateFile(path string, st *StateFile) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}

// ReadStateFile reads a state file.
func ReadStateFile(path string) (*StateFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var st StateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("parse state %s: %w", path, err)
	}
	return &st, nil
}

// procStartTicks returns a process's start time in clock ticks since boot.
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may contain spaces and parens
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// sameProcess reports whether pid still is the process that had ticks.
func sameProcess(pid int, ticks uint64) bool {
	if pid <= 0 {
		return false
	}
	t, err := procStartTicks(pid)
	return err == nil && (ticks == 0 || t == ticks)
}

// ErrSupervisorAlive means a previous supervisor process still lives.
var ErrSupervisorAlive = errors.New("supervisor still alive")

// CleanupStale removes what a dead supervisor left behind: role processes
// recorded in its state file that still run (SIGKILLed), the shm directory,
// the sockets and files of the run directory. It refuses (an error wrapping
// ErrSupervisorAlive, touching nothing) while a supervisor of the instance
// lives, told by the lock in the shm dir and, for a state file, by its
// recorded pid; and while the shm region names roles that are alive (run
// without a supervisor, e.g. by systemd). It returns what it removed or
// killed.
func CleanupStale(cfg *config.Config, log zerolog.Logger) ([]string, error) {
	return cleanupStale(cfg, log, nil)
}

// cleanupStale is CleanupStale for a caller that may hold the lock of
// cfg's shm dir itself (a supervisor about to start): that lock file stays.
func cleanupStale(cfg *config.Config, log zerolog.Logger, own *instanceLock) ([]string, error) {
	st, err := ReadStateFile(cfg.StatePath())
	switch {
	case err == nil:
		// Launched with another --shm_dir; the name guard keeps a corrupt
		// state file from pointing RemoveAll anywhere else.
		if st.ShmDir != "" && st.ShmDir != cfg.ShmDir && filepath.IsAbs(st.ShmDir) && strings.HasPrefix(filepath.Base(st.ShmDir), "lightllm-") {
			c := *cfg
			c.ShmDir = st.ShmDir
			cfg = &c
		}
	case errors.Is(err, fs.ErrNotExist):
		st = nil
	default:
		log.Warn().Err(err).Msg("ignoring unreadable state file")
		st = nil
	}
	keepLock := own != nil && own.path == cfg.SupervisorLockPath()
	if !keepLock {
		l, err := lockInstance(cfg.SupervisorLockPath(), false)
		switch {
		case errors.Is(err, ErrLocked):
			return nil, lockedError(cfg, "not touching its files")
		case errors.Is(err, fs.ErrNotExist): // no shm dir: nothing there to guard
		case err != nil:
			return nil, fmt.Errorf("instance %s: cannot tell whether it runs, not touching its files: %w", cfg.Instance, err)
		default:
			defer l.release() // after the removal below: no one locks a dying file
		}
	}
	var did []string
	killed := map[int]bool{}
	if st != nil {
		if st.SupervisorPid != os.Getpid() && sameProcess(st.SupervisorPid, st.SupervisorTicks) {
			return nil, fmt.Errorf("instance %s: %w (pid %d) but not answering on %s", cfg.Instance, ErrSupervisorAlive, st.SupervisorPid, cfg.ControlSocketPath())
		}
		for _, r := range st.Roles {
			if r.StartTicks != 0 && sameProcess(r.Pid, r.StartTicks) {
				if err := syscall.Kill(r.Pid, syscall.SIGKILL); err == nil {
					killed[r.Pid] = true
					did = append(did, fmt.Sprintf("killed leftover %s pid %d", r.Role, r.Pid))
					log.Warn().Str("stale_role", r.Role).Int("stale_pid", r.Pid).Msg("killed a role left by a dead supervisor")
				}
			}
		}
	}
	if live := liveRegionRoles(cfg.ShmDir, killed, time.Now()); len(live) > 0 {
		return did, fmt.Errorf("instance %s: %w: its shm region shows live roles (%s), started without a supervisor (systemd?); not touching its files",
			cfg.Instance, ErrSupervisorAlive, strings.Join(live, ", "))
	}
	removed, err := removeInstanceFiles(cfg, keepLock)
	return append(did, removed...), err
}

// removeInstanceFiles deletes the instance's shm directory (all but the
// lock file when keepLock) and, in the run directory, every socket plus the
// config, state and lock files; the run directory itself goes when nothing
// else is left in it. Only the instance's own supervisor, or a caller
// holding its lock, may call it.
func removeInstanceFiles(cfg *config.Config, keepLock bool) ([]string, error) {
	var removed []string
	var errs []error
	switch {
	case cfg.ShmDir == "":
	case !strings.HasPrefix(filepath.Base(cfg.ShmDir), "lightllm-"):
		// Never RemoveAll a directory that is not an instance's.
		errs = append(errs, fmt.Errorf("not removing shm dir %s: not named lightllm-*", cfg.ShmDir))
	case keepLock:
		entries, err := os.ReadDir(cfg.ShmDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("read shm dir: %w", err))
		}
		for _, e := range entries {
			if e.Name() == config.SupervisorLockName {
				continue
			}
			p := filepath.Join(cfg.ShmDir, e.Name())
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
				continue
			}
			removed = append(removed, p)
		}
	default:
		if _, err := os.Lstat(cfg.ShmDir); err == nil {
			if err := os.RemoveAll(cfg.ShmDir); err != nil {
				errs = append(errs, fmt.Errorf("remove shm dir: %w", err))
			} else {
				removed = append(removed, cfg.ShmDir)
			}
		}
	}
	entries, err := os.ReadDir(cfg.RunDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("read run dir: %w", err))
	}
	for _, e := range entries {
		name := e.Name()
		ours := config.IsSocketName(name) || e.Type()&fs.ModeSocket != 0 ||
			name == config.StateFileName || name == config.StateFileName+".tmp" ||
			name == config.ConfigFileName || name == config.LockFileName ||
			name == config.HealthFileName || name == config.HealthFileName+".tmp"
		if !ours {
			continue
		}
		p := filepath.Join(cfg.RunDir, name)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	if err := os.Remove(cfg.RunDir); err == nil {
		removed = append(removed, cfg.RunDir)
	}
	return removed, errors.Join(errs...)
}
