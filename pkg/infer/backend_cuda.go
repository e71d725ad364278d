//go:build cuda

package infer

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/cuda"
	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
)

// loadCUDA loads the model on the GPU pinned by --gpu_uuid and caps the KV
// pool at what the device can hold under --mem_fraction. The CPU model is
// kept open: pkg/cuda reads its configuration and weights from it.
func loadCUDA(cfg *config.Config, log zerolog.Logger) (engine.Forwarder, func(), error) {
	// The weights stay in the file mapping: they are only read once, to
	// upload them.
	m, err := model.Load(cfg.ModelDir, model.LoadOptions{Threads: cfg.Threads, NoTokenizer: true, MmapWeights: true})
	if err != nil {
		return nil, nil, fmt.Errorf("load model: %w", err)
	}
	g, err := cuda.Load(m, cuda.Options{DeviceUUID: cfg.GPUUUID, MemFraction: cfg.MemFraction, Log: log})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("cuda backend: %w", err)
	}
	if slots := g.MaxKVSlots(); slots > 0 && cfg.MaxTotalTokenNum > slots {
		log.Warn().Int("requested", cfg.MaxTotalTokenNum).Int("device_slots", slots).Msg("max_total_token_num capped to what the GPU holds")
		cfg.MaxTotalTokenNum = slots
	}
	return g, func() { g.Close(); m.Close() }, nil
}
