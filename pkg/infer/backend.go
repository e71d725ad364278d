package infer

import (
	"fmt"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
)

// loadLogEvery is how often infer logs the weights' load progress.
const loadLogEvery = 5 * time.Second

// NewExecutor loads the configured backend and builds the engine over it,
// with the KV pool sized from max_total_token_num. The returned func
// releases the model.
func NewExecutor(cfg *config.Config, log zerolog.Logger) (Executor, func(), error) {
	var (
		fwd     engine.Forwarder
		closeFn = func() {}
		loaded  = func(int64) {} // the CPU model's summary line, once the engine is built (its KV bytes)
	)
	switch cfg.Backend {
	case config.BackendCPU:
		// The model's default KV type (f16, as llama.cpp's CPU path) keeps
		// greedy output token-exact with llama.cpp; the engine replays a
		// resumed request's original chunks so a restart changes nothing.
		ll := newLoadLog(log, loadLogEvery)
		m, err := model.Load(cfg.ModelDir, model.LoadOptions{Threads: cfg.Threads, NoTokenizer: true, MmapWeights: cfg.MmapWeights, KVType: cfg.KVCacheDtype,
			Context: cfg.MaxReqTotalLen, Progress: ll.progress})
		if err != nil {
			return nil, nil, fmt.Errorf("load model: %w", err)
		}
		fwd, closeFn = m, func() { m.Close() }
		threads := cfg.Threads
		if threads <= 0 {
			threads = runtime.GOMAXPROCS(0)
		}
		loaded = func(kvBytes int64) {
			// The store's memory now: a windowed one's local part grows with use.
			ll.summary(kvBytes, cfg.MaxTotalTokenNum, threads, cfg.MmapWeights)
		}
	case config.BackendSynthetic:
		tok, err := model.LoadTokenizer(cfg.ModelDir)
		if err != nil {
			return nil, nil, fmt.Errorf("synthetic backend: %w", err)
		}
		step := time.Duration(cfg.SyntheticStepMs * float64(time.Millisecond))
		sm, err := NewSyntheticModel(tok.VocabSize(), cfg.MaxReqTotalLen, tok.BOS(), eosIDs(cfg.EosID), step)
		if err != nil {
			return nil, nil, err
		}
		log.Warn().Stringer("step", step).Msg("synthetic test backend: no model runs, tokens are a deterministic hash")
		fwd = sm
	case config.BackendCUDA:
		f, c, err := loadCUDA(cfg, log)
		if err != nil {
			return nil, nil, err
		}
		fwd, closeFn = f, c
	default:
		return nil, nil, fmt.Errorf("unknown backend %q (cpu|cuda|synthetic)", cfg.Backend)
	}
	if len(cfg.EosID) > 0 {
		fwd = eosOverride{Forwarder: fwd, eos: eosIDs(cfg.EosID)}
	}
	embed, err := embedOptions(cfg)
	if err != nil {
		// The apiserver refuses /v1/embeddings with the same error;
		// generation is unaffected.
		log.Warn().Err(err).Msg("embeddings are not served")
	}
	eng, err := engine.New(fwd, engine.Options{
		Embed:              embed,
		MaxTotalTokens:     cfg.MaxTotalTokenNum,
		BatchMaxTokens:     cfg.BatchMaxTokens,
		ChunkedPrefillSize: cfg.ChunkedPrefillSize,
		MaxReqTotalLen:     cfg.MaxReqTotalLen,
		MaxRunningReqs:     cfg.RunningMaxReqSize,
		DisablePromptCache: cfg.DisableDynamicPromptCache,
		PrefillWaitSteps:   prefillWaitSteps(cfg),
		Logger:             log,
	})
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	loaded(eng.Stats().KVBytes)
	mc := fwd.Config()
	log.Info().Str("backend", cfg.Backend).Str("arch", mc.Arch).Int("vocab", mc.Vocab).Int("max_total_tokens", cfg.MaxTotalTokenNum).
		Ints32("eos", mc.EOS).Msg("engine ready")
	return eng, closeFn, nil
}

// prefillWaitSteps is the engine's non-aggressive schedule: with
// --disable_aggressive_schedule, LightLLM's infer runs at least
// router_max_wait_tokens decode steps (at least one) between prefills
// while anything decodes; by default it prefills whatever is waiting.
func prefillWaitSteps(cfg *config.Config) int {
	if !cfg.DisableAggressiveSchedule {
		return 0
	}
	return max(1, cfg.RouterMaxWaitTokens)
}

// embedOptions is the engine's pooling for embedding requests, from
// --pooling and the model's files (config.EmbeddingSpec).
func embedOptions(cfg *config.Config) (engine.EmbedOptions, error) {
	spec, err := cfg.EmbeddingSpec()
	if err != nil {
		return engine.EmbedOptions{}, err
	}
	o := engine.EmbedOptions{Normalize: spec.Normalize}
	switch spec.Pooling {
	case config.PoolingLast:
		o.Pool = engine.PoolLast
	case config.PoolingMean:
		o.Pool = engine.PoolMean
	case config.PoolingCLS:
		o.Pool = engine.PoolCLS
	}
	return o, nil
}

func eosIDs(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}
