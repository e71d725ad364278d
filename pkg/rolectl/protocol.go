// Package rolectl is the role side of the supervisor protocol, and the
// helper every role binary's main uses.
//
// # Protocol
//
// The supervisor listens on a unix stream socket, <run_dir>/supervisor.sock,
// and passes its path to each child in $LIGHTLLM_CONTROL_SOCKET. Every call is
// one connection carrying one JSON line each way:
//
//	role → supervisor   {"op":"ready","role":"router","pid":123}
//	                    {"op":"heartbeat","role":"router","pid":123}
//	                    {"op":"restart","role":"health","pid":130,"target":"infer","reason":"..."}
//	CLI  → supervisor   {"op":"status"} {"op":"stop"} {"op":"restart","target":"router"}
//	supervisor → caller {"ok":true,"status":{...}} or {"ok":false,"error":"..."}
//
// ready and heartbeat are accepted only from the current process of the named
// role (pid check), so a message from a process being replaced is ignored.
// Under systemd (NOTIFY_SOCKET set) the same calls also send READY=1 and
// WATCHDOG=1, so the binaries work as Type=notify units.
package rolectl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Environment the supervisor sets for each child.
const (
	EnvControlSocket = "LIGHTLLM_CONTROL_SOCKET" // supervisor control socket path
	EnvRole          = "LIGHTLLM_ROLE"           // the role the child plays
	EnvInstance      = "LIGHTLLM_INSTANCE"       // the instance name
	EnvSupervisorPid = "LIGHTLLM_SUPERVISOR_PID" // a child whose parent is not this pid exits at once
)

// EnvCPUProfileDir, when set in the environment a role inherits, makes it
// write a Go CPU profile of its run into that directory (startCPUProfile).
const EnvCPUProfileDir = "LIGHTLLM_CPUPROFILE_DIR"

// Operations.
const (
	OpReady     = "ready"
	OpHeartbeat = "heartbeat"
	OpRestart   = "restart"
	OpStatus    = "status"
	OpStop      = "stop"
)

// maxMessage bounds one protocol line.
const maxMessage = 1 << 20

// defaultCallTimeout applies when the context has no deadline.
const defaultCallTimeout = 5 * time.Second

// ErrNotRunning means no supervisor answers on the socket.
var ErrNotRunning = errors.New("supervisor not running")

// Request is one call to the supervisor.
type Request struct {
	Op     string `json:"op"`
	Role   string `json:"role,omitempty"`   // the calling role (ready, heartbeat, restart from a role)
	Pid    int    `json:"pid,omitempty"`    // the calling process
	Target string `json:"target,omitempty"` // restart: the role to restart
	Reason string `json:"reason,omitempty"` // restart: why (logged)
}

// Response is the supervisor's answer.
type Response struct {
	OK     bool    `json:"ok"`
	Error  string  `json:"error,omitempty"`
	Status *Status `json:"status,omitempty"`
}

// Role states reported in RoleStatus.State.
const (
	StateStarting = "starting" // started, not yet ready
	StateReady    = "ready"
	StateBackoff  = "backoff" // exited; restart scheduled
	StateStopping = "stopping"
	StateStopped  = "stopped"
)

// Supervisor phases reported in Status.Phase.
const (
	PhaseLaunching = "launching"
	PhaseRunning   = "running"
	PhaseStopping  = "stopping"
)

// Status is the supervisor's view of the instance.
type Status struct {
	Instance      string       `json:"instance"`
	SupervisorPid int          `json:"supervisor_pid"`
	StartedAt     time.Time    `json:"started_at"`
	Phase         string       `json:"phase"`
	RunDir        string       `json:"run_dir"`
	ShmDir        string       `json:"shm_dir"`
	Roles         []RoleStatus `json:"roles"`
}

// RoleStatus is one role's line in `lightllm status`.
type RoleStatus struct {
	Role          string    `json:"role"`
	Pid           int       `json:"pid"` // 0 when not running
	State         string    `json:"state"`
	Ready         bool      `json:"ready"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	ReadyAt       time.Time `json:"ready_at,omitzero"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	Restarts      int       `json:"restarts"`
	LastExit      string    `json:"last_exit,omitempty"`
	Binary        string    `json:"binary,omitempty"`
	// FailuresInARow counts failures since the role last served for a
	// while; CrashLooping is set from the third on until the role is ready
	// again. The supervisor keeps retrying a crash-looping role at the
	// longest backoff (unless --restart_budget asks for a full stop).
	FailuresInARow int  `json:"failures_in_a_row,omitempty"`
	CrashLooping   bool `json:"crash_looping,omitempty"`
}

// Uptime is how long the current process has run (0 when not running).
func (r RoleStatus) Uptime(now time.Time) time.Duration {
	if r.Pid == 0 || r.StartedAt.IsZero() {
		return 0
	}
	return now.Sub(r.StartedAt)
}

// Call sends one request to the supervisor at socketPath and returns its
// response. A refused or missing socket is ErrNotRunning; a response with
// ok=false is returned together with an error carrying its message.
func Call(ctx context.Context, socketPath string, req Request) (*Response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultCallTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no one listens on %s)", ErrNotRunning, socketPath)
		}
		return nil, fmt.Errorf("dial supervisor %s: %w", socketPath, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := WriteMessage(conn, req); err != nil {
		return nil, fmt.Errorf("send %s to supervisor: %w", req.Op, err)
	}
	var resp Response
	if err := ReadMessage(bufio.NewReader(conn), &resp); err != nil {
		return nil, fmt.Errorf("read supervisor reply to %s: %w", req.Op, err)
	}
	if !resp.OK {
		return &resp, fmt.Errorf("supervisor: %s", resp.Error)
	}
	return &resp, nil
}

// WriteMessage writes v as one JSON line.
func WriteMessage(conn net.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = conn.Write(append(b, '\n'))
	return err
}

// ReadMessage reads one JSON line (at most 1 MiB) into v.
func ReadMessage(r *bufio.Reader, v any) error {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			return err
		}
		line = append(line, chunk...)
		if len(line) > maxMessage {
			return fmt.Errorf("message longer than %d bytes", maxMessage)
		}
		if !isPrefix {
			break
		}
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("decode message: %w", err)
	}
	return nil
}
