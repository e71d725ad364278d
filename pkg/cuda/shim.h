// shim.h: the CUDA driver, cuBLAS and NVRTC entry points pkg/cuda uses,
// resolved at run time with dlsym, and the thin static wrappers cgo calls
// (cgo cannot call through function pointers). Every Go file of the package
// that uses cgo includes it; all functions are static, so each cgo
// translation unit has its own copies and no global C symbol can clash with
// another package's.
#ifndef LIGHTLLM_CUDA_SHIM_H
#define LIGHTLLM_CUDA_SHIM_H
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <stddef.h>

// The few CUDA driver, cuBLAS and NVRTC entry points the backend uses,
// declared here (not from the toolkit's headers) and resolved with dlsym, so
// the build needs no CUDA installation and the binary runs with whichever
// CUDA major version the machine has. Enum values are ABI-stable constants
// from cuda.h, cublas_api.h and library_types.h.
typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned char bytes[16]; } CUuuid;

typedef struct {
	CUresult (*cuInit)(unsigned);
	CUresult (*cuDriverGetVersion)(int*);
	CUresult (*cuDeviceGetCount)(int*);
	CUresult (*cuDeviceGet)(CUdevice*, int);
	CUresult (*cuDeviceGetName)(char*, int, CUdevice);
	CUresult (*cuDeviceGetUuid)(CUuuid*, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
	CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuStreamCreate)(CUstream*, unsigned);
	CUresult (*cuStreamDestroy)(CUstream);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuMemGetInfo)(size_t*, size_t*);
	CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
	CUresult (*cuMemFreeHost)(void*);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
	CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
	CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
	CUresult (*cuModuleLoadData)(CUmodule*, const void*);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
	CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                           unsigned, CUstream, void**, void**);
	CUresult (*cuGetErrorString)(CUresult, const char**);

	int (*cublasCreate)(void**);
	int (*cublasDestroy)(void*);
	int (*cublasSetStream)(void*, CUstream);
	int (*cublasSetMathMode)(void*, int);
	int (*cublasGemmEx)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int,
	                    int, const void*, void*, int, int, int, int);

	int (*nvrtcVersion)(int*, int*);
	int (*nvrtcGetNumSupportedArchs)(int*);
	int (*nvrtcGetSupportedArchs)(int*);
	int (*nvrtcCreateProgram)(void**, const char*, const char*, int, const char* const*, const char* const*);
	int (*nvrtcCompileProgram)(void*, int, const char* const*);
	int (*nvrtcGetProgramLogSize)(void*, size_t*);
	int (*nvrtcGetProgramLog)(void*, char*);
	int (*nvrtcGetCUBINSize)(void*, size_t*);
	int (*nvrtcGetCUBIN)(void*, char*);
	int (*nvrtcGetPTXSize)(void*, size_t*);
	int (*nvrtcGetPTX)(void*, char*);
	int (*nvrtcDestroyProgram)(void**);
	const char* (*nvrtcGetErrorString)(int);
} cudaLib;

// sym resolves the first of up to three names; it returns the missing
// (first) name, or NULL.
static inline const char* sym(void* h, void** dst, const char* a, const char* b, const char* c) {
	*dst = dlsym(h, a);
	if (!*dst && b) *dst = dlsym(h, b);
	if (!*dst && c) *dst = dlsym(h, c);
	return *dst ? NULL : a;
}
#define SYM(h, f, a, b) do { const char* m = sym(h, (void**)&L->f, a, b, NULL); if (m) return m; } while (0)

static inline const char* bind_driver(cudaLib* L, void* h) {
	SYM(h, cuInit, "cuInit", NULL);
	SYM(h, cuDriverGetVersion, "cuDriverGetVersion", NULL);
	SYM(h, cuDeviceGetCount, "cuDeviceGetCount", NULL);
	SYM(h, cuDeviceGet, "cuDeviceGet", NULL);
	SYM(h, cuDeviceGetName, "cuDeviceGetName", NULL);
	SYM(h, cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	SYM(h, cuDeviceGetAttribute, "cuDeviceGetAttribute", NULL);
	SYM(h, cuDeviceTotalMem, "cuDeviceTotalMem_v2", NULL);
	SYM(h, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
	SYM(h, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	SYM(h, cuCtxSetCurrent, "cuCtxSetCurrent", NULL);
	SYM(h, cuStreamCreate, "cuStreamCreate", NULL);
	SYM(h, cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy");
	SYM(h, cuStreamSynchronize, "cuStreamSynchronize", NULL);
	SYM(h, cuMemAlloc, "cuMemAlloc_v2", NULL);
	SYM(h, cuMemFree, "cuMemFree_v2", NULL);
	SYM(h, cuMemGetInfo, "cuMemGetInfo_v2", NULL);
	SYM(h, cuMemHostAlloc, "cuMemHostAlloc", NULL);
	SYM(h, cuMemFreeHost, "cuMemFreeHost", NULL);
	SYM(h, cuMemcpyHtoD, "cuMemcpyHtoD_v2", NULL);
	SYM(h, cuMemsetD8, "cuMemsetD8_v2", NULL);
	SYM(h, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL);
	SYM(h, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL);
	SYM(h, cuModuleLoadData, "cuModuleLoadData", NULL);
	SYM(h, cuModuleUnload, "cuModuleUnload", NULL);
	SYM(h, cuModuleGetFunction, "cuModuleGetFunction", NULL);
	SYM(h, cuFuncSetAttribute, "cuFuncSetAttribute", NULL);
	SYM(h, cuLaunchKernel, "cuLaunchKernel", NULL);
	SYM(h, cuGetErrorString, "cuGetErrorString", NULL);
	return NULL;
}

static inline const char* bind_cublas(cudaLib* L, void* h) {
	SYM(h, cublasCreate, "cublasCreate_v2", NULL);
	SYM(h, cublasDestroy, "cublasDestroy_v2", NULL);
	SYM(h, cublasSetStream, "cublasSetStream_v2", NULL);
	SYM(h, cublasSetMathMode, "cublasSetMathMode", NULL);
	SYM(h, cublasGemmEx, "cublasGemmEx", NULL);
	return NULL;
}

static inline const char* bind_nvrtc(cudaLib* L, void* h) {
	SYM(h, nvrtcVersion, "nvrtcVersion", NULL);
	SYM(h, nvrtcCreateProgram, "nvrtcCreateProgram", NULL);
	SYM(h, nvrtcCompileProgram, "nvrtcCompileProgram", NULL);
	SYM(h, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", NULL);
	SYM(h, nvrtcGetProgramLog, "nvrtcGetProgramLog", NULL);
	SYM(h, nvrtcGetPTXSize, "nvrtcGetPTXSize", NULL);
	SYM(h, nvrtcGetPTX, "nvrtcGetPTX", NULL);
	SYM(h, nvrtcDestroyProgram, "nvrtcDestroyProgram", NULL);
	SYM(h, nvrtcGetErrorString, "nvrtcGetErrorString", NULL);
	// Optional (NVRTC 11.1+ / 11.2+): CUBIN output and the list of archs.
	L->nvrtcGetCUBINSize = dlsym(h, "nvrtcGetCUBINSize");
	L->nvrtcGetCUBIN = dlsym(h, "nvrtcGetCUBIN");
	L->nvrtcGetNumSupportedArchs = dlsym(h, "nvrtcGetNumSupportedArchs");
	L->nvrtcGetSupportedArchs = dlsym(h, "nvrtcGetSupportedArchs");
	return NULL;
}

static inline void* lib_open(const char* path) { return dlopen(path, RTLD_NOW | RTLD_GLOBAL); }
static inline const char* lib_error(void) { const char* e = dlerror(); return e ? e : "unknown dlopen error"; }

// Thin wrappers: cgo cannot call through function pointers itself.
static inline CUresult d_init(cudaLib* L) { return L->cuInit(0); }
static inline CUresult d_driver_version(cudaLib* L, int* v) { return L->cuDriverGetVersion(v); }
static inline CUresult d_count(cudaLib* L, int* n) { return L->cuDeviceGetCount(n); }
static inline CUresult d_get(cudaLib* L, CUdevice* d, int i) { return L->cuDeviceGet(d, i); }
static inline CUresult d_name(cudaLib* L, char* s, int n, CUdevice d) { return L->cuDeviceGetName(s, n, d); }
static inline CUresult d_uuid(cudaLib* L, unsigned char* out, CUdevice d) {
	CUuuid u;
	CUresult r = L->cuDeviceGetUuid(&u, d);
	for (int i = 0; i < 16; i++) out[i] = u.bytes[i];
	return r;
}
static inline CUresult d_attr(cudaLib* L, int* v, int a, CUdevice d) { return L->cuDeviceGetAttribute(v, a, d); }
static inline CUresult d_total(cudaLib* L, size_t* v, CUdevice d) { return L->cuDeviceTotalMem(v, d); }
static inline CUresult d_retain(cudaLib* L, CUcontext* c, CUdevice d) { return L->cuDevicePrimaryCtxRetain(c, d); }
static inline CUresult d_release(cudaLib* L, CUdevice d) { return L->cuDevicePrimaryCtxRelease(d); }
static inline CUresult d_set_ctx(cudaLib* L, CUcontext c) { return L->cuCtxSetCurrent(c); }
// CU_STREAM_DEFAULT (0): a blocking stream, so the synchronous memset and
// copies (issued to the legacy stream: weight uploads, KV zeroing) are
// ordered before the kernels that follow them on this stream.
static inline CUresult d_stream(cudaLib* L, CUstream* s) { return L->cuStreamCreate(s, 0); }
static inline CUresult d_stream_destroy(cudaLib* L, CUstream s) { return L->cuStreamDestroy(s); }
static inline CUresult d_sync(cudaLib* L, CUstream s) { return L->cuStreamSynchronize(s); }
static inline CUresult d_alloc(cudaLib* L, CUdeviceptr* p, size_t n) { return L->cuMemAlloc(p, n); }
static inline CUresult d_free(cudaLib* L, CUdeviceptr p) { return L->cuMemFree(p); }
static inline CUresult d_meminfo(cudaLib* L, size_t* f, size_t* t) { return L->cuMemGetInfo(f, t); }
static inline CUresult d_host_alloc(cudaLib* L, void** p, size_t n) { return L->cuMemHostAlloc(p, n, 0); }
static inline CUresult d_host_free(cudaLib* L, void* p) { return L->cuMemFreeHost(p); }
static inline CUresult d_htod(cudaLib* L, CUdeviceptr d, const void* h, size_t n) { return L->cuMemcpyHtoD(d, h, n); }
static inline CUresult d_zero(cudaLib* L, CUdeviceptr d, size_t n) { return L->cuMemsetD8(d, 0, n); }
static inline CUresult d_htod_async(cudaLib* L, CUdeviceptr d, const void* h, size_t n, CUstream s) {
	return L->cuMemcpyHtoDAsync(d, h, n, s);
}
static inline CUresult d_dtoh_async(cudaLib* L, void* h, CUdeviceptr d, size_t n, CUstream s) {
	return L->cuMemcpyDtoHAsync(h, d, n, s);
}
static inline CUresult d_module_load(cudaLib* L, CUmodule* m, const void* img) { return L->cuModuleLoadData(m, img); }
static inline CUresult d_module_unload(cudaLib* L, CUmodule m) { return L->cuModuleUnload(m); }
static inline CUresult d_function(cudaLib* L, CUfunction* f, CUmodule m, const char* name) {
	return L->cuModuleGetFunction(f, m, name);
}
static inline CUresult d_func_attr(cudaLib* L, CUfunction f, int a, int v) { return L->cuFuncSetAttribute(f, a, v); }
static inline const char* d_error(cudaLib* L, CUresult r) {
	const char* s = NULL;
	if (L->cuGetErrorString == NULL || L->cuGetErrorString(r, &s) != 0 || s == NULL) return "unknown CUDA error";
	return s;
}

// d_launch passes each parameter as a pointer to its 64-bit word in vals;
// the driver reads the parameter's own size from there (little-endian).
static inline CUresult d_launch(cudaLib* L, CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned smem,
                         CUstream s, uint64_t* vals, int n) {
	void* args[32];
	if (n > 32) return 1; // CUDA_ERROR_INVALID_VALUE
	for (int i = 0; i < n; i++) args[i] = &vals[i];
	return L->cuLaunchKernel(f, gx, gy, 1, bx, 1, 1, smem, s, args, NULL);
}

static inline int b_create(cudaLib* L, void** h) { return L->cublasCreate(h); }
static inline int b_destroy(cudaLib* L, void* h) { return L->cublasDestroy(h); }
static inline int b_stream(cudaLib* L, void* h, CUstream s) { return L->cublasSetStream(h, s); }
static inline int b_math(cudaLib* L, void* h, int mode) { return L->cublasSetMathMode(h, mode); }

// b_gemm computes row-major Y[n x m] = X[n x k] * W[m x k]^T: in cuBLAS's
// column-major terms C(m x n) = W^T(m x k) * X(k x n), with W and X both
// stored k-contiguous. f32 accumulation (CUBLAS_COMPUTE_32F = 68), default
// algorithm (-1); alpha 1, beta 0.
static inline int b_gemm(cudaLib* L, void* h, int m, int n, int k, CUdeviceptr W, int wt, CUdeviceptr X, int xt,
                  CUdeviceptr Y, int yt) {
	const float alpha = 1.0f, beta = 0.0f;
	return L->cublasGemmEx(h, 1, 0, m, n, k, &alpha, (const void*)W, wt, k, (const void*)X, xt, k, &beta,
	                       (void*)Y, yt, m, 68, -1);
}

static inline int r_version(cudaLib* L, int* major, int* minor) { return L->nvrtcVersion(major, minor); }
static inline int r_archs(cudaLib* L, int* out, int cap) {
	int n = 0;
	if (!L->nvrtcGetNumSupportedArchs || !L->nvrtcGetSupportedArchs) return 0;
	if (L->nvrtcGetNumSupportedArchs(&n) != 0 || n > cap) return 0;
	if (L->nvrtcGetSupportedArchs(out) != 0) return 0;
	return n;
}
static inline int r_create(cudaLib* L, void** p, const char* src, const char* name) {
	return L->nvrtcCreateProgram(p, src, name, 0, NULL, NULL);
}
static inline int r_compile(cudaLib* L, void* p, int n, const char* const* opts) { return L->nvrtcCompileProgram(p, n, opts); }
static inline int r_log_size(cudaLib* L, void* p, size_t* n) { return L->nvrtcGetProgramLogSize(p, n); }
static inline int r_log(cudaLib* L, void* p, char* s) { return L->nvrtcGetProgramLog(p, s); }
static inline int r_has_cubin(cudaLib* L) { return L->nvrtcGetCUBIN != NULL && L->nvrtcGetCUBINSize != NULL; }
static inline int r_cubin_size(cudaLib* L, void* p, size_t* n) { return L->nvrtcGetCUBINSize(p, n); }
static inline int r_cubin(cudaLib* L, void* p, char* s) { return L->nvrtcGetCUBIN(p, s); }
static inline int r_ptx_size(cudaLib* L, void* p, size_t* n) { return L->nvrtcGetPTXSize(p, n); }
static inline int r_ptx(cudaLib* L, void* p, char* s) { return L->nvrtcGetPTX(p, s); }
static inline int r_destroy(cudaLib* L, void** p) { return L->nvrtcDestroyProgram(p); }
static inline const char* r_error(cudaLib* L, int r) { return L->nvrtcGetErrorString(r); }

#endif
