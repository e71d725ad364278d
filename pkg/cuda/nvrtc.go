//go:build cuda

package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	_ "embed"
)

//go:embed kernels.cu
var kernelSource string

// kernelImage is compiled device code: a CUBIN for the device's own
// architecture, or PTX for the newest architecture NVRTC knows (the driver
// then compiles it for the device when the module is loaded).
type kernelImage struct {
	data  []byte // NUL-terminated when PTX
	arch  string // "sm_90" or "compute_90"
	nvrtc string // NVRTC version, "12.4"
}

func (l *libs) nvrtcVersion() string {
	var maj, min C.int
	if C.r_version(l.L, &maj, &min) != 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", int(maj), int(min))
}

func (l *libs) nvrtcArchs() []int {
	buf := make([]C.int, 128)
	n := int(C.r_archs(l.L, &buf[0], C.int(len(buf))))
	out := make([]int, n)
	for i := range out {
		out[i] = int(buf[i])
	}
	return out
}

// compileKernels compiles kernels.cu for compute capability cc, using and
// filling the on-disk cache (cacheDir "" disables it).
func (l *libs) compileKernels(cc int, cacheDir string) (*kernelImage, error) {
	arch, cubin, err := pickArch(cc, l.nvrtcArchs())
	if err != nil {
		return nil, err
	}
	if cubin && C.r_has_cubin(l.L) == 0 {
		// NVRTC before 11.1 gives PTX only.
		arch, cubin = fmt.Sprintf("compute_%d", cc), false
	}
	img := &kernelImage{arch: arch, nvrtc: l.nvrtcVersion()}
	opts := []string{"--gpu-architecture=" + arch}
	key := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%v\x00", kernelSource, img.nvrtc, opts)))
	var cachePath string
	if cacheDir != "" {
		ext := ".ptx"
		if cubin {
			ext = ".cubin"
		}
		cachePath = filepath.Join(cacheDir, hex.EncodeToString(key[:12])+"-"+arch+ext)
		if b, err := os.ReadFile(cachePath); err == nil && len(b) > 0 {
			img.data = b
			return img, nil
		}
	}
	if img.data, err = l.nvrtcCompile(opts, cubin); err != nil {
		return nil, err
	}
	if cachePath != "" {
		// A failed cache write only costs the next start a compile.
		if os.MkdirAll(cacheDir, 0o755) == nil {
			tmp := cachePath + ".tmp"
			if os.WriteFile(tmp, img.data, 0o644) == nil {
				_ = os.Rename(tmp, cachePath)
			}
		}
	}
	return img, nil
}

// nvrtcCompile runs NVRTC over kernels.cu and returns CUBIN or (NUL-
// terminated) PTX; compile errors come back with NVRTC's log.
func (l *libs) nvrtcCompile(opts []string, cubin bool) ([]byte, error) {
	src := C.CString(kernelSource)
	defer C.free(unsafe.Pointer(src))
	name := C.CString("kernels.cu")
	defer C.free(unsafe.Pointer(name))
	var prog unsafe.Pointer
	if r := C.r_create(l.L, &prog, src, name); r != 0 {
		return nil, fmt.Errorf("cuda: nvrtcCreateProgram: %s", C.GoString(C.r_error(l.L, r)))
	}
	defer C.r_destroy(l.L, &prog)
	copts := (*[64]*C.char)(C.calloc(64, C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(copts))
	for i, o := range opts {
		copts[i] = C.CString(o)
	}
	defer func() {
		for i := range opts {
			C.free(unsafe.Pointer(copts[i]))
		}
	}()
	r := C.r_compile(l.L, prog, C.int(len(opts)), &copts[0])
	var logSize C.size_t
	var log string
	if C.r_log_size(l.L, prog, &logSize) == 0 && logSize > 1 {
		buf := C.malloc(logSize)
		if C.r_log(l.L, prog, (*C.char)(buf)) == 0 {
			log = C.GoString((*C.char)(buf))
		}
		C.free(buf)
	}
	if r != 0 {
		return nil, fmt.Errorf("cuda: compiling kernels.cu (%v): %s\n%s", opts, C.GoString(C.r_error(l.L, r)), log)
	}
	var size C.size_t
	if cubin {
		if rc := C.r_cubin_size(l.L, prog, &size); rc != 0 {
			return nil, fmt.Errorf("cuda: nvrtcGetCUBINSize: %s", C.GoString(C.r_error(l.L, rc)))
		}
	} else if rc := C.r_ptx_size(l.L, prog, &size); rc != 0 {
		return nil, fmt.Errorf("cuda: nvrtcGetPTXSize: %s", C.GoString(C.r_error(l.L, rc)))
	}
	buf := C.malloc(size)
	defer C.free(buf)
	var rc C.int
	if cubin {
		rc = C.r_cubin(l.L, prog, (*C.char)(buf))
	} else {
		rc = C.r_ptx(l.L, prog, (*C.char)(buf))
	}
	if rc != 0 {
		return nil, fmt.Errorf("cuda: reading NVRTC output: %s", C.GoString(C.r_error(l.L, rc)))
	}
	return C.GoBytes(buf, C.int(size)), nil
}

// defaultCacheDir resolves Options.KernelCacheDir.
func defaultCacheDir(opt string) string {
	switch opt {
	case "off":
		return ""
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "lightllm", "cuda")
	}
	return opt
}
