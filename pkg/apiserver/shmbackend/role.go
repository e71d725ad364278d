package shmbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/grammar"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/model"
	"github.com/lightllm-go/lightllm/pkg/pipeline"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// Run is the apiserver role's body: the HTTP server (pkg/apiserver) over
// this backend. `func main() { os.Exit(rolectl.Main(config.RoleAPIServer, shmbackend.Run)) }`.
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, ctl *rolectl.Controller) error {
	tok, err := model.LoadTokenizer(cfg.ModelDir) // a path, or a builtin:NAME model
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	region, err := pipeline.OpenRegion(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer region.Close()
	b, err := New(Options{
		Region: region, MaxTotalTokens: cfg.MaxTotalTokenNum,
		HealthTimeout: cfg.HealthTimeout.D(), StallTimeout: cfg.StallTimeout.D(), UnavailableTimeout: cfg.UnavailableTimeout.D(), Log: log,
		DecodeIDs: func(ids []int32) string { return tok.Decode(ids, false) },
	})
	if err != nil {
		return err
	}
	defer b.Close()

	mc, err := metrics.NewClientFor(cfg, config.RoleAPIServer, log)
	if err != nil {
		return err
	}
	defer mc.Close()
	live := prometheus.NewRegistry()
	if err := live.Register(metrics.NewLiveCollector(metrics.ShmLoadFunc(region.Load()), metrics.LiveOptions{ModelName: cfg.ModelName, VLLMCompat: cfg.MetricsVLLMCompat})); err != nil {
		return fmt.Errorf("live metrics: %w", err)
	}
	metricURL := "http://" + net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MetricPort)) + "/metrics"
	info := cfg.Redacted()
	chatTemplate, err := loadChatTemplate(cfg.ChatTemplate)
	if err != nil {
		return err
	}
	srv, err := apiserver.New(apiserver.Options{
		ChatTemplate:    chatTemplate,
		ToolCallParser:  cfg.ToolCallParser,
		ReasoningParser: cfg.ReasoningParser,
		// Infer compiles the same spec with the same options; compiling here
		// refuses what cannot be enforced before a slot is taken.
		CheckConstraint:   apiserver.GrammarCheck(grammar.NewCache(256), grammar.Options{}),
		ModelName:         cfg.ModelName,
		ServedModelNames:  cfg.ServedModelName,
		APIKeys:           cfg.APIKeys(),
		MetricsNeedAPIKey: cfg.MetricsNeedAPIKey,
		AllowedOrigins:    cfg.AllowedOrigins,
		ModelDetails:      modelDetails(cfg.ModelDir),
		ModelDir:          cfg.ModelDir,
		MaxReqTotalLen:    cfg.MaxReqTotalLen,
		MaxInFlight:       region.NumSlots(),
		GracefulTimeout:   cfg.GracefulTimeout.D(),
		Superseded:        b.Superseded,
		Metrics:           metrics.APIHandlerWith(live, metrics.APIOptions{MetricURL: metricURL}),
		ServerInfo:        &info,
		Observer:          Observer{C: mc},
		Web:               webOptions(ctl, metrics.ShmLoadFunc(region.Load())),
		Embeddings:        embeddingOptions(cfg),
	}, b, tok, log)
	if err != nil {
		return err
	}
	l, err := listen(cfg)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := ctl.Ready(ctx); err != nil {
		l.Close()
		return err
	}
	log.Info().Str("addr", l.Addr().String()).Uint32("epoch", b.Epoch()).Msg("serving HTTP")
	if err := srv.Run(ctx, l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ctx.Err()
}

// embeddingOptions decide whether /v1/embeddings is served, from the same
// resolution of --pooling against the model's files that infer makes
// (config.EmbeddingSpec), and otherwise say why for the 400.
func embeddingOptions(cfg *config.Config) apiserver.EmbeddingOptions {
	spec, err := cfg.EmbeddingSpec()
	switch {
	case err != nil:
		return apiserver.EmbeddingOptions{Unavailable: "embeddings are not served: " + err.Error()}
	case spec.Pooling == config.PoolingNone:
		return apiserver.EmbeddingOptions{Unavailable: "this model is not an embedding model (" + spec.Source +
			"); start the server with --pooling last, mean or cls to embed with it"}
	case cfg.Backend != config.BackendCPU:
		return apiserver.EmbeddingOptions{Unavailable: "embeddings are not served by the " + cfg.Backend + " backend (it returns no hidden states)"}
	case spec.Dim > cfg.MaxReqTotalLen:
		return apiserver.EmbeddingOptions{Unavailable: fmt.Sprintf("the model's %d-dimensional embeddings do not fit a request slot "+
			"(max_req_total_len %d floats); start the server with --max_req_total_len %d or more", spec.Dim, cfg.MaxReqTotalLen, spec.Dim)}
	}
	return apiserver.EmbeddingOptions{Dim: spec.Dim}
}

// listen takes the API socket the supervisor handed over (EnvListenFD),
// or listens on --host:--port itself.
func listen(cfg *config.Config) (net.Listener, error) {
	v := os.Getenv(config.EnvListenFD)
	if v == "" {
		return net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not a descriptor", config.EnvListenFD, v)
	}
	f := os.NewFile(uintptr(fd), "api-listener")
	defer f.Close() // FileListener dups it
	l, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the listening socket handed over as fd %d: %w", fd, err)
	}
	return l, nil
}

// loadChatTemplate reads --chat_template; "" keeps the model's own.
func loadChatTemplate(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return string(b), nil
}
