package rolectl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/logging"
)

// RunFunc is a role's body. It runs until ctx is cancelled (SIGTERM/SIGINT)
// and calls ctl.Ready once it serves. Returning nil after ctx is done is a
// clean stop; returning early (nil or not) is a crash the supervisor restarts.
type RunFunc func(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *Controller) error

// MainOptions adjust Main; the zero value is what role binaries use.
type MainOptions struct {
	Args    []string              // default os.Args[1:]
	Stdout  io.Writer             // default os.Stdout (--check-config output)
	Stderr  io.Writer             // default os.Stderr (usage, fatal errors, logs)
	Resolve config.ResolveOptions // must match what `lightllm launch` uses
}

// Main is the whole main of a role binary:
//
//	func main() { os.Exit(rolectl.Main(config.RoleRouter, router.Run)) }
//
// It parses the shared flags (or --config FILE, as the supervisor and the
// systemd units pass), resolves the configuration the same way `lightllm
// launch` does, builds the logger, handles SIGTERM/SIGINT (cancel ctx) and
// SIGUSR1 (dump goroutines), runs the heartbeat, runs the role, and turns
// the result into an exit code.
func Main(role string, run RunFunc) int { return MainWith(role, run, MainOptions{}) }

// MainWith is Main with options.
func MainWith(role string, run RunFunc, o MainOptions) int {
	if o.Args == nil {
		o.Args = os.Args[1:]
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	name := "lightllm-" + role
	fail := func(code int, err error) int {
		fmt.Fprintf(o.Stderr, "%s: %v\n", name, err)
		return code
	}

	// A child forked just as the supervisor died would miss Pdeathsig.
	if want, err := strconv.Atoi(os.Getenv(EnvSupervisorPid)); err == nil && want != os.Getppid() {
		return fail(1, fmt.Errorf("supervisor %d is gone", want))
	}

	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(o.Stderr)
	flags := config.RegisterFlags(fs)
	if err := fs.Parse(o.Args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return fail(2, config.SuggestFlag(fs, err))
	}
	if fs.NArg() > 0 {
		return fail(2, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	cfg, err := flags.Config()
	if err != nil {
		return fail(2, err)
	}
	if cfg, err = config.LoadShared(cfg, o.Resolve); err != nil {
		return fail(1, err)
	}
	if flags.CheckOnly() {
		r := cfg.Redacted()
		b, _ := json.MarshalIndent(&r, "", "  ")
		fmt.Fprintf(o.Stdout, "%s\n", b)
		return 0
	}
	log, err := logging.New(logging.Options{Role: role, Instance: cfg.Instance, Level: cfg.LogLevel, Format: cfg.LogFormat, Out: o.Stderr})
	if err != nil {
		return fail(2, err)
	}
	if cfg.PinCPUs {
		cpus, err := pinCPUs(role == config.RoleInfer, cfg.Threads)
		if err != nil {
			return fail(1, err)
		}
		log.Info().Ints("cpus", cpus).Msg("pinned")
	}
	if flag, nice := roleNice(role, cfg); nice > 0 {
		if err := lowerPriority(nice); err != nil {
			return fail(1, fmt.Errorf("%s %d: %w", flag, nice, err))
		}
	}
	if role != config.RoleInfer && cfg.PipelineSliceUS > 0 {
		if err := shortenSlice(cfg.PipelineSliceUS); err != nil {
			return fail(1, fmt.Errorf("pipeline_slice_us %d: %w", cfg.PipelineSliceUS, err))
		}
	}
	// The pipeline's Go scheduler gets the cores infer's threads leave
	// free, at least one, so that its goroutines spin and run on them
	// rather than on infer's: the CPUs pin_cpus gave it, or as many as
	// pipeline_nice yields (runtime.NumCPU is the affinity at start; the
	// operator's own GOMAXPROCS wins).
	if role != config.RoleInfer && (cfg.PinCPUs || cfg.PipelineNice > 0) && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(pipelineProcs(runtime.NumCPU(), cfg.Threads))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	stopDump := dumpStacksOnSIGUSR1(o.Stderr)
	defer stopDump()
	stopProfile, err := startCPUProfile(os.Getenv(EnvCPUProfileDir), role, cfg.Instance)
	if err != nil {
		return fail(1, err)
	}
	defer stopProfile()

	ctl := New(role, cfg, log)
	hbCtx, hbCancel := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); ctl.Heartbeat(hbCtx) }()

	cfg.LogEffective(log, zerolog.DebugLevel)
	log.Info().Str("config", cfg.ConfigPath()).Msg("starting")
	err = run(ctx, cfg, log, ctl)
	hbCancel()
	<-hbDone
	ctl.Stopping()
	switch {
	case err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)):
		log.Error().Err(err).Msg("role failed")
		return 1
	case ctx.Err() == nil:
		log.Error().Msg("role returned without being asked to stop")
		return 1
	}
	log.Info().Msg("stopped")
	return 0
}

// startCPUProfile writes a Go CPU profile of the whole run to
// DIR/INSTANCE-ROLE-PID.pprof when dir (LIGHTLLM_CPUPROFILE_DIR) is set, so
// every role of a launched server can be profiled under real load
// (scripts/bench-serving.sh, issue 25); the pid keeps a restarted role's
// profile apart from its predecessor's.
func startCPUProfile(dir, role, instance string) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	path := fmt.Sprintf("%s/%s-%s-%d.pprof", dir, instance, role, os.Getpid())
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// dumpStacksOnSIGUSR1 writes every goroutine's stack to w on SIGUSR1 (as
// containerd does), for diagnosing a wedged role without killing it.
func dumpStacksOnSIGUSR1(w io.Writer) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				_ = pprof.Lookup("goroutine").WriteTo(w, 2)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// roleNice is the nice value role lowers itself to and the flag that set
// it: none for infer, whose step the others yield to; the apiserver's own
// (0 by default: a new request waits on its priority before anything else
// runs), the pipeline's for the rest.
func roleNice(role string, cfg *config.Config) (flag string, nice int) {
	switch role {
	case config.RoleInfer:
		return "", 0
	case config.RoleAPIServer:
		return "apiserver_nice", cfg.APIServerNice
	default:
		return "pipeline_nice", cfg.PipelineNice
	}
}

// pipelineProcs is GOMAXPROCS for a role other than infer on a machine of
// cpus cores whose infer runs threads worker threads (0: all cores).
func pipelineProcs(cpus, threads int) int {
	if threads <= 0 || threads >= cpus {
		return 1
	}
	return cpus - threads
}
