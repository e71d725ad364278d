package cuda

import (
	"fmt"

	"github.com/lightllm-go/lightllm/pkg/model"
)

// kernel names a kernel of kernels.cu; the device binds each to the
// instantiation for the model's weight and KV types (kernelName).
type kernel int

const (
	kEmbed kernel = iota
	kRopeTable
	kNorm
	kQKVPost
	kAttn
	kSwiGLU
	kFold
	kArgmax
	numKernels
)

// kernelName is the extern "C" name of k for weight type wt and KV type kvt.
func kernelName(k kernel, wt, kvt dtype) string {
	switch k {
	case kEmbed:
		return "embed_" + wt.String()
	case kRopeTable:
		return "rope_table"
	case kNorm:
		return "add_rmsnorm_" + wt.String()
	case kQKVPost:
		return "qkv_post_" + kvt.String()
	case kAttn:
		return "attention_kv" + kvt.String() + "_" + wt.String()
	case kSwiGLU:
		return "swiglu_" + wt.String()
	case kFold:
		return "fold_rows"
	case kArgmax:
		return "argmax_rows"
	}
	return fmt.Sprintf("kernel(%d)", int(k))
}

// device is what the forward pass needs from a GPU. The CUDA implementation
// (device_cuda.go) runs on the model's stream with its context current;
// tests drive the same code through an emulator. Pointers are device
// addresses; 0 is a null pointer.
type device interface {
	alloc(n int64, what string) (uint64, error)
	free(p uint64)
	// write copies host bytes (Go or mmap'd memory) to the device and
	// returns once they are there.
	write(dst uint64, src []byte) error
	// upload queues a copy of src to the device; src may be reused as soon
	// as upload returns.
	upload(dst uint64, src []int32) error
	zero(p uint64, n int64) error
	launch(k kernel, gx, gy, block, smem int, a *kargs) error
	// gemm: Y[rows x out] (f32) = X[rows x in] * W[out x in]^T, X and W of
	// type wt, all row-major.
	gemm(wt dtype, W uint64, out, in int, X uint64, rows int, Y uint64) error
	// readF32 and readI32 wait for the queued work, then copy to the host.
	readF32(dst []float32, src uint64) error
	readI32(dst []int32, src uint64) error
	sync() error
	memInfo() (free, total uint64, err error)
}

// core is the device-independent part of a GPU model: weights, KV pool and
// scratch as device addresses, and the forward pass as a sequence of device
// calls.
type core struct {
	cfg   model.Config
	opt   resolved
	dev   device
	w     devWeights
	kv    devKV
	sc    scratch
	maxKV int
	pl    plan
	args  kargs
	// host buffers for the results
	logitsHost []float32
	idsHost    []int32
}

type devLayer struct {
	qkv, wo, gu, down  uint64
	attnNorm, ffnNorm  uint64
	bias, qNorm, kNorm uint64 // 0 when the model has none
}

type devWeights struct {
	layers                 []devLayer
	embed, output, outNorm uint64
	freqFactor             uint64 // 0 when none
	neox                   bool
	ropeScale, freqScale   float32
	bytes                  int64 // device bytes of all weights
	matBytes               int64 // bytes a decode step reads (every matrix once)
}

// devKV is the KV pool: K and V, each [layers][slots][KVHeads*HeadDim].
type devKV struct {
	k, v   uint64
	slots  int
	handle *model.KV // what newKV returned; forward accepts only this one
	err    error     // a failed newKV, reported by the next forward
}

// scratch is the activation memory of a forward pass, sized for tok tokens,
// out output rows and meta int32s of batch metadata. In split mode every
// buffer a product reads or writes has twice the rows.
type scratch struct {
	tok, out, meta                           int
	x, xn, qkv, att, proj, gu, act, cos, sin uint64
	xo, logits, ids, metaDev                 uint64
}

// prepare sizes the scratch for r.MaxBatchTokens and profiles the KV
// capacity from what memory is left.
func (c *core) prepare() error {
	r := c.opt
	if err := c.ensureScratch(r.MaxBatchTokens, min(r.MaxBatchTokens, 256), 4*r.MaxBatchTokens+4096); err != nil {
		return err
	}
	free, total, err := c.dev.memInfo()
	if err != nil {
		return err
	}
	c.maxKV = kvCapacity(free, total, r.MemFraction, kvBytesPerToken(c.cfg, r.kvt))
	return nil
}

// ensureScratch grows the scratch to at least tok tokens, out output rows
// and meta metadata entries.
func (c *core) ensureScratch(tok, out, meta int) error {
	cfg, s := c.cfg, &c.sc
	S := int64(1)
	if c.opt.Split {
		S = 2
	}
	es := int64(c.opt.wt.size())
	H, qDim, kvDim, F := int64(cfg.Hidden), int64(cfg.Heads*cfg.HeadDim), int64(cfg.KVHeads*cfg.HeadDim), int64(cfg.FFN)
	if tok > s.tok {
		tok = (tok + 255) &^ 255
		T := int64(tok)
		bufs := []sized{
			{&s.x, T * H * 4}, {&s.xn, S * T * H * es}, {&s.qkv, S * T * (qDim + 2*kvDim) * 4},
			{&s.att, S * T * qDim * es}, {&s.proj, S * T * H * 4}, {&s.gu, S * T * 2 * F * 4},
			{&s.act, S * T * F * es}, {&s.cos, T * int64(cfg.HeadDim/2) * 4}, {&s.sin, T * int64(cfg.HeadDim/2) * 4},
		}
		if err := c.realloc(bufs, "activations"); err != nil {
			s.tok = 0
			return err
		}
		s.tok = tok
	}
	if out > s.out {
		O := int64(out)
		bufs := []sized{{&s.xo, S * O * H * es}, {&s.logits, S * O * int64(cfg.Vocab) * 4}, {&s.ids, O * 4}}
		if err := c.realloc(bufs, "logits"); err != nil {
			s.out = 0
			return err
		}
		s.out = out
	}
	if meta > s.meta {
		meta += meta / 4
		if err := c.realloc([]sized{{&s.metaDev, int64(meta) * 4}}, "batch metadata"); err != nil {
			s.meta = 0
			return err
		}
		s.meta = meta
	}
	return nil
}

type sized struct {
	p *uint64
	n int64
}

// realloc frees and re-allocates a set of buffers (all freed first, so
// growing does not need old and new at once).
func (c *core) realloc(bufs []sized, what string) error {
	for _, b := range bufs {
		c.dev.free(*b.p)
		*b.p = 0
	}
	for _, b := range bufs {
		p, err := c.dev.alloc(b.n, what)
		if err != nil {
			return err
		}
		*b.p = p
	}
	return nil
}

// newKV (re)allocates the KV pool with slots token slots and records h as
// the handle forward accepts. Failures are kept for forward to report.
func (c *core) newKV(slots int, h *model.KV) {
	c.kv.handle, c.kv.err = h, nil
	c.dev.free(c.kv.k)
	c.dev.free(c.kv.v)
	c.kv.k, c.kv.v, c.kv.slots = 0, 0, 0
	slots = max(slots, 0)
	if slots > c.maxKV {
		c.kv.err = fmt.Errorf("cuda: %d KV slots requested but the device holds %d (mem_fraction %v)", slots, c.maxKV, c.opt.MemFraction)
		return
	}
	half := kvBytesPerToken(c.cfg, c.opt.kvt) / 2 * int64(slots)
	var err error
	if c.kv.k, err = c.dev.alloc(half, "KV keys"); err == nil {
		c.kv.v, err = c.dev.alloc(half, "KV values")
	}
	// Zeroed like the CPU store, so a slot read before it is written holds
	// zeros, not NaN garbage.
	if err == nil {
		err = c.dev.zero(c.kv.k, half)
	}
	if err == nil {
		err = c.dev.zero(c.kv.v, half)
	}
	if err != nil {
		c.dev.free(c.kv.k)
		c.dev.free(c.kv.v)
		c.kv.k, c.kv.v = 0, 0
		c.kv.err = err
		return
	}
	c.kv.slots = slots
}
