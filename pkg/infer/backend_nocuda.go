//go:build !cuda

package infer

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/engine"
)

// loadCUDA is unavailable in the default build: the CUDA backend needs
// `-tags cuda` (see pkg/cuda).
func loadCUDA(cfg *config.Config, _ zerolog.Logger) (engine.Forwarder, func(), error) {
	return nil, nil, fmt.Errorf("backend %s: this binary was built without CUDA support (build with -tags cuda)", cfg.Backend)
}
