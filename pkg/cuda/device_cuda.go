//go:build cuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/rs/zerolog"
)

// cudaDevice implements device on one GPU: its primary context, one
// stream (kernels and cuBLAS both run on it, so work is ordered without
// events; a blocking stream, so it also waits for the synchronous copies
// and memsets of the legacy stream), the NVRTC-built module and pinned staging buffers. Its
// methods expect the calling goroutine to be locked to its OS thread with
// the context current (Model does that at every entry point).
type cudaDevice struct {
	l      *libs
	dev    C.CUdevice
	ctx    C.CUcontext
	stream C.CUstream
	blas   unsafe.Pointer
	module C.CUmodule
	fn     [numKernels]C.CUfunction
	info   DeviceInfo
	allocs map[uint64]int64 // live allocations and their sizes
	// Pinned host staging for the per-step transfers.
	hIn, hOut       unsafe.Pointer
	hInCap, hOutCap int
}

// openDevice loads the libraries, picks and enters the device, and builds
// the kernels for the model's types. On error whatever was opened is
// released.
func openDevice(r resolved, group, headDim int, log zerolog.Logger) (_ *cudaDevice, err error) {
	d := &cudaDevice{l: newLibs(), allocs: map[uint64]int64{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	l := d.l
	if err := l.loadDriver(); err != nil {
		return nil, err
	}
	if err := l.check(C.d_init(l.L), "cuInit"); err != nil {
		return nil, err
	}
	var ver C.int
	if err := l.check(C.d_driver_version(l.L, &ver), "cuDriverGetVersion"); err != nil {
		return nil, err
	}
	d.info.Driver = int(ver)
	if err := d.pick(r.DeviceUUID, r.Device); err != nil {
		return nil, err
	}
	if err := l.check(C.d_retain(l.L, &d.ctx, d.dev), "cuDevicePrimaryCtxRetain"); err != nil {
		return nil, err
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	if err := l.check(C.d_stream(l.L, &d.stream), "cuStreamCreate"); err != nil {
		return nil, err
	}
	if err := l.loadCublas(); err != nil {
		return nil, err
	}
	if err := blasCheck(C.b_create(l.L, &d.blas), "cublasCreate"); err != nil {
		return nil, err
	}
	if err := blasCheck(C.b_stream(l.L, d.blas, d.stream), "cublasSetStream"); err != nil {
		return nil, err
	}
	// CUBLAS_DEFAULT_MATH: no TF32 for f32 products (the f32 path is the
	// exact one); tensor cores still serve f16/bf16.
	if err := blasCheck(C.b_math(l.L, d.blas, 0), "cublasSetMathMode"); err != nil {
		return nil, err
	}
	if err := l.loadNVRTC(); err != nil {
		return nil, err
	}
	start := time.Now()
	img, err := l.compileKernels(d.info.CC, defaultCacheDir(r.KernelCacheDir))
	if err != nil {
		return nil, err
	}
	d.info.Kernels = fmt.Sprintf("%s (NVRTC %s)", img.arch, img.nvrtc)
	log.Debug().Str("kernels", d.info.Kernels).Stringer("took", time.Since(start)).Msg("cuda kernels ready")
	if err := l.check(C.d_module_load(l.L, &d.module, unsafe.Pointer(&img.data[0])), "cuModuleLoadData ("+img.arch+")"); err != nil {
		return nil, err
	}
	if err := d.bind(r.wt, r.kvt, group, headDim); err != nil {
		return nil, err
	}
	return d, nil
}

// pick selects the device by UUID (when given) or ordinal.
func (d *cudaDevice) pick(uuid string, ordinal int) error {
	l := d.l
	var n C.int
	if err := l.check(C.d_count(l.L, &n), "cuDeviceGetCount"); err != nil {
		return err
	}
	var seen []string
	for i := 0; i < int(n); i++ {
		var dev C.CUdevice
		if err := l.check(C.d_get(l.L, &dev, C.int(i)), "cuDeviceGet"); err != nil {
			return err
		}
		var raw [16]byte
		if err := l.check(C.d_uuid(l.L, (*C.uchar)(&raw[0]), dev), "cuDeviceGetUuid"); err != nil {
			return err
		}
		u := formatUUID("GPU", raw)
		seen = append(seen, u)
		if uuid != "" && !sameUUID(uuid, u) || uuid == "" && i != ordinal {
			continue
		}
		d.dev, d.info.Ordinal, d.info.UUID = dev, i, u
		return d.readInfo()
	}
	if uuid != "" {
		return fmt.Errorf("cuda: no device with UUID %s (devices: %v)", uuid, seen)
	}
	return fmt.Errorf("cuda: device %d requested but %d visible", ordinal, int(n))
}

func (d *cudaDevice) readInfo() error {
	l := d.l
	var name [256]C.char
	if err := l.check(C.d_name(l.L, &name[0], C.int(len(name)), d.dev), "cuDeviceGetName"); err != nil {
		return err
	}
	d.info.Name = C.GoString(&name[0])
	maj, err := d.attr(attrCCMajor)
	if err != nil {
		return err
	}
	mnr, err := d.attr(attrCCMinor)
	if err != nil {
		return err
	}
	d.info.CC = maj*10 + mnr
	if d.info.Multiprocessors, err = d.attr(attrMultiprocessors); err != nil {
		return err
	}
	var total C.size_t
	if err := l.check(C.d_total(l.L, &total, d.dev), "cuDeviceTotalMem"); err != nil {
		return err
	}
	d.info.TotalMem = uint64(total)
	if d.info.CC < 70 {
		return fmt.Errorf("cuda: %s is compute capability %d.%d; the backend needs 7.0 or newer (built for 8.0 and 9.0)",
			d.info.Name, maj, mnr)
	}
	return nil
}

func (d *cudaDevice) attr(a int) (int, error) {
	var v C.int
	err := d.l.check(C.d_attr(d.l.L, &v, C.int(a), d.dev), "cuDeviceGetAttribute")
	return int(v), err
}

// enter makes the context current on this OS thread.
func (d *cudaDevice) enter() error { return d.l.check(C.d_set_ctx(d.l.L, d.ctx), "cuCtxSetCurrent") }

// bind looks up the kernels for the model's types and raises the attention
// kernel's shared-memory limit when its largest tile needs more than 48 KiB.
func (d *cudaDevice) bind(wt, kvt dtype, group, headDim int) error {
	for k := kernel(0); k < numKernels; k++ {
		name := kernelName(k, wt, kvt)
		cs := C.CString(name)
		err := d.l.check(C.d_function(d.l.L, &d.fn[k], d.module, cs), "cuModuleGetFunction "+name)
		C.free(unsafe.Pointer(cs))
		if err != nil {
			return err
		}
	}
	smem := attnSharedBytes(headDim, kvt, rowsPerTile(group, attnWarps)*group)
	if smem <= 48<<10 {
		return nil
	}
	optin, err := d.attr(attrMaxSharedOptin)
	if err != nil {
		return err
	}
	if smem > optin {
		return fmt.Errorf("cuda: attention needs %d bytes of shared memory per block; %s allows %d", smem, d.info.Name, optin)
	}
	return d.l.check(C.d_func_attr(d.l.L, d.fn[kAttn], funcAttrMaxDynamicSmem, C.int(smem)), "cuFuncSetAttribute")
}

func (d *cudaDevice) alloc(n int64, what string) (uint64, error) {
	var p C.CUdeviceptr
	if err := d.l.check(C.d_alloc(d.l.L, &p, C.size_t(max(n, 1))), fmt.Sprintf("cuMemAlloc %s (%d MiB)", what, n>>20)); err != nil {
		return 0, err
	}
	d.allocs[uint64(p)] = n
	return uint64(p), nil
}

func (d *cudaDevice) free(p uint64) {
	if _, ok := d.allocs[p]; ok {
		C.d_free(d.l.L, C.CUdeviceptr(p))
		delete(d.allocs, p)
	}
}

func (d *cudaDevice) write(dst uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.l.check(C.d_htod(d.l.L, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))), "cuMemcpyHtoD")
}

// pinned grows a pinned staging buffer to n bytes.
func (d *cudaDevice) pinned(buf *unsafe.Pointer, capacity *int, n int) error {
	if n <= *capacity {
		return nil
	}
	if *buf != nil {
		// The previous transfer through it may still be in flight.
		if err := d.sync(); err != nil {
			return err
		}
		C.d_host_free(d.l.L, *buf)
		*buf, *capacity = nil, 0
	}
	n += n / 4
	if err := d.l.check(C.d_host_alloc(d.l.L, buf, C.size_t(n)), "cuMemHostAlloc"); err != nil {
		return err
	}
	*capacity = n
	return nil
}

func (d *cudaDevice) upload(dst uint64, src []int32) error {
	n := 4 * len(src)
	if n == 0 {
		return nil
	}
	// The staging buffer is reused by the next step's upload, which the
	// stream orders after this copy; the host write below must not overtake
	// a copy still reading it, hence the sync in forward's read (every step
	// ends with one).
	if err := d.pinned(&d.hIn, &d.hInCap, n); err != nil {
		return err
	}
	copy(unsafe.Slice((*int32)(d.hIn), len(src)), src)
	return d.l.check(C.d_htod_async(d.l.L, C.CUdeviceptr(dst), d.hIn, C.size_t(n), d.stream), "cuMemcpyHtoDAsync")
}

func (d *cudaDevice) zero(p uint64, n int64) error {
	if n <= 0 {
		return nil
	}
	return d.l.check(C.d_zero(d.l.L, C.CUdeviceptr(p), C.size_t(n)), "cuMemsetD8")
}

func (d *cudaDevice) launch(k kernel, gx, gy, block, smem int, a *kargs) error {
	if gx <= 0 || gy <= 0 {
		return nil
	}
	return d.l.check(C.d_launch(d.l.L, d.fn[k], C.uint(gx), C.uint(gy), C.uint(block), C.uint(smem), d.stream,
		(*C.uint64_t)(unsafe.Pointer(&a.v[0])), C.int(len(a.v))), "cuLaunchKernel")
}

func (d *cudaDevice) gemm(wt dtype, W uint64, out, in int, X uint64, rows int, Y uint64) error {
	if rows <= 0 {
		return nil
	}
	return blasCheck(C.b_gemm(d.l.L, d.blas, C.int(out), C.int(rows), C.int(in), C.CUdeviceptr(W), wt.blas(),
		C.CUdeviceptr(X), wt.blas(), C.CUdeviceptr(Y), dtF32.blas()), "GemmEx")
}

// read copies n bytes back through the pinned staging buffer.
func (d *cudaDevice) read(dst unsafe.Pointer, src uint64, n int) error {
	if n == 0 {
		return d.sync()
	}
	if err := d.pinned(&d.hOut, &d.hOutCap, n); err != nil {
		return err
	}
	if err := d.l.check(C.d_dtoh_async(d.l.L, d.hOut, C.CUdeviceptr(src), C.size_t(n), d.stream), "cuMemcpyDtoHAsync"); err != nil {
		return err
	}
	if err := d.sync(); err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(d.hOut), n))
	return nil
}

func (d *cudaDevice) readF32(dst []float32, src uint64) error {
	if len(dst) == 0 {
		return d.sync()
	}
	return d.read(unsafe.Pointer(&dst[0]), src, 4*len(dst))
}

func (d *cudaDevice) readI32(dst []int32, src uint64) error {
	if len(dst) == 0 {
		return d.sync()
	}
	return d.read(unsafe.Pointer(&dst[0]), src, 4*len(dst))
}

func (d *cudaDevice) sync() error {
	return d.l.check(C.d_sync(d.l.L, d.stream), "cuStreamSynchronize (errors of earlier kernels surface here)")
}

func (d *cudaDevice) memInfo() (free, total uint64, err error) {
	var f, t C.size_t
	err = d.l.check(C.d_meminfo(d.l.L, &f, &t), "cuMemGetInfo")
	return uint64(f), uint64(t), err
}

// close frees everything and releases the context; it runs on a locked
// thread.
func (d *cudaDevice) close() error {
	if d.l == nil || d.l.L == nil {
		return nil
	}
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	if d.ctx != nil {
		keep(d.enter())
		if d.stream != nil {
			keep(d.sync())
		}
		for p := range d.allocs {
			d.free(p)
		}
		for _, p := range []*unsafe.Pointer{&d.hIn, &d.hOut} {
			if *p != nil {
				C.d_host_free(d.l.L, *p)
				*p = nil
			}
		}
		if d.blas != nil {
			keep(blasCheck(C.b_destroy(d.l.L, d.blas), "cublasDestroy"))
			d.blas = nil
		}
		if d.module != nil {
			C.d_module_unload(d.l.L, d.module)
			d.module = nil
		}
		if d.stream != nil {
			C.d_stream_destroy(d.l.L, d.stream)
			d.stream = nil
		}
		keep(d.l.check(C.d_release(d.l.L, d.dev), "cuDevicePrimaryCtxRelease"))
		d.ctx = nil
	}
	d.l.free()
	return err
}
