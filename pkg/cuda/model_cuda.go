//go:build cuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

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
	Kernels         string // what NVRTC built: "sm_90 (NVRTC 11.8)"
}

// Model is a model loaded onto one GPU. It implements pkg/engine's
// Forwarder (Config, NewKV, Forward). Like *model.Model it is not safe for
// concurrent use: one goroutine (the engine) drives it.
type Model struct {
	cfg  model.Config
	cpu  *model.Model // makes the zero-slot KV handles
	opt  resolved
	info DeviceInfo

	l      *libs
	dev    C.CUdevice
	ctx    C.CUcontext
	stream C.CUstream
	blas   unsafe.Pointer
	module C.CUmodule
	k      kernelSet

	w      devWeights
	kv     devKV
	sc     scratch
	maxKV  int
	allocs map[uint64]int64 // live device allocations and their sizes

	pl     plan
	args   kargs
	closed bool
}

type kernelSet struct {
	embed, ropeTable, norm, qkvPost, attn, swiglu, fold, argmax C.CUfunction
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
	uploadSeconds          float64
}

// devKV is the KV pool: K and V, each [layers][slots][KVHeads*HeadDim].
type devKV struct {
	k, v   uint64
	slots  int
	handle *model.KV // what NewKV returned; Forward accepts only this one
	err    error     // a failed NewKV, reported by the next Forward
}

// Load puts m's weights on the GPU chosen by o and prepares its kernels.
// path is the file or directory m was loaded from (the weights are read
// from there: pkg/model does not export its tensors). m stays the caller's
// to close; the *Model needs it until its own Close.
func Load(m *model.Model, path string, o Options) (*Model, error) {
	cfg := m.Config()
	r, err := o.resolve(cfg)
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := &Model{cfg: cfg, cpu: m, opt: r, l: newLibs(), allocs: map[uint64]int64{}}
	ok := false
	defer func() {
		if !ok {
			g.release()
		}
	}()
	if err := g.open(); err != nil {
		return nil, err
	}
	wf, err := openWeights(path, cfg)
	if err != nil {
		return nil, err
	}
	err = g.upload(wf)
	if cerr := wf.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("cuda: closing %s: %w", path, cerr)
	}
	if err != nil {
		return nil, err
	}
	if err := g.ensureScratch(r.MaxBatchTokens, min(r.MaxBatchTokens, 256), 4*r.MaxBatchTokens+4096); err != nil {
		return nil, err
	}
	var free, total C.size_t
	if err := g.l.check(C.d_meminfo(g.l.L, &free, &total), "cuMemGetInfo"); err != nil {
		return nil, err
	}
	g.maxKV = kvCapacity(uint64(free), uint64(total), r.MemFraction, kvBytesPerToken(cfg, r.kvt))
	r.Log.Info().Str("device", g.info.Name).Str("uuid", g.info.UUID).Str("kernels", g.info.Kernels).
		Str("weights", r.wt.String()).Str("kv", r.kvt.String()).Bool("split", r.Split).
		Int64("weight_mib", g.w.bytes>>20).Float64("upload_s", g.w.uploadSeconds).
		Int("max_kv_slots", g.maxKV).Msg("cuda model loaded")
	ok = true
	return g, nil
}

// open loads the libraries, picks and enters the device, and builds the
// kernels.
func (g *Model) open() error {
	l := g.l
	if err := l.loadDriver(); err != nil {
		return err
	}
	if err := l.check(C.d_init(l.L), "cuInit"); err != nil {
		return err
	}
	var ver C.int
	if err := l.check(C.d_driver_version(l.L, &ver), "cuDriverGetVersion"); err != nil {
		return err
	}
	g.info.Driver = int(ver)
	if err := g.pickDevice(); err != nil {
		return err
	}
	if err := l.check(C.d_retain(l.L, &g.ctx, g.dev), "cuDevicePrimaryCtxRetain"); err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	if err := l.check(C.d_stream(l.L, &g.stream), "cuStreamCreate"); err != nil {
		return err
	}
	if err := l.loadCublas(); err != nil {
		return err
	}
	if err := blasCheck(C.b_create(l.L, &g.blas), "cublasCreate"); err != nil {
		return err
	}
	if err := blasCheck(C.b_stream(l.L, g.blas, g.stream), "cublasSetStream"); err != nil {
		return err
	}
	// CUBLAS_DEFAULT_MATH: no TF32 for f32 products (the f32 path is the
	// exact one); tensor cores still serve f16/bf16.
	if err := blasCheck(C.b_math(l.L, g.blas, 0), "cublasSetMathMode"); err != nil {
		return err
	}
	if err := l.loadNVRTC(); err != nil {
		return err
	}
	start := time.Now()
	img, err := l.compileKernels(g.info.CC, defaultCacheDir(g.opt.KernelCacheDir))
	if err != nil {
		return err
	}
	g.info.Kernels = fmt.Sprintf("%s (NVRTC %s)", img.arch, img.nvrtc)
	g.opt.Log.Debug().Str("kernels", g.info.Kernels).Dur("took", time.Since(start)).Msg("cuda kernels ready")
	if err := l.check(C.d_module_load(l.L, &g.module, unsafe.Pointer(&img.data[0])), "cuModuleLoadData ("+img.arch+")"); err != nil {
		return err
	}
	return g.bindKernels()
}

// pickDevice selects the device by UUID or ordinal and reads its facts.
func (g *Model) pickDevice() error {
	l := g.l
	var n C.int
	if err := l.check(C.d_count(l.L, &n), "cuDeviceGetCount"); err != nil {
		return err
	}
	var seen []string
	for i := 0; i < int(n); i++ {
		var d C.CUdevice
		if err := l.check(C.d_get(l.L, &d, C.int(i)), "cuDeviceGet"); err != nil {
			return err
		}
		var raw [16]byte
		if err := l.check(C.d_uuid(l.L, (*C.uchar)(&raw[0]), d), "cuDeviceGetUuid"); err != nil {
			return err
		}
		uuid := formatUUID("GPU", raw)
		seen = append(seen, uuid)
		if g.opt.DeviceUUID != "" && !sameUUID(g.opt.DeviceUUID, uuid) || g.opt.DeviceUUID == "" && i != g.opt.Device {
			continue
		}
		g.dev, g.info.Ordinal, g.info.UUID = d, i, uuid
		return g.readInfo()
	}
	if g.opt.DeviceUUID != "" {
		return fmt.Errorf("cuda: no device with UUID %s (devices: %v)", g.opt.DeviceUUID, seen)
	}
	return fmt.Errorf("cuda: device %d requested but %d visible", g.opt.Device, int(n))
}

func (g *Model) readInfo() error {
	l := g.l
	var name [256]C.char
	if err := l.check(C.d_name(l.L, &name[0], C.int(len(name)), g.dev), "cuDeviceGetName"); err != nil {
		return err
	}
	g.info.Name = C.GoString(&name[0])
	attr := func(a int) (int, error) {
		var v C.int
		err := l.check(C.d_attr(l.L, &v, C.int(a), g.dev), "cuDeviceGetAttribute")
		return int(v), err
	}
	maj, err := attr(attrCCMajor)
	if err != nil {
		return err
	}
	mnr, err := attr(attrCCMinor)
	if err != nil {
		return err
	}
	g.info.CC = maj*10 + mnr
	if g.info.Multiprocessors, err = attr(attrMultiprocessors); err != nil {
		return err
	}
	var total C.size_t
	if err := l.check(C.d_total(l.L, &total, g.dev), "cuDeviceTotalMem"); err != nil {
		return err
	}
	g.info.TotalMem = uint64(total)
	if g.info.CC < 70 {
		return fmt.Errorf("cuda: %s is compute capability %d.%d; the backend needs 7.0 or newer (built for 8.0 and 9.0)",
			g.info.Name, maj, mnr)
	}
	return nil
}

// enter makes the model's context current on this OS thread. Every entry
// point locks its goroutine to the thread first: CUDA contexts are per
// thread and goroutines move between threads.
func (g *Model) enter() error {
	return g.l.check(C.d_set_ctx(g.l.L, g.ctx), "cuCtxSetCurrent")
}

func (g *Model) bindKernels() error {
	wt, kvt := g.opt.wt.String(), g.opt.kvt.String()
	fns := []struct {
		dst  *C.CUfunction
		name string
	}{
		{&g.k.embed, "embed_" + wt}, {&g.k.ropeTable, "rope_table"}, {&g.k.norm, "add_rmsnorm_" + wt},
		{&g.k.qkvPost, "qkv_post_" + kvt}, {&g.k.attn, "attention_kv" + kvt + "_" + wt},
		{&g.k.swiglu, "swiglu_" + wt}, {&g.k.fold, "fold_rows"}, {&g.k.argmax, "argmax_rows"},
	}
	for _, f := range fns {
		cs := C.CString(f.name)
		err := g.l.check(C.d_function(g.l.L, f.dst, g.module, cs), "cuModuleGetFunction "+f.name)
		C.free(unsafe.Pointer(cs))
		if err != nil {
			return err
		}
	}
	group := g.cfg.Heads / g.cfg.KVHeads
	warps := rowsPerTile(group, attnWarps) * group
	smem := attnSharedBytes(g.cfg.HeadDim, g.opt.kvt, warps)
	if smem > 48<<10 {
		var optin C.int
		if err := g.l.check(C.d_attr(g.l.L, &optin, attrMaxSharedOptin, g.dev), "cuDeviceGetAttribute"); err != nil {
			return err
		}
		if smem > int(optin) {
			return fmt.Errorf("cuda: attention needs %d bytes of shared memory per block; %s allows %d", smem, g.info.Name, int(optin))
		}
		if err := g.l.check(C.d_func_attr(g.l.L, g.k.attn, funcAttrMaxDynamicSmem, C.int(smem)), "cuFuncSetAttribute"); err != nil {
			return err
		}
	}
	return nil
}

// alloc takes n bytes of device memory.
func (g *Model) alloc(n int64, what string) (uint64, error) {
	var p C.CUdeviceptr
	if err := g.l.check(C.d_alloc(g.l.L, &p, C.size_t(max(n, 1))), fmt.Sprintf("cuMemAlloc %s (%d MiB)", what, n>>20)); err != nil {
		return 0, err
	}
	g.allocs[uint64(p)] = n
	return uint64(p), nil
}

func (g *Model) free(p uint64) {
	if p == 0 {
		return
	}
	if _, ok := g.allocs[p]; ok {
		C.d_free(g.l.L, C.CUdeviceptr(p))
		delete(g.allocs, p)
	}
}

// htod copies host bytes (Go or mmap'd memory) to the device, synchronously.
func (g *Model) htod(dst uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return g.l.check(C.d_htod(g.l.L, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))), "cuMemcpyHtoD")
}

// Config returns the model's architecture.
func (g *Model) Config() model.Config { return g.cfg }

// Info describes the device.
func (g *Model) Info() DeviceInfo { return g.info }

// MaxKVSlots is the number of KV token slots the device can hold, profiled
// at Load from free memory and MemFraction: the infer role's
// max_total_token_num when it is not set explicitly (or its upper bound).
func (g *Model) MaxKVSlots() int { return g.maxKV }

// KVBytesPerToken is the device KV memory of one token slot.
func (g *Model) KVBytesPerToken() int { return int(kvBytesPerToken(g.cfg, g.opt.kvt)) }

// WeightBytes is the device memory of the weights, and DecodeBytes what one
// decode step reads of them (every matrix once, the embedding rows aside):
// the numerator of the memory-bandwidth roofline.
func (g *Model) WeightBytes() (total, decode int64) { return g.w.bytes, g.w.matBytes }

// NewKV allocates the device KV pool with slots token slots (freeing any
// earlier pool) and returns the handle Forward expects. The handle is a
// zero-slot *model.KV: the storage is on the device. An allocation failure
// (more slots than MaxKVSlots, or out of memory) is reported by Forward,
// since the engine's Forwarder.NewKV has no error result.
func (g *Model) NewKV(slots int) *model.KV {
	h := g.cpu.NewKV(0)
	g.kv.handle, g.kv.err = h, nil
	if g.closed {
		g.kv.err = fmt.Errorf("cuda: NewKV on a closed model")
		return h
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.enter(); err != nil {
		g.kv.err = err
		return h
	}
	g.free(g.kv.k)
	g.free(g.kv.v)
	g.kv.k, g.kv.v, g.kv.slots = 0, 0, 0
	slots = max(slots, 0)
	if slots > g.maxKV {
		g.kv.err = fmt.Errorf("cuda: %d KV slots requested but the device holds %d (mem_fraction %v)", slots, g.maxKV, g.opt.MemFraction)
		return h
	}
	half := kvBytesPerToken(g.cfg, g.opt.kvt) / 2 * int64(slots)
	var err error
	if g.kv.k, err = g.alloc(half, "KV keys"); err == nil {
		g.kv.v, err = g.alloc(half, "KV values")
	}
	if err == nil {
		// Zeroed like the CPU store, so a slot read before it is written
		// holds zeros, not NaN garbage.
		err = g.l.check(C.d_zero(g.l.L, C.CUdeviceptr(g.kv.k), C.size_t(max(half, 1))), "cuMemsetD8")
		if err == nil {
			err = g.l.check(C.d_zero(g.l.L, C.CUdeviceptr(g.kv.v), C.size_t(max(half, 1))), "cuMemsetD8")
		}
	}
	if err != nil {
		g.free(g.kv.k)
		g.free(g.kv.v)
		g.kv.k, g.kv.v = 0, 0
		g.kv.err = err
		return h
	}
	g.kv.slots = slots
	return h
}

// Close frees the device memory and releases the device. The *model.Model
// given to Load is not closed.
func (g *Model) Close() error {
	if g.closed {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return g.release()
}

// release undoes whatever open/Load got done; it runs on a locked thread.
func (g *Model) release() error {
	g.closed = true
	if g.l == nil || g.l.L == nil {
		return nil
	}
	var err error
	if g.ctx != nil {
		err = g.enter()
		if g.stream != nil {
			if e := g.l.check(C.d_sync(g.l.L, g.stream), "cuStreamSynchronize"); err == nil {
				err = e
			}
		}
		for p := range g.allocs {
			g.free(p)
		}
		g.sc.freeHost(g.l)
		if g.blas != nil {
			if e := blasCheck(C.b_destroy(g.l.L, g.blas), "cublasDestroy"); err == nil {
				err = e
			}
			g.blas = nil
		}
		if g.module != nil {
			C.d_module_unload(g.l.L, g.module)
			g.module = nil
		}
		if g.stream != nil {
			C.d_stream_destroy(g.l.L, g.stream)
			g.stream = nil
		}
		if e := g.l.check(C.d_release(g.l.L, g.dev), "cuDevicePrimaryCtxRelease"); err == nil {
			err = e
		}
		g.ctx = nil
	}
	g.l.free()
	return err
}
