package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxSocketPath is sun_path's capacity minus its terminating NUL.
const maxSocketPath = 107

// SockMetric is the metric role's PULL socket in an instance's run
// directory (DESIGN.md §3); every role pushes to it as an optional peer.
// It is the only well-known socket left: the apiserver → router and
// router → detokenizer hops are shm intake rings (shm.Intake, issue 25),
// being on every request's path to its first token.
const SockMetric = "metric.sock"

// Endpoint returns the ipc:// endpoint of socket name in runDir, checking
// that the path fits in a unix socket address (a long run directory is the
// usual way to hit that limit).
func Endpoint(runDir, name string) (string, error) {
	if name == "" || strings.ContainsRune(name, '/') {
		return "", fmt.Errorf("ipc: bad socket name %q", name)
	}
	path, err := filepath.Abs(filepath.Join(runDir, name))
	if err != nil {
		return "", fmt.Errorf("ipc: socket path for %s: %w", name, err)
	}
	if len(path) > maxSocketPath {
		return "", fmt.Errorf("ipc: socket path %s is %d bytes, unix sockets allow %d: use a shorter run directory", path, len(path), maxSocketPath)
	}
	return "ipc://" + path, nil
}

// socketPath extracts the filesystem path of an ipc:// endpoint.
func socketPath(endpoint string) (string, error) {
	path, ok := strings.CutPrefix(endpoint, "ipc://")
	if !ok || path == "" {
		return "", fmt.Errorf("ipc: endpoint %q is not ipc://PATH", endpoint)
	}
	if len(path) > maxSocketPath {
		return "", fmt.Errorf("ipc: socket path %s is %d bytes, unix sockets allow %d", path, len(path), maxSocketPath)
	}
	return path, nil
}

// clearStaleSocket makes path bindable. A socket file left by a process
// that died makes bind fail with EADDRINUSE even though nobody listens, so
// it is removed; but a socket someone still accepts on is left alone
// (ErrAddrInUse), and a file that is not a socket is never deleted.
func clearStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ipc: stat %s: %w", path, err)
	}
	if st.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("ipc: %s exists and is not a socket; refusing to replace it", path)
	}
	c, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err == nil {
		c.Close()
		return fmt.Errorf("ipc: %s: %w", path, ErrAddrInUse)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ipc: probe %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("ipc: remove stale socket %s: %w", path, err)
	}
	return nil
}
