//go:build cuda

package cuda

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lightllm-go/lightllm/pkg/engine"
	"github.com/lightllm-go/lightllm/pkg/model"
)

// The GPU model drives pkg/engine unchanged.
var _ engine.Forwarder = (*Model)(nil)

// TestKernelsCompile builds kernels.cu through NVRTC, the path Load takes,
// for the two target architectures. It needs libnvrtc but no GPU.
func TestKernelsCompile(t *testing.T) {
	l := newLibs()
	defer l.free()
	if err := l.loadNVRTC(); err != nil {
		t.Skipf("no NVRTC here (%v): install the toolkit (scripts/install-cuda-toolchain.sh)", err)
	}
	sigs, err := kernelSignatures(kernelSource)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVRTC %s, archs %v", l.nvrtcVersion(), l.nvrtcArchs())
	cache := t.TempDir()
	for _, cc := range []int{80, 90} {
		img, err := l.compileKernels(cc, cache)
		if err != nil {
			t.Fatalf("sm_%d: %v", cc, err)
		}
		t.Logf("sm_%d: %s, %d bytes", cc, img.arch, len(img.data))
		for name := range sigs {
			if !bytes.Contains(img.data, []byte(name)) {
				t.Errorf("sm_%d image lacks kernel %s", cc, name)
			}
		}
		// The second build comes from the cache.
		entries, _ := os.ReadDir(cache)
		again, err := l.compileKernels(cc, cache)
		if err != nil || !bytes.Equal(again.data, img.data) {
			t.Errorf("sm_%d: cached image differs (%v)", cc, err)
		}
		if after, _ := os.ReadDir(cache); len(after) != len(entries) {
			t.Errorf("cache grew on a hit: %d -> %d files", len(entries), len(after))
		}
	}
}

// TestLibrariesBind resolves every driver, cuBLAS and NVRTC entry point the
// backend uses from the libraries installed here (no GPU needed to dlsym).
func TestLibrariesBind(t *testing.T) {
	l := newLibs()
	defer l.free()
	for name, load := range map[string]func() error{"driver": l.loadDriver, "cuBLAS": l.loadCublas, "NVRTC": l.loadNVRTC} {
		if err := load(); err != nil {
			if strings.Contains(err.Error(), "cannot load") {
				t.Logf("%s not installed here: %v", name, err)
				continue
			}
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestLoadFailsCleanly: on a machine without a usable GPU Load returns an
// error (no panic, nothing left behind).
func TestLoadFailsCleanly(t *testing.T) {
	path := storiesPath(t, "stories260K-f32.gguf")
	m, err := model.Load(path, model.LoadOptions{Threads: 1, NoTokenizer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := Load(m, Options{DeviceUUID: "GPU-00000000-0000-0000-0000-000000000000", KernelCacheDir: "off"})
	if err == nil {
		g.Close()
		t.Fatal("Load found a device with the all-zero UUID")
	}
	t.Logf("Load: %v (CUDA error: %v)", err, errors.Is(err, ErrCUDA))
}
