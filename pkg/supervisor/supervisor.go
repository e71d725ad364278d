// Package supervisor starts the role processes of one instance in LightLLM's
// order, waits for each to report ready, restarts a role that dies (with
// exponential backoff and a restart budget), and stops everything in order
// on SIGTERM/SIGINT or `lightllm stop`, removing the instance's shm files and
// sockets. Unlike LightLLM, one dead child does not take the server down.
//
// A single goroutine (Run's loop) owns the processes: exits, readiness,
// timers and control requests all arrive on one channel, so there is no
// lock-ordering to get wrong; a mutex guards only the fields that `status`
// and heartbeats read or touch from the control socket's goroutines.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/logging"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// Errors Run returns.
var (
	ErrAlreadyRunning = errors.New("instance already running")
	ErrLaunch         = errors.New("launch failed")
	ErrRestartBudget  = errors.New("restart budget exhausted")
)

// Options configure a Supervisor. Config is required; the function fields
// are test seams with working defaults.
type Options struct {
	Config *config.Config // resolved
	Log    zerolog.Logger
	// Output receives the children's stderr and stdout (default os.Stderr).
	Output io.Writer

	// StartProcess starts one role (default: fork/exec with Pdeathsig).
	StartProcess func(Spec) (Process, error)
	// FindBinary locates a role's binary (default FindRoleBinary).
	FindBinary func(role string) (string, error)
	// Stages and StopOrder default to LaunchStages and StopStages.
	Stages    [][]string
	StopOrder [][]string
	// StableAfter is how long a role must have been ready for its next
	// failure's backoff to start over from restart_backoff (default 5s).
	StableAfter time.Duration
}

// Supervisor runs one instance.
type Supervisor struct {
	opts     Options
	cfg      *config.Config
	log      zerolog.Logger
	events   chan event
	loopDone chan struct{} // closed when the loop ends; events are no longer read
	started  time.Time

	// lock is held from prepare until the instance's files are removed: it
	// is how clients tell that this instance is alive (instancelock.go).
	lock *instanceLock
	// apiSocket is the API port's listening socket, handed to every
	// apiserver (ports.go); nil when the apiserver listens itself.
	apiSocket *os.File

	mu    sync.Mutex // guards phase and the fields of roleProc noted there
	phase string
	roles map[string]*roleProc
	order []string // every role, launch order
}

// roleProc is one role's state. The loop goroutine writes everything;
// fields read or written by control handlers are accessed under mu.
type roleProc struct {
	name   string
	binary string
	stage  int

	// under mu
	proc          Process
	pid           int
	gen           int // bumped on each start; stale events carry an old gen
	state         string
	startedAt     time.Time
	readyAt       time.Time
	lastHeartbeat time.Time
	restarts      int
	lastExit      string
	startTicks    uint64
	// failuresInARow and crashLooping mirror consecutive for status.
	failuresInARow int
	crashLooping   bool

	// loop only
	// retiring are earlier apiserver processes handing their clients over
	// to the current one (a zero-gap restart, handover.go).
	retiring         []Process
	failures         []time.Time // unrequested exits within restart_window
	consecutive      int         // consecutive failures, for the backoff
	restartRequested bool        // the current process is being replaced
	readyTimer       *time.Timer
	restartTimer     *time.Timer
	killTimer        *time.Timer
}

type eventKind int

const (
	evExit eventKind = iota
	evReady
	evReadyTimeout
	evRestartDue
	evKillDue
	evStop
	evRestart
)

type event struct {
	kind  eventKind
	role  string
	gen   int
	pid   int
	exit  ExitStatus
	req   rolectl.Request
	reply chan rolectl.Response
}

// New checks the options and returns a supervisor ready to Run.
func New(o Options) (*Supervisor, error) {
	if o.Config == nil {
		return nil, errors.New("supervisor: no config")
	}
	if !o.Config.Resolved {
		return nil, errors.New("supervisor: config is not resolved")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("supervisor: %w", err)
	}
	if o.Output == nil {
		o.Output = os.Stderr
	}
	if o.FindBinary == nil {
		o.FindBinary = FindRoleBinary
	}
	if o.Stages == nil {
		o.Stages = LaunchStages()
	}
	if o.StopOrder == nil {
		o.StopOrder = StopStages()
	}
	if o.StableAfter == 0 {
		o.StableAfter = 5 * time.Second
	}
	s := &Supervisor{
		opts:     o,
		cfg:      o.Config,
		log:      o.Log,
		events:   make(chan event, 64),
		loopDone: make(chan struct{}),
		roles:    map[string]*roleProc{},
		phase:    rolectl.PhaseLaunching,
	}
	for i, stage := range o.Stages {
		for _, r := range stage {
			if _, dup := s.roles[r]; dup {
				return nil, fmt.Errorf("supervisor: role %s listed twice", r)
			}
			s.roles[r] = &roleProc{name: r, stage: i, state: rolectl.StateStopped}
			s.order = append(s.order, r)
		}
	}
	for _, stage := range o.StopOrder {
		for _, r := range stage {
			if s.roles[r] == nil {
				return nil, fmt.Errorf("supervisor: stop order names unknown role %s", r)
			}
		}
	}
	return s, nil
}

// Run launches the instance and supervises it until ctx is cancelled (the
// caller's SIGTERM/SIGINT), `lightllm stop`, a failed launch, or an
// exhausted restart budget. Every path stops all roles in order and removes
// the instance's shm directory and sockets before returning. A requested
// stop returns nil.
func (s *Supervisor) Run(ctx context.Context) (err error) {
	// Whoever reads our log may go away (a closed terminal, `launch | head`):
	// a write to that broken pipe must fail, not kill the supervisor and
	// leave its roles and shm directory behind without a stop in order.
	signal.Ignore(syscall.SIGPIPE)
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
	loopClosed := false
	defer func() {
		if !loopClosed {
			close(s.loopDone)
		}
	}()
	if err := s.findBinaries(); err != nil {
		return fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	ctl, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	apiSocket, err := takePorts(s.cfg)
	if err != nil {
		ctl.Close()
		_, _ = removeInstanceFiles(s.cfg, false)
		s.lock.release()
		return fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	if apiSocket != nil {
		s.apiSocket = apiSocket
		defer apiSocket.Close()
	}
	if s.opts.StartProcess == nil {
		sp := newSpawner(s.opts.Output)
		defer sp.close()
		s.opts.StartProcess = sp.start
	}
	var handlers sync.WaitGroup
	accepting := make(chan struct{})
	go s.serveControl(ctl, &handlers, accepting)

	s.log.Info().Str("run_dir", s.cfg.RunDir).Str("shm_dir", s.cfg.ShmDir).Int("port", s.cfg.Port).Msg("launching")
	err = s.loop(ctx)
	close(s.loopDone)
	loopClosed = true
	s.shutdown()
	ctl.Close()
	<-accepting
	handlers.Wait()
	// The lock file goes with the shm dir, before the lock is released.
	_, cerr := removeInstanceFiles(s.cfg, false)
	s.lock.release()
	if cerr != nil {
		s.log.Error().Err(cerr).Msg("cleanup")
		err = errors.Join(err, cerr)
	}
	if err != nil {
		s.log.Error().Err(err).Msg("stopped")
	} else {
		s.log.Info().Msg("stopped")
	}
	return err
}

func (s *Supervisor) findBinaries() error {
	var errs []error
	for _, r := range s.order {
		p, err := s.opts.FindBinary(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		s.roles[r].binary = p
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// prepare refuses to run twice, takes the instance lock, cleans up after a
// dead predecessor, creates the directories, saves the config and opens the
// control socket. On error it holds no lock and has removed nothing of a
// live instance.
func (s *Supervisor) prepare(ctx context.Context) (ctl *controlServer, err error) {
	sock := s.cfg.ControlSocketPath()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	resp, err := rolectl.Call(cctx, sock, rolectl.Request{Op: rolectl.OpStatus})
	cancel()
	if err == nil && resp.Status != nil {
		return nil, fmt.Errorf("%w: instance %s (supervisor pid %d); stop it with `lightllm stop --instance %s`",
			ErrAlreadyRunning, s.cfg.Instance, resp.Status.SupervisorPid, s.cfg.Instance)
	}
	// Another supervisor with another run dir has no socket at ours; the
	// lock in the shm dir is what every supervisor of the instance shares.
	lock, err := lockInstance(s.cfg.SupervisorLockPath(), true)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%w: %v; stop it with `lightllm stop --instance %s`", ErrAlreadyRunning, lockedError(s.cfg, "refusing to start a second one"), s.cfg.Instance)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.release()
		}
	}()
	did, err := cleanupStale(s.cfg, s.log, lock)
	if err != nil {
		return nil, err
	}
	if len(did) > 0 {
		s.log.Warn().Strs("removed", did).Msg("cleaned up after a previous run of this instance")
	}
	if err := os.MkdirAll(s.cfg.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	if err := s.cfg.Save(s.cfg.ConfigPath()); err != nil {
		return nil, err
	}
	ctl, err = listenControl(sock)
	if err != nil {
		return nil, err
	}
	if err := lock.record(LockInfo{Instance: s.cfg.Instance, Pid: os.Getpid(), RunDir: s.cfg.RunDir, ShmDir: s.cfg.ShmDir,
		ControlSocket: sock, StartedAt: s.started}); err != nil {
		ctl.Close()
		return nil, err
	}
	s.lock = lock
	s.writeState()
	return ctl, nil
}

// loop is the supervisor's only actor. It returns nil on a requested stop.
func (s *Supervisor) loop(ctx context.Context) error {
	if err := s.startStage(0); err != nil {
		return err
	}
	var hb <-chan time.Time
	if s.cfg.HeartbeatTimeout > 0 {
		t := time.NewTicker(s.cfg.HeartbeatInterval.D())
		defer t.Stop()
		hb = t.C
	}
	for {
		select {
		case <-ctx.Done():
			s.log.Info().Msg("signal received; stopping")
			return nil
		case now := <-hb:
			s.checkHeartbeats(now)
		case ev := <-s.events:
			stop, err := s.handle(ev)
			if err != nil || stop {
				return err
			}
		}
	}
}

// post delivers an event to the loop unless Run has finished.
func (s *Supervisor) post(ev event) bool {
	select {
	case s.events <- ev:
		return true
	case <-s.loopDone:
		return false
	}
}

func (s *Supervisor) handle(ev event) (stop bool, err error) {
	r := s.roles[ev.role]
	switch ev.kind {
	case evExit:
		return false, s.onExit(r, ev.gen, ev.exit)
	case evReady:
		resp, advance := s.onReady(r, ev.pid)
		ev.reply <- resp
		if advance {
			return false, s.startStage(r.stage + 1)
		}
	case evReadyTimeout:
		return false, s.onReadyTimeout(r, ev.gen)
	case evRestartDue:
		if r.gen == ev.gen && r.state == rolectl.StateBackoff {
			return false, s.restart(r)
		}
	case evKillDue:
		s.mu.Lock()
		p := r.proc
		same := r.gen == ev.gen
		s.mu.Unlock()
		if same && p != nil {
			s.log.Warn().Str("target", r.name).Msg("role did not stop in time; killing")
			_ = p.Signal(syscall.SIGKILL)
		}
	case evStop:
		ev.reply <- rolectl.Response{OK: true}
		s.log.Info().Msg("stop requested")
		return true, nil
	case evRestart:
		resp, err := s.onRestartRequest(ev.req)
		ev.reply <- resp
		return false, err
	}
	return false, nil
}

func (s *Supervisor) startStage(i int) error {
	if i >= len(s.opts.Stages) {
		s.setPhase(rolectl.PhaseRunning)
		s.log.Info().Stringer("took", time.Since(s.started)).Str("url", fmt.Sprintf("http://%s:%d", s.cfg.Host, s.cfg.Port)).Msg("all roles ready")
		if err := rolectl.NotifySystemd("READY=1"); err != nil {
			s.log.Warn().Err(err).Msg("sd_notify")
		}
		return nil
	}
	for _, name := range s.opts.Stages[i] {
		if err := s.start(s.roles[name]); err != nil {
			return fmt.Errorf("%w: %v", ErrLaunch, err)
		}
	}
	return nil
}

// start starts a role's process and arms its ready timeout.
func (s *Supervisor) start(r *roleProc) error {
	p, err := s.opts.StartProcess(s.spec(r))
	if err != nil {
		return err
	}
	now := time.Now()
	ticks, _ := procStartTicks(p.Pid())
	s.mu.Lock()
	r.gen++
	gen := r.gen
	r.proc, r.pid, r.startTicks = p, p.Pid(), ticks
	r.state, r.startedAt, r.readyAt, r.lastHeartbeat = rolectl.StateStarting, now, time.Time{}, now
	s.mu.Unlock()
	s.log.Info().Str("target", r.name).Int("child_pid", p.Pid()).Str("binary", r.binary).Msg("started role")
	go func() {
		st := p.Wait()
		s.post(event{kind: evExit, role: r.name, gen: gen, exit: st})
	}()
	r.readyTimer = time.AfterFunc(s.cfg.ReadyTimeout.D(), func() {
		s.post(event{kind: evReadyTimeout, role: r.name, gen: gen})
	})
	s.writeState()
	return nil
}

func (s *Supervisor) spec(r *roleProc) Spec {
	format, _ := logging.ResolveFormat(s.cfg.LogFormat, s.opts.Output)
	env := make([]string, 0, len(os.Environ())+5)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		// systemd's notify/watchdog/socket-activation variables are the
		// supervisor's own, never a child's.
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", config.EnvListenFD,
			rolectl.EnvControlSocket, rolectl.EnvRole, rolectl.EnvInstance, rolectl.EnvSupervisorPid, logging.EnvFormat:
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		rolectl.EnvControlSocket+"="+s.cfg.ControlSocketPath(),
		rolectl.EnvRole+"="+r.name,
		rolectl.EnvInstance+"="+s.cfg.Instance,
		rolectl.EnvSupervisorPid+"="+strconv.Itoa(os.Getpid()),
		logging.EnvFormat+"="+format,
	)
	spec := Spec{Role: r.name, Path: r.binary, Args: []string{"--config", s.cfg.ConfigPath()}, Env: env}
	if r.name == config.RoleAPIServer && s.apiSocket != nil {
		spec.Files = []*os.File{s.apiSocket}                 // fd 3 in the child
		spec.Env = append(spec.Env, config.EnvListenFD+"=3") // ExtraFiles[0] is fd 3
	}
	return spec
}

// onReady marks a role ready; advance reports that its launch stage is
// complete and the next one may start.
func (s *Supervisor) onReady(r *roleProc, pid int) (resp rolectl.Response, advance bool) {
	s.mu.Lock()
	if r.proc == nil || r.pid != pid {
		s.mu.Unlock()
		return rolectl.Response{Error: fmt.Sprintf("pid %d is not the current %s process", pid, r.name)}, false
	}
	if r.state != rolectl.StateStarting {
		s.mu.Unlock()
		return rolectl.Response{OK: true}, false // a repeated ready
	}
	r.state, r.readyAt = rolectl.StateReady, time.Now()
	recovered := r.crashLooping
	r.crashLooping = false
	took := r.readyAt.Sub(r.startedAt)
	launching := s.phase == rolectl.PhaseLaunching
	s.mu.Unlock()
	stopTimer(r.readyTimer)
	s.log.Info().Str("target", r.name).Int("child_pid", pid).Stringer("took", took).Bool("recovered", recovered).Msg("role ready")
	s.retire(r)
	s.writeState()
	return rolectl.Response{OK: true}, launching && s.stageReady(r.stage)
}
