package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"golang.org/x/sys/unix"
)

// Environment variables that choose where an instance's files live.
const (
	// EnvRunDir is the base of run directories: <base>/<instance>.
	EnvRunDir = "LIGHTLLM_RUN_DIR"
	// EnvShmDir is the base of shm directories: <base>/lightllm-<instance>.
	EnvShmDir = "LIGHTLLM_SHM_DIR"
	// EnvListenFD names the descriptor of the API port's listening socket
	// that the supervisor hands to each apiserver it starts (zero-gap
	// restarts: old and new accept from the one socket); unset, the
	// apiserver listens itself (a systemd unit per role).
	EnvListenFD = "LIGHTLLM_LISTEN_FD"
)

// Files in the run directory.
const (
	ConfigFileName  = "config.json"     // the resolved configuration
	StateFileName   = "state.json"      // supervisor state: pids, start times, restarts
	ControlSockName = "supervisor.sock" // supervisor control socket
	LockFileName    = "config.lock"     // serialises LoadShared
	// HealthFileName is the health role's last report; the supervisor
	// removes it with the rest, also when health was killed mid-write.
	HealthFileName = "health.json"
	// SupervisorLockName is in the shm dir, not the run dir: the supervisor
	// holds an flock on it for its whole life and records its run dir in
	// it, so `stop`/`status` find a live instance (and never clean up after
	// it) however they guess the run dir. The shm region's own files are
	// "state", "state.tmp.<pid>" and "stop-*.json"; this name is distinct.
	SupervisorLockName = "supervisor.lock"
	shmDirPrefix       = "lightllm-" // shm dirs are <base>/lightllm-<instance>
	sockSuffix         = ".sock"     // every unix/ipc socket in the run dir
	// maxUnixPath is sun_path's 108 bytes less the NUL; sockNameRoom is what
	// Validate keeps free after the run dir for socket names.
	maxUnixPath  = 107
	sockNameRoom = 24
)

var instanceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidInstance checks an instance name: it becomes part of file names and
// of systemd unit names.
func ValidInstance(name string) error {
	if !instanceRE.MatchString(name) {
		return fmt.Errorf("invalid instance name %q: use 1-64 characters from [A-Za-z0-9_.-], starting with a letter or digit", name)
	}
	return nil
}

// FillNames sets the derived names that Resolve and every role need before
// anything else: the instance (from the port), the run dir and the shm dir.
func (c *Config) FillNames() error {
	if c.Instance == "" {
		c.Instance = strconv.Itoa(c.Port)
	}
	if err := ValidInstance(c.Instance); err != nil {
		return err
	}
	if c.RunDir == "" {
		c.RunDir = RunDirFor(c.Instance)
	}
	if c.ShmDir == "" {
		c.ShmDir = ShmDirFor(c.Instance)
	}
	return nil
}

// RunDirFor returns the run directory of an instance: $LIGHTLLM_RUN_DIR/<instance>
// when that variable is set; otherwise /run/lightllm/<instance> if it exists
// or /run is writable, else /tmp/lightllm-<instance>.
func RunDirFor(instance string) string {
	if base := os.Getenv(EnvRunDir); base != "" {
		return filepath.Join(base, instance)
	}
	runDir := filepath.Join("/run/lightllm", instance)
	tmpDir := filepath.Join(os.TempDir(), "lightllm-"+instance)
	if isDir(runDir) {
		return runDir
	}
	if isDir(tmpDir) {
		return tmpDir
	}
	if writable("/run/lightllm") || (!exists("/run/lightllm") && writable("/run")) {
		return runDir
	}
	return tmpDir
}

// ShmDirFor returns ${LIGHTLLM_SHM_DIR:-/dev/shm}/lightllm-<instance>.
func ShmDirFor(instance string) string {
	base := os.Getenv(EnvShmDir)
	if base == "" {
		base = "/dev/shm"
	}
	return filepath.Join(base, shmDirPrefix+instance)
}

// ConfigPath is where the resolved configuration is saved.
func (c *Config) ConfigPath() string { return filepath.Join(c.RunDir, ConfigFileName) }

// StatePath is the supervisor's state file.
func (c *Config) StatePath() string { return filepath.Join(c.RunDir, StateFileName) }

// ControlSocketPath is the supervisor's control socket.
func (c *Config) ControlSocketPath() string { return filepath.Join(c.RunDir, ControlSockName) }

// SocketPath is the path of a named unix/ipc socket of this instance, e.g.
// SocketPath("metric") for the metric role's ZMQ PULL endpoint
// (ipc://<run_dir>/metric.sock). The supervisor removes every *.sock in the
// run dir when the instance stops.
func (c *Config) SocketPath(name string) string {
	return filepath.Join(c.RunDir, name+sockSuffix)
}

// IsSocketName reports whether a run-dir entry is one of the instance's sockets.
func IsSocketName(name string) bool { return filepath.Ext(name) == sockSuffix }

// SupervisorLockPath is the supervisor's lock file: <shm_dir>/supervisor.lock.
func (c *Config) SupervisorLockPath() string { return filepath.Join(c.ShmDir, SupervisorLockName) }

// ShmPath is the path of a named shared-memory file of this instance.
func (c *Config) ShmPath(name string) string { return filepath.Join(c.ShmDir, name) }

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func writable(p string) bool { return unix.Access(p, unix.W_OK) == nil }
