//go:build cuda

package cuda

/*
#cgo LDFLAGS: -ldl
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"
)

// Device attribute and function attribute numbers (cuda.h).
const (
	attrMultiprocessors    = 16
	attrCCMajor            = 75
	attrCCMinor            = 76
	attrMaxSharedOptin     = 97
	funcAttrMaxDynamicSmem = 8
)

// blas is the cudaDataType (library_types.h) of a device dtype.
func (d dtype) blas() C.int { return [...]C.int{dtF32: 0, dtF16: 2, dtBF16: 14}[d] }

// libs is the dynamically loaded CUDA libraries. The function table is C
// memory, so C code may keep pointers to it.
type libs struct {
	L *C.cudaLib
}

// libCandidates lists where a library may be: the loader's own search first
// (LD_LIBRARY_PATH, ld.so.cache), then the usual toolkit directories.
func libCandidates(sonames []string) []string {
	var dirs []string
	if d := os.Getenv("LIGHTLLM_CUDA_LIBDIR"); d != "" {
		dirs = append(dirs, filepath.SplitList(d)...)
	}
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/cuda/targets/sbsa-linux/lib", "/usr/local/nvidia/lib64")
	var out []string
	for _, s := range sonames {
		for _, d := range dirs {
			out = append(out, filepath.Join(d, s))
		}
		out = append(out, s)
	}
	return out
}

// openLib dlopens the first loadable candidate.
func openLib(what string, sonames []string) (unsafe.Pointer, string, error) {
	var errs []string
	for _, p := range libCandidates(sonames) {
		if strings.ContainsRune(p, '/') {
			if _, err := os.Stat(p); err != nil {
				continue
			}
		}
		cs := C.CString(p)
		h := C.lib_open(cs)
		C.free(unsafe.Pointer(cs))
		if h != nil {
			return h, p, nil
		}
		errs = append(errs, C.GoString(C.lib_error()))
	}
	if len(errs) == 0 {
		errs = append(errs, "not found")
	}
	return nil, "", fmt.Errorf("cuda: cannot load %s (tried %s): %s", what, strings.Join(sonames, ", "), strings.Join(errs, "; "))
}

// Library names, newest major version first: a library newer than the
// driver supports fails at its first call with a clear status, while an
// older one still works. Index i of the cuBLAS and cuBLASLt lists is the
// same release.
func driverNames() []string { return []string{"libcuda.so.1", "libcuda.so"} }
func cublasNames() []string {
	return []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
}
func cublasLtNames() []string {
	return []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}
}
func nvrtcNames() []string {
	return []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
}

func newLibs() *libs {
	return &libs{L: (*C.cudaLib)(C.calloc(1, C.size_t(unsafe.Sizeof(C.cudaLib{}))))}
}

// free releases the function table (the libraries stay mapped: unloading
// the driver under a live process is not safe).
func (l *libs) free() {
	if l.L != nil {
		C.free(unsafe.Pointer(l.L))
		l.L = nil
	}
}

func (l *libs) loadDriver() error {
	h, path, err := openLib("the CUDA driver", driverNames())
	if err != nil {
		return err
	}
	if m := C.bind_driver(l.L, h); m != nil {
		return fmt.Errorf("cuda: %s lacks %s (driver too old)", path, C.GoString(m))
	}
	return nil
}

// loadCublas loads cuBLAS and its Lt library from the same directory (so a
// toolkit directory outside the loader's path still resolves cuBLAS's own
// dependency on cublasLt).
func (l *libs) loadCublas() error {
	var lastErr error
	names, ltNames := cublasNames(), cublasLtNames()
	for i := range names {
		if _, _, err := openLib("cuBLASLt", ltNames[i:i+1]); err != nil {
			lastErr = err
			continue
		}
		h, path, err := openLib("cuBLAS", names[i:i+1])
		if err != nil {
			lastErr = err
			continue
		}
		if m := C.bind_cublas(l.L, h); m != nil {
			return fmt.Errorf("cuda: %s lacks %s", path, C.GoString(m))
		}
		return nil
	}
	return fmt.Errorf("cuda: cannot load cuBLAS (%s): %w", strings.Join(names, ", "), lastErr)
}

func (l *libs) loadNVRTC() error {
	// NVRTC dlopens its builtins library by name at compile time; loading
	// it first from the toolkit directories makes that work when they are
	// not on the loader's path.
	for _, p := range libCandidates([]string{"libnvrtc-builtins.so.*"}) {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			for _, f := range m {
				cs := C.CString(f)
				C.lib_open(cs)
				C.free(unsafe.Pointer(cs))
			}
			break
		}
	}
	h, path, err := openLib("NVRTC", nvrtcNames())
	if err != nil {
		return err
	}
	if m := C.bind_nvrtc(l.L, h); m != nil {
		return fmt.Errorf("cuda: %s lacks %s", path, C.GoString(m))
	}
	return nil
}

// ErrCUDA is wrapped by every failure the CUDA driver or cuBLAS reports.
var ErrCUDA = errors.New("cuda")

func (l *libs) check(r C.CUresult, what string) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s (error %d)", ErrCUDA, what, C.GoString(C.d_error(l.L, r)), int(r))
}

func blasCheck(r C.int, what string) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%w: cuBLAS %s: status %d", ErrCUDA, what, int(r))
}
