package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/ipc"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// Options adjust New; the zero value is what the metric role uses.
type Options struct {
	// Endpoint overrides EndpointFor(cfg).
	Endpoint string
	// HTTP is the listener /metrics is served on; default cfg.Host:cfg.MetricPort.
	HTTP net.Listener
	// Status reads the supervisor's restart counts for
	// lightllm_role_restarts_total; nil leaves that metric out.
	Status StatusFunc
}

// Server is the metric role: a PULL socket fed by every role's Client, a
// registry, /metrics over HTTP, and an optional Pushgateway loop.
type Server struct {
	cfg  *config.Config
	log  zerolog.Logger
	reg  *Registry
	pull *ipc.Puller
	ln   net.Listener
	http *http.Server
	push *pusher

	endpoint string
}

// New builds the registry and binds the PULL socket and the HTTP listener;
// the server is reachable (though not yet consuming) when New returns.
func New(cfg *config.Config, log zerolog.Logger, o Options) (*Server, error) {
	reg, err := NewRegistry(cfg.ModelName, cfg.MaxReqTotalLen)
	if err != nil {
		return nil, err
	}
	if o.Status != nil {
		if err := reg.Prometheus().Register(newRestartCollector(o.Status, cfg.ModelName)); err != nil {
			return nil, fmt.Errorf("register role restarts: %w", err)
		}
	}
	s := &Server{cfg: cfg, log: log, reg: reg, endpoint: o.Endpoint}
	if s.endpoint == "" {
		if s.endpoint, err = EndpointFor(cfg); err != nil {
			return nil, fmt.Errorf("metric role: %w", err)
		}
	}
	if cfg.MetricGateway != "" {
		if s.push, err = newPusher(cfg.MetricGateway, cfg.JobName, cfg.Instance, cfg.PushInterval.D(), reg.Prometheus(), log); err != nil {
			return nil, err
		}
	}
	// A deep receive queue: the PULL side back-pressures into the senders'
	// queues, which drop; the registry applies events in microseconds.
	if s.pull, err = ipc.NewPuller(s.endpoint, ipc.Options{Logger: log, QueueLen: 8192}); err != nil {
		return nil, fmt.Errorf("metric role: %w", err)
	}
	s.ln = o.HTTP
	if s.ln == nil {
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MetricPort))
		if s.ln, err = net.Listen("tcp", addr); err != nil {
			s.pull.Close()
			return nil, fmt.Errorf("metric role: listen %s: %w", addr, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg.Prometheus(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, Registry: reg.Prometheus(),
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Addr is the HTTP address /metrics is served on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Registry is the server's registry.
func (s *Server) Registry() *Registry { return s.reg }

// Run consumes events and serves HTTP until ctx is done, then closes both.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metric role: serve http: %w", err)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := s.consume(); err != nil {
			errc <- err
		}
	}()
	pctx, pcancel := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() {
		defer close(pdone)
		if s.push != nil {
			s.push.run(pctx)
		}
	}()
	s.log.Info().Str("http", s.Addr()).Str("endpoint", s.endpoint).Bool("push", s.push != nil).Msg("metric role serving")

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = s.http.Shutdown(sctx)
	cancel()
	s.pull.Close()
	wg.Wait()
	pcancel() // after the last events are applied: the final push carries them
	<-pdone
	if err != nil {
		return err
	}
	return ctx.Err()
}

// consume applies messages until the socket is closed.
func (s *Server) consume() error {
	var lastWarn time.Time
	for {
		msg, err := s.pull.Recv(context.Background())
		switch {
		case errors.Is(err, ipc.ErrClosed):
			return nil
		case errors.Is(err, ipc.ErrBadMessage):
			err = s.reg.reject(rejectMalformed, err)
		case err != nil:
			return fmt.Errorf("metric role: receive: %w", err)
		default:
			err = s.reg.ApplyMessage(msg)
		}
		if err != nil && time.Since(lastWarn) > 10*time.Second {
			lastWarn = time.Now()
			s.log.Warn().Err(err).Msg("rejected metric event (counted in lightllm_metric_events_rejected_total; logged every 10 s at most)")
		}
	}
}

// Run is the metric role's body (a rolectl.RunFunc): bind, report ready,
// serve until ctx is cancelled.
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	o := Options{}
	if ctl.Supervised() {
		o.Status = ctl.Status
	}
	s, err := New(cfg, log, o)
	if err != nil {
		return err
	}
	if err := ctl.Ready(ctx); err != nil {
		s.pull.Close()
		s.ln.Close()
		return err
	}
	return s.Run(ctx)
}
