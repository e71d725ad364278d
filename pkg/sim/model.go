package sim

import (
	"fmt"
	"math"
)

// StepModel is a linear model of one engine step's wall time. The defaults
// are in the range of a 7B model on one datacenter GPU: a decode step of ~35
// requests over 120k KV tokens takes ~33 ms, a prefill runs ~12k tokens/s.
type StepModel struct {
	DecodeBaseS       float64 // fixed cost of a decode step
	DecodePerReqS     float64 // per request in the batch
	DecodePerKVTokenS float64 // per KV token read by attention
	PrefillBaseS      float64 // fixed cost of a prefill step
	PrefillPerTokenS  float64 // per prompt token computed
}

// DefaultStepModel returns the default model.
func DefaultStepModel() StepModel {
	return StepModel{
		DecodeBaseS:       0.015,
		DecodePerReqS:     0.0002,
		DecodePerKVTokenS: 1e-7,
		PrefillBaseS:      0.010,
		PrefillPerTokenS:  8e-5,
	}
}

func (m StepModel) decode(reqs, kvTokens int) float64 {
	return m.DecodeBaseS + m.DecodePerReqS*float64(reqs) + m.DecodePerKVTokenS*float64(kvTokens)
}

func (m StepModel) prefill(tokens int) float64 {
	return m.PrefillBaseS + m.PrefillPerTokenS*float64(tokens)
}

func (m StepModel) validate() error {
	for _, v := range []float64{m.DecodeBaseS, m.DecodePerReqS, m.DecodePerKVTokenS, m.PrefillBaseS, m.PrefillPerTokenS} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("sim: step model %+v has a negative or non-finite cost", m)
		}
	}
	if m.DecodeBaseS+m.DecodePerReqS <= 0 {
		return fmt.Errorf("sim: step model %+v: a decode step must take time", m)
	}
	return nil
}

// SLA is the per-request service objective goodput is measured against.
type SLA struct {
	TTFTS   float64 `json:"ttft_s"`    // time to first token
	MaxITLS float64 `json:"max_itl_s"` // largest gap between consecutive tokens
}

// DefaultSLA is the paper artifact's: TTFT ≤ 10 s, every inter-token gap ≤ 1.5 s.
func DefaultSLA() SLA { return SLA{TTFTS: 10, MaxITLS: 1.5} }
