//go:build cuda

package cuda

import (
	"fmt"
	"runtime"
	"time"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// DeviceInfo describes the device a Model runs on.
type DeviceInfo struct {
	Ordinal         int    // CUDA ordinal (after CUDA_VISIBLE_DEVICES)
	UUID            string // as NVML prints it: "GPU-…"
	Name            string
	CC              int // compute capability, major*10+minor
	Multiprocessors int
	TotalMem        uint64
	Driver          int    // CUDA driver API version, e.g. 12080
	Kernels         string // what NVRTC built: "sm_90 (NVRTC 12.8)"
}

// Model is a model loaded onto one GPU. It implements pkg/engine's
// Forwarder (Config, NewKV, Forward). Like *model.Model it is not safe for
// concurrent use: one goroutine (the engine) drives it.
type Model struct {
	c      core
	d      *cudaDevice
	cpu    *model.Model // makes the zero-slot KV handles
	closed bool
}

// Load puts m's weights (its model.Weights view) on the GPU chosen by o
// and prepares its kernels. m stays the caller's to close; the *Model
// needs it until its own Close. Loading m with MmapWeights avoids a
// private host copy of weights that are only read here once.
func Load(m *model.Model, o Options) (*Model, error) {
	cfg := m.Config()
	r, err := o.resolve(cfg)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d, err := openDevice(r, cfg.Heads/cfg.KVHeads, cfg.HeadDim, r.Log)
	if err != nil {
		return nil, err
	}
	g := &Model{c: core{cfg: cfg, opt: r, dev: d}, d: d, cpu: m}
	if err := g.load(m.Weights()); err != nil {
		g.closed = true
		d.close()
		return nil, err
	}
	r.Log.Info().Str("device", d.info.Name).Str("uuid", d.info.UUID).Str("kernels", d.info.Kernels).
		Str("weights", r.wt.String()).Str("kv", r.kvt.String()).Bool("split", r.Split).
		Int64("weight_mib", g.c.w.bytes>>20).Int("max_kv_slots", g.c.maxKV).Msg("cuda model loaded")
	return g, nil
}

func (g *Model) load(w model.Weights) error {
	start := time.Now()
	if err := g.c.loadWeights(w); err != nil {
		return err
	}
	g.c.opt.Log.Debug().Stringer("took", time.Since(start)).Int64("bytes", g.c.w.bytes).Msg("cuda weights uploaded")
	return g.c.prepare()
}

// enter locks the goroutine to its thread and makes the context current:
// CUDA contexts are per thread, goroutines move between threads. The
// returned func undoes the lock.
func (g *Model) enter() (func(), error) {
	if g.closed {
		return nil, fmt.Errorf("cuda: model is closed")
	}
	runtime.LockOSThread()
	if err := g.d.enter(); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// Config returns the model's architecture.
func (g *Model) Config() model.Config { return g.c.cfg }

// Info describes the device.
func (g *Model) Info() DeviceInfo { return g.d.info }

// MaxKVSlots is the number of KV token slots the device can hold, profiled
// at Load from free memory and MemFraction: the infer role's
// max_total_token_num when it is not set explicitly (or its upper bound).
func (g *Model) MaxKVSlots() int { return g.c.maxKV }

// KVBytesPerToken is the device KV memory of one token slot.
func (g *Model) KVBytesPerToken() int { return int(kvBytesPerToken(g.c.cfg, g.c.opt.kvt)) }

// WeightBytes is the device memory of the weights, and decode what one
// decode step reads of them (every matrix once): the numerator of the
// memory-bandwidth roofline.
func (g *Model) WeightBytes() (total, decode int64) { return g.c.w.bytes, g.c.w.matBytes }

// NewKV allocates the device KV pool with slots token slots (freeing any
// earlier pool) and returns the handle Forward expects: a zero-slot
// *model.KV, the storage being on the device. An allocation failure (more
// slots than MaxKVSlots, or out of memory) is reported by Forward, since the
// engine's Forwarder.NewKV has no error result.
func (g *Model) NewKV(slots int) *model.KV {
	h := g.cpu.NewKV(0)
	done, err := g.enter()
	if err != nil {
		g.c.kv.handle, g.c.kv.err = h, err
		return h
	}
	defer done()
	g.c.newKV(slots, h)
	return h
}

// Forward runs one step, as (*model.Model).Forward: it writes the new
// tokens' K/V into the device pool and fills logits[i] (len >= Vocab) for
// every Seqs[i] with WantLogits. kv must be the handle of the latest NewKV.
func (g *Model) Forward(b *model.Batch, kv *model.KV, logits [][]float32) error {
	done, err := g.enter()
	if err != nil {
		return err
	}
	defer done()
	return g.c.forward(b, kv, logits, nil)
}

// ForwardArgmax is Forward for greedy decoding: ids[i] receives the argmax
// token of Seqs[i] (WantLogits), computed on the device, so only the ids
// cross to the host.
func (g *Model) ForwardArgmax(b *model.Batch, kv *model.KV, ids []int32) error {
	done, err := g.enter()
	if err != nil {
		return err
	}
	defer done()
	if ids == nil {
		ids = []int32{} // non-nil selects the argmax path
	}
	return g.c.forward(b, kv, nil, ids)
}

// Close frees the device memory and releases the device. The *model.Model
// given to Load is not closed.
func (g *Model) Close() error {
	if g.closed {
		return nil
	}
	g.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return g.d.close()
}
