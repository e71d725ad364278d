package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/gpu"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/shm"
)

// StatusFileName is the report the health role rewrites in the run
// directory after every check (for `lightllm status` and operators).
const StatusFileName = config.HealthFileName

// attachTimeout bounds the wait for the shm region: the health role starts
// last, so the region normally exists already.
const attachTimeout = 10 * time.Second

// Run is the health role's body (a rolectl.RunFunc).
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	region, err := attach(ctx, filepath.Join(cfg.ShmDir, shm.StateFile))
	if err != nil {
		return err
	}
	defer region.Close()

	mc, err := metrics.NewClientFor(cfg, config.RoleHealth, log)
	if err != nil {
		return fmt.Errorf("health role: %w", err)
	}
	defer mc.Close()

	m := NewMonitor(cfg, log)
	m.Probe = NewHTTPProbe(cfg).Probe
	m.Engine = ShmEngine(region.Load())
	m.Loops = ShmLoops(region)
	if ctl.Supervised() {
		m.Roles = SupervisorRoles(ctl.Status)
		m.Restart = ctl.RequestRestart
	} else {
		var others []string
		for _, r := range config.AllRoles() {
			if r != config.RoleHealth {
				others = append(others, r)
			}
		}
		m.Roles = ShmRoles(region, others)
		log.Info().Msg("not started by `lightllm launch`: failures are reported, restarts are left to systemd's watchdog")
	}
	if dev := openGPU(cfg, log); dev != nil {
		defer dev.Close()
		m.GPU = GPUCheck(dev)
	}
	statusPath := filepath.Join(cfg.RunDir, StatusFileName)
	defer os.Remove(statusPath) // a report of a stopped instance would mislead
	m.Publish = func(r Report) {
		publishMetrics(mc, r)
		if err := writeFileAtomic(statusPath, append(r.JSON(), '\n')); err != nil {
			log.Debug().Err(err).Msg("write health status file")
		}
		if r.Status != Healthy {
			log.Warn().Stringer("status", r.Status).Bool("ready", r.Ready).Interface("findings", r.Findings).Msg("health check")
		}
	}

	sock := cfg.SocketPath(config.RoleHealth)
	if err := removeStaleSocket(sock); err != nil {
		return fmt.Errorf("health role: %w", err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("health role: listen %s: %w", sock, err)
	}
	srv := &http.Server{Handler: Handler(m), ReadHeaderTimeout: 5 * time.Second}
	// Joined: Serve closes (and unlinks) the socket only when it returns,
	// and a Close that comes before Serve has started leaves that to it;
	// a role restarted in the same process found the old listener alive.
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		<-served
	}()

	if err := ctl.Ready(ctx); err != nil {
		return err
	}
	log.Info().Str("status", sock).Stringer("interval", m.Interval).Int("failures", m.Failures).
		Bool("gpu", m.GPU != nil).Msg("health monitor running")
	return m.Run(ctx)
}

// attach waits for the instance's shm region.
func attach(ctx context.Context, path string) (*shm.Region, error) {
	deadline := time.Now().Add(attachTimeout)
	for {
		r, err := shm.AttachFile(path)
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("health role: attach %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// openGPU opens --gpu_uuid. No NVML (a CPU machine, a build without cgo) or
// no UUID turns GPU checks off; a UUID NVML does not know is logged and
// also turns them off, rather than failing health (and, through restarts,
// the instance) over a typo.
func openGPU(cfg *config.Config, log zerolog.Logger) gpu.Device {
	if cfg.GPUUUID == "" {
		return nil
	}
	dev, err := gpu.Open(cfg.GPUUUID)
	switch {
	case errors.Is(err, gpu.ErrNoNVML):
		log.Info().Err(err).Msg("GPU checks off")
		return nil
	case err != nil:
		log.Error().Err(err).Str("gpu_uuid", cfg.GPUUUID).Msg("GPU checks off: cannot open the configured GPU")
		return nil
	}
	info := dev.Info()
	log.Info().Str("uuid", info.UUID).Int("index", info.Index).Str("name", info.Name).Bool("events", info.Events).Msg("watching GPU")
	return dev
}

func publishMetrics(mc *metrics.Client, r Report) {
	mc.Gauge(metrics.HealthStatus, float64(r.Status))
	if g := r.GPU; g != nil {
		mc.Gauge(metrics.GPUMemoryUsed, float64(g.MemoryUsed))
		mc.Gauge(metrics.GPUMemoryTotal, float64(g.MemoryTotal))
		mc.Gauge(metrics.GPUUtilization, float64(g.UtilGPU)/100)
		mc.Gauge(metrics.GPUTemperature, float64(g.TempC))
		mc.Gauge(metrics.GPUECCUncorrected, float64(g.ECCUncorrected))
	}
}
