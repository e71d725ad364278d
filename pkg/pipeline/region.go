package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/shm"
)

// maxTokenBytes bounds the per-slot part of the region (token and logprob
// arrays, text queue, top-logprob ring: shm.Sizes.PerSlotBytes): past it
// the waiting part of the slot table shrinks, never the running part.
const maxTokenBytes = 1 << 30

// textQueueBytes is each slot's text queue. The apiserver drains it as
// pieces arrive; a full queue only pauses that request's detokenization.
const textQueueBytes = 8192

// Extras pool bounds (shm.Sizes.ExtrasBytes): 16 KiB per slot on average,
// at least 4 MiB so that a few 100 KB JSON schemas always fit, at most
// 256 MiB. A request whose extras do not fit the free space now is refused
// as overloaded (429), like a full slot table.
const (
	extrasPerSlot = 16 << 10
	minExtras     = 4 << 20
	maxExtras     = 256 << 20
)

// Sizes are the dimensions of an instance's region, derived from the
// resolved configuration so that whichever role creates the region, every
// role agrees on them. The slot table holds every request in flight
// (LightLLM's request pool): running_max_req_size running plus
// max_waiting_reqs waiting, so a full table is the bounded waiting queue
// being full.
func Sizes(cfg *config.Config) shm.Sizes {
	base := shm.Sizes{MaxReqTotalLen: uint32(cfg.MaxReqTotalLen), TextQueueBytes: textQueueBytes}
	perSlot := int64(base.PerSlotBytes())
	slots := int64(cfg.RunningMaxReqSize) + int64(max(cfg.MaxWaitingReqs, 0))
	if perSlot > 0 && slots*perSlot > maxTokenBytes {
		slots = max(int64(cfg.RunningMaxReqSize), maxTokenBytes/perSlot)
	}
	slots = min(max(slots, 1), shm.MaxSlots)
	base.Slots = uint32(slots)
	base.ExtrasBytes = uint32(min(max(slots*extrasPerSlot, minExtras), maxExtras))
	return base
}

// RegionPath is the instance's region file.
func RegionPath(cfg *config.Config) string { return cfg.ShmPath(shm.StateFile) }

// OpenRegion maps the instance's region. With create set (the router, the
// first role of the request path to start) a missing region is created;
// otherwise it waits, until ctx ends, for a role that creates it. A region of
// other dimensions than the configuration asks for is an error: it belongs
// to a run with another configuration.
func OpenRegion(ctx context.Context, cfg *config.Config, create bool) (*shm.Region, error) {
	path := RegionPath(cfg)
	want := Sizes(cfg)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		r, err := shm.AttachFile(path)
		if err == nil {
			if got := r.Sizes(); got.Slots != want.Slots || got.MaxReqTotalLen != want.MaxReqTotalLen {
				r.Close()
				return nil, fmt.Errorf("shm region %s has %d slots of %d tokens, the configuration wants %d of %d (left by another run? stop it, or remove %s)",
					path, got.Slots, got.MaxReqTotalLen, want.Slots, want.MaxReqTotalLen, cfg.ShmDir)
			}
			return r, nil
		}
		if !errors.Is(err, shm.ErrNotFound) && !errors.Is(err, shm.ErrNotReady) {
			return nil, err
		}
		if create && errors.Is(err, shm.ErrNotFound) {
			r, cerr := createRegion(cfg, want)
			if cerr == nil {
				return r, nil
			}
			if !errors.Is(cerr, shm.ErrExists) {
				return nil, cerr
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for shm region %s: %w", path, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// createRegion creates the region in cfg.ShmDir, which shm names
// <base>/lightllm-<instance>.
func createRegion(cfg *config.Config, sizes shm.Sizes) (*shm.Region, error) {
	base, name := filepath.Split(filepath.Clean(cfg.ShmDir))
	if name != "lightllm-"+cfg.Instance {
		return nil, fmt.Errorf("shm dir %s: must be named lightllm-%s for the shm layout", cfg.ShmDir, cfg.Instance)
	}
	return shm.Create(shm.CreateOptions{BaseDir: base, Instance: cfg.Instance, Sizes: sizes})
}
