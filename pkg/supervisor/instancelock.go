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

	"golang.org/x/sys/unix"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/shm"
)

// An instance's liveness must not depend on where a client guesses its run
// dir ($LIGHTLLM_RUN_DIR, --run_dir): a `lightllm stop` that guessed wrong
// once deleted the shm files of a running server. The shm dir is the one
// name every client derives alike, so the supervisor holds an flock on
// <shm_dir>/supervisor.lock for its whole life and records its run dir
// there. The kernel drops the lock when the supervisor dies, however it
// dies, so "the lock can be taken" is exactly "no supervisor lives".

// ErrLocked means the instance lock is held: a supervisor of the instance
// is alive.
var ErrLocked = errors.New("instance lock held")

// LockInfo is what a live supervisor records in its lock file.
type LockInfo struct {
	Instance      string    `json:"instance"`
	Pid           int       `json:"pid"`
	RunDir        string    `json:"run_dir"`
	ShmDir        string    `json:"shm_dir"`
	ControlSocket string    `json:"control_socket"`
	StartedAt     time.Time `json:"started_at"`
}

// ReadLockInfo reads the lock file at path. It says who took the lock last;
// only a failed lock attempt says whether that one is still alive.
func ReadLockInfo(path string) (*LockInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read instance lock: %w", err)
	}
	var li LockInfo
	if err := json.Unmarshal(b, &li); err != nil {
		return nil, fmt.Errorf("parse instance lock %s: %w", path, err)
	}
	return &li, nil
}

// instanceLock is a held flock on an instance's lock file.
type instanceLock struct {
	f    *os.File
	path string
}

// lockInstance takes the lock at path without waiting: ErrLocked when a
// live supervisor holds it, fs.ErrNotExist when its directory does not
// exist and mkdir is false. The file is opened close-on-exec, so role
// processes never inherit (and never prolong) the lock.
func lockInstance(path string, mkdir bool) (*instanceLock, error) {
	for range 10 {
		if mkdir {
			// Request slots hold prompts and outputs: keep them private.
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, fmt.Errorf("create shm dir: %w", err)
			}
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if mkdir {
					continue // a cleanup removed the directory meanwhile
				}
				return nil, fmt.Errorf("instance lock %s: %w", path, err)
			}
			return nil, fmt.Errorf("open instance lock: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			f.Close()
			switch {
			case errors.Is(err, unix.EWOULDBLOCK):
				return nil, fmt.Errorf("%s: %w", path, ErrLocked)
			case errors.Is(err, unix.EINTR):
				continue
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// The previous holder may have unlinked the file (stopping, or a
		// cleanup) after we opened it: a lock on a dead inode guards nothing.
		var held, named unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &named) == nil &&
			held.Dev == named.Dev && held.Ino == named.Ino {
			return &instanceLock{f: f, path: path}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: the file keeps being replaced", path)
}

// record writes li into the lock file for clients that look for the
// instance. Written over the old contents, then cut to length, so a reader
// never sees an empty file.
func (l *instanceLock) record(li LockInfo) error {
	b, err := json.Marshal(li)
	if err != nil {
		return fmt.Errorf("encode instance lock: %w", err)
	}
	b = append(b, '\n')
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("write instance lock %s: %w", l.path, err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("write instance lock %s: %w", l.path, err)
	}
	return nil
}

// release drops the lock. The caller removes the file first when the
// instance is gone, so no one locks an orphaned inode for long.
func (l *instanceLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// lockedError explains a held lock with what its holder recorded.
func lockedError(cfg *config.Config, what string) error {
	li, err := ReadLockInfo(cfg.SupervisorLockPath())
	if err != nil || li.Pid == 0 {
		return fmt.Errorf("instance %s: %w (%s is locked); %s", cfg.Instance, ErrSupervisorAlive, cfg.SupervisorLockPath(), what)
	}
	return fmt.Errorf("instance %s: %w (pid %d, run dir %s, control socket %s); %s",
		cfg.Instance, ErrSupervisorAlive, li.Pid, li.RunDir, li.ControlSocket, what)
}

// regionStaleAfter: a role whose shm heartbeat is older than this does not
// count as alive for liveRegionRoles (its recorded pid may be reused).
const regionStaleAfter = 30 * time.Second

// liveRegionRoles lists the roles that the instance's shm region says are
// alive: pid running and a recent heartbeat. It catches roles that run
// without a supervisor (systemd units), whose files a cleanup must leave
// alone just the same. skip holds pids known to be dying.
func liveRegionRoles(shmDir string, skip map[int]bool, now time.Time) []string {
	r, err := shm.AttachFile(filepath.Join(shmDir, shm.StateFile))
	if err != nil {
		return nil // no region (or not one this binary reads): nothing to go by
	}
	defer r.Close()
	var live []string
	for _, name := range config.AllRoles() {
		role, err := shm.ParseRole(name)
		if err != nil {
			continue
		}
		rs, err := r.Role(role)
		if err != nil {
			continue
		}
		pid := int(rs.Pid.Load())
		if pid <= 0 || pid == os.Getpid() || skip[pid] {
			continue
		}
		if age := rs.Since(now); age < 0 || age > regionStaleAfter {
			continue
		}
		if running(pid) {
			live = append(live, fmt.Sprintf("%s pid %d", name, pid))
		}
	}
	return live
}

// running reports whether pid exists and is not a zombie (a role killed a
// moment ago may not be reaped yet).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if errors.Is(err, fs.ErrNotExist) {
		return false // exited meanwhile
	}
	if err != nil {
		return true // procfs unreadable: existence is all we know
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may contain spaces and parens
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
