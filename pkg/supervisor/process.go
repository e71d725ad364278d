package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec is one role process to start.
type Spec struct {
	Role string
	Path string   // absolute path of the binary
	Args []string // without argv[0]
	Env  []string // the complete environment
	// Files are passed as descriptors 3, 4, ... (exec.Cmd.ExtraFiles).
	Files []*os.File
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	Pid      int
	Code     int    // exit code; -1 when killed by a signal
	Signal   string // the signal that killed it, "" otherwise
	ExitedAt time.Time
	Err      error // a wait failure, not an exit
}

func (e ExitStatus) String() string {
	switch {
	case e.Err != nil:
		return "wait failed: " + e.Err.Error()
	case e.Signal != "":
		return "killed by " + e.Signal
	default:
		return fmt.Sprintf("exit status %d", e.Code)
	}
}

// Process is a started role process: the supervisor's whole view of a child
// (containerd's shim interface in miniature). Tests substitute their own.
type Process interface {
	Pid() int
	// Done is closed when the process has exited and Wait will not block.
	Done() <-chan struct{}
	// Wait blocks until the process exits; any number of callers may wait.
	Wait() ExitStatus
	Signal(sig syscall.Signal) error
	// Output returns the tail of what the process wrote to stderr/stdout.
	Output() string
}

// Stop asks p to exit with SIGTERM, waits up to grace, then SIGKILLs it.
func Stop(p Process, grace time.Duration) ExitStatus {
	_ = p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.Done():
		return p.Wait()
	case <-t.C:
	}
	_ = p.Signal(syscall.SIGKILL)
	t.Reset(10 * time.Second) // SIGKILL cannot be ignored; this only bounds a D-state hang
	select {
	case <-p.Done():
		return p.Wait()
	case <-t.C:
		return ExitStatus{Pid: p.Pid(), Code: -1, Err: errors.New("still alive 10s after SIGKILL")}
	}
}

// execProcess is a Process backed by os/exec.
type execProcess struct {
	cmd    *exec.Cmd
	tail   *tailBuffer
	done   chan struct{}
	status ExitStatus
}

func (p *execProcess) Pid() int              { return p.cmd.Process.Pid }
func (p *execProcess) Done() <-chan struct{} { return p.done }
func (p *execProcess) Output() string        { return p.tail.String() }

func (p *execProcess) Wait() ExitStatus {
	<-p.done
	return p.status
}

func (p *execProcess) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return errors.New("process already exited")
	default:
	}
	return p.cmd.Process.Signal(sig)
}

func (p *execProcess) wait() {
	err := p.cmd.Wait()
	st := ExitStatus{Pid: p.cmd.Process.Pid, ExitedAt: time.Now()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.Code, st.Signal = -1, sigName(ws.Signal())
		} else {
			st.Code = ee.ExitCode()
		}
	default:
		st.Err = err
	}
	p.status = st
	close(p.done)
}

func sigName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return s.String()
}

// spawner forks every child from one goroutine locked to its OS thread.
// Pdeathsig fires when the *thread* that forked the child exits, not the
// process (golang/go#27505); a dedicated thread that lives until the
// supervisor is done makes "children die with the supervisor" exact.
type spawner struct {
	reqs chan spawnReq
	quit chan struct{}
	out  io.Writer
	once sync.Once
}

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner(out io.Writer) *spawner {
	s := &spawner{reqs: make(chan spawnReq), quit: make(chan struct{}), out: out}
	go func() {
		// Never unlocked: when this goroutine returns, its thread exits,
		// and any child still alive gets its Pdeathsig.
		runtime.LockOSThread()
		for {
			select {
			case r := <-s.reqs:
				r.errc <- r.cmd.Start()
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

// sinkWriter passes a role's output on to the supervisor's sink and
// swallows the sink's errors: a sink that went away (a closed terminal)
// must not stop the copy from the role's pipe, or the role's next write
// would kill it with SIGPIPE.
type sinkWriter struct{ w io.Writer }

func (s sinkWriter) Write(p []byte) (int, error) {
	_, _ = s.w.Write(p)
	return len(p), nil
}

// start is the default Options.StartProcess.
func (s *spawner) start(spec Spec) (Process, error) {
	tail := newTailBuffer(8 << 10)
	w := io.MultiWriter(sinkWriter{s.out}, tail)
	cmd := &exec.Cmd{
		Path:       spec.Path,
		Args:       append([]string{spec.Path}, spec.Args...),
		Env:        spec.Env,
		Stdout:     w,
		Stderr:     w,
		ExtraFiles: spec.Files,
		SysProcAttr: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL, // die with the supervisor
			Setpgid:   true,            // a terminal's Ctrl-C reaches only the supervisor, which stops roles in order
		},
	}
	errc := make(chan error, 1)
	select {
	case s.reqs <- spawnReq{cmd: cmd, errc: errc}:
	case <-s.quit:
		return nil, errors.New("supervisor is shutting down")
	}
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.Role, spec.Path, err)
	}
	p := &execProcess{cmd: cmd, tail: tail, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

func (s *spawner) close() { s.once.Do(func() { close(s.quit) }) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
