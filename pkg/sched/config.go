package sched

import (
	"fmt"
	"math"
)

// Config holds the router settings that shape admission, named after
// LightLLM's flags.
type Config struct {
	// MaxTotalTokens is the KV capacity the router schedules against
	// (max_total_token_num minus any fixed KV).
	MaxTotalTokens int
	// RunningMaxReqSize caps running plus newly admitted requests (256).
	RunningMaxReqSize int
	// BatchMaxTokens is infer's per-step prefill budget; the router lets a
	// step's admissions plus running requests' next-step needs reach twice it.
	BatchMaxTokens int
	// ChunkedPrefillSize is the prefill chunk (BatchMaxTokens/2).
	ChunkedPrefillSize int
	// RouterMaxWaitTokens is the number of decode steps infer runs between
	// prefills; it enters the estimate of a prefilling request's finish (1).
	RouterMaxWaitTokens int
	// RouterTokenRatio is the KV usage above which the EMA estimate gives way
	// to max_new_tokens (0.85).
	RouterTokenRatio float64
	// AddedOutputLen is LightLLM's ADDED_OUTPUT_LEN safety margin (16).
	AddedOutputLen int
	// RecvMin and RecvMax bound the groups taken from the intake per step:
	// RecvMin, growing ×1.3 per full intake up to RecvMax (64, 256).
	RecvMin, RecvMax int
	// LoadRefreshS is how often (caller seconds) the estimated peak of an
	// unchanged running set is recomputed for the token-load gauges (6).
	LoadRefreshS float64
}

// DefaultConfig returns LightLLM HEAD's defaults for a KV of maxTotalTokens.
func DefaultConfig(maxTotalTokens int) Config {
	return Config{
		MaxTotalTokens:      maxTotalTokens,
		RunningMaxReqSize:   256,
		BatchMaxTokens:      16384,
		ChunkedPrefillSize:  8192,
		RouterMaxWaitTokens: 1,
		RouterTokenRatio:    0.85,
		AddedOutputLen:      16,
		RecvMin:             64,
		RecvMax:             256,
		LoadRefreshS:        6,
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	bad := func(f string, v any) error { return fmt.Errorf("%w: %s = %v", ErrBadConfig, f, v) }
	switch {
	case c.MaxTotalTokens < 1:
		return bad("max_total_tokens", c.MaxTotalTokens)
	case c.RunningMaxReqSize < 1:
		return bad("running_max_req_size", c.RunningMaxReqSize)
	case c.BatchMaxTokens < 1:
		return bad("batch_max_tokens", c.BatchMaxTokens)
	case c.ChunkedPrefillSize < 1:
		return bad("chunked_prefill_size", c.ChunkedPrefillSize)
	case c.RouterMaxWaitTokens < 0:
		return bad("router_max_wait_tokens", c.RouterMaxWaitTokens)
	case math.IsNaN(c.RouterTokenRatio) || c.RouterTokenRatio < 0:
		return bad("router_token_ratio", c.RouterTokenRatio)
	case c.AddedOutputLen < 0:
		return bad("added_output_len", c.AddedOutputLen)
	case c.RecvMin < 1 || c.RecvMax < c.RecvMin:
		return bad("recv_min/recv_max", fmt.Sprintf("%d/%d", c.RecvMin, c.RecvMax))
	case math.IsNaN(c.LoadRefreshS) || c.LoadRefreshS < 0:
		return bad("load_refresh_s", c.LoadRefreshS)
	}
	return nil
}
