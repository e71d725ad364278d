package supervisor

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// controlIOTimeout bounds one control connection.
const controlIOTimeout = 10 * time.Second

// askTimeout bounds how long a control request waits for the loop.
const askTimeout = 8 * time.Second

type controlServer struct {
	l    net.Listener
	path string
}

// listenControl binds the control socket. The caller has made sure no live
// supervisor owns it, so a leftover file is removed first.
func listenControl(path string) (*controlServer, error) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("remove stale control socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on control socket: %w", err)
	}
	// Anyone who can connect can stop the server.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod control socket: %w", err)
	}
	return &controlServer{l: l, path: path}, nil
}

func (c *controlServer) Close() { _ = c.l.Close() }

// serveControl accepts connections until the listener closes; every handler
// is in handlers before serveControl returns.
func (s *Supervisor) serveControl(c *controlServer, handlers *sync.WaitGroup, accepting chan<- struct{}) {
	defer close(accepting)
	for {
		conn, err := c.l.Accept()
		if err != nil {
			return
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			s.handleConn(conn)
		}()
	}
}

func (s *Supervisor) handleConn(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(controlIOTimeout))
	var req rolectl.Request
	if err := rolectl.ReadMessage(bufio.NewReader(conn), &req); err != nil {
		_ = rolectl.WriteMessage(conn, rolectl.Response{Error: "bad request: " + err.Error()})
		return
	}
	_ = rolectl.WriteMessage(conn, s.dispatch(req))
}

func (s *Supervisor) dispatch(req rolectl.Request) rolectl.Response {
	switch req.Op {
	case rolectl.OpStatus:
		st := s.Status()
		return rolectl.Response{OK: true, Status: &st}
	case rolectl.OpHeartbeat:
		return s.heartbeat(req)
	case rolectl.OpReady:
		if s.roles[req.Role] == nil {
			return rolectl.Response{Error: fmt.Sprintf("unknown role %q", req.Role)}
		}
		return s.ask(event{kind: evReady, role: req.Role, pid: req.Pid})
	case rolectl.OpStop:
		s.mu.Lock()
		stopping := s.phase == rolectl.PhaseStopping
		s.mu.Unlock()
		if stopping {
			return rolectl.Response{OK: true}
		}
		return s.ask(event{kind: evStop})
	case rolectl.OpRestart:
		return s.ask(event{kind: evRestart, req: req})
	}
	return rolectl.Response{Error: fmt.Sprintf("unknown op %q", req.Op)}
}

// heartbeat is answered here, not by the loop: it only stamps a time.
func (s *Supervisor) heartbeat(req rolectl.Request) rolectl.Response {
	r := s.roles[req.Role]
	if r == nil {
		return rolectl.Response{Error: fmt.Sprintf("unknown role %q", req.Role)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.proc == nil || r.pid != req.Pid {
		return rolectl.Response{Error: fmt.Sprintf("pid %d is not the current %s process", req.Pid, req.Role)}
	}
	r.lastHeartbeat = time.Now()
	return rolectl.Response{OK: true}
}

// ask hands a request to the loop and waits for its answer.
func (s *Supervisor) ask(ev event) rolectl.Response {
	ev.reply = make(chan rolectl.Response, 1)
	stopping := rolectl.Response{Error: "supervisor is stopping"}
	if !s.post(ev) {
		return stopping
	}
	t := time.NewTimer(askTimeout)
	defer t.Stop()
	select {
	case r := <-ev.reply:
		return r
	case <-s.loopDone:
		select { // the loop may have answered just before it ended (stop does)
		case r := <-ev.reply:
			return r
		default:
			return stopping
		}
	case <-t.C:
		return rolectl.Response{Error: "supervisor busy; try again"}
	}
}

func pid() int { return os.Getpid() }
