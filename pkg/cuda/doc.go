// Package cuda is the NVIDIA GPU backend of the engine: the same forward pass
// as pkg/model (llama, mistral, qwen2, qwen3; token-granular KV slots) run on
// one GPU, with cuBLAS for the matrix products and the kernels of kernels.cu
// for everything else (embedding gather, RMSNorm fused with the residual add,
// RoPE in both pair layouts, q/k/v bias and q/k norm, token-level paged
// attention over the KV pool for prefill and decode with GQA, SwiGLU,
// argmax).
//
// Build: the GPU code sits behind the `cuda` build tag and needs cgo; the
// default build compiles only the host-side planning in this package (batch
// validation and metadata packing, weight reading and conversion, KV sizing),
// which is plain Go and tested everywhere.
//
// Why cgo + dlopen + NVRTC rather than linking libcudart/libcublas and a
// static library of nvcc-built kernels:
//   - the binary links against nothing from CUDA: libcuda (the driver),
//     libcublas(Lt) and libnvrtc are opened at run time under whichever major
//     version the machine has (11, 12, 13). A binary built on a CPU machine
//     with Debian's CUDA 11.8 runs on a GPU machine that only has CUDA 13, which
//     is how scripts/gpu-check.sh gets a Go-built test binary onto a GPU box
//     without a Go toolchain there;
//   - `go build -tags cuda` needs only a C compiler: no nvcc step before the
//     Go build, no generated files, no per-architecture fat binaries to keep
//     in sync. NVRTC compiles the embedded kernels.cu at start-up for the exact
//     device (sm_80, sm_90, or newer through PTX), and the image is cached on
//     disk (Options.KernelCacheDir);
//   - kernel compile errors are still caught at build time: .ci/cuda-check.sh
//     compiles kernels.cu with nvcc for sm_80 and sm_90 and, with the cuda
//     tag, TestKernelsCompile compiles it through NVRTC, neither needing a GPU.
//
// purego would drop cgo too, but the launch path passes arrays of pointers to
// C, which is simpler and safer to do from a C shim.
//
// Numerics: weights are uploaded as f32, f16 or bf16 (quantized sources are
// dequantized on upload; Options.WeightType), activations that feed a matrix
// product take the weights' type, everything else (residual stream, norms,
// RoPE, softmax) is f32 with the CPU engine's rounding where it matters (RoPE
// angles and RMSNorm sums as ggml). Options.Split keeps a second, remainder
// copy of each 16-bit activation so each product sees ~16 mantissa bits for
// the same weight traffic (decode stays memory-bound): closer to the CPU
// engine's f32 activations at twice the prefill arithmetic. KV is f16 (default),
// bf16 or f32.
//
// KV memory: the pool lives on the device; Model.NewKV returns a zero-slot
// *model.KV that only names it (the engine passes it back to Forward), so
// pkg/engine drives a *Model through its Forwarder interface unchanged. The
// pool's capacity is profiled after the weights and scratch are in place:
// free memory minus (1 - MemFraction) of the total, as LightLLM profiles
// max_total_token_num.
//
// Structure and tests: core (core.go, corefwd.go, coreload.go; no build
// tag) is the whole host side — weight upload, scratch, batch metadata, the
// kernel/GEMM sequence with its arguments — written against a small device
// interface; device_cuda.go implements it with the driver, cuBLAS and the
// NVRTC-built module. The default `go test` runs core over a test double
// that re-implements each kernel in Go (emu_*_test.go) and checks every
// launch's arguments against kernels.cu's parameter lists, comparing logits
// with the CPU engine and running pkg/engine on top. What only a GPU can
// check (the CUDA code itself, cuBLAS, speed) is in gpu_test.go, driven by
// scripts/gpu-check.sh.
//
// Device choice: Options.DeviceUUID (as nvidia-smi -L and NVML print it) is
// matched against the UUID the CUDA driver reports for each device, so the
// device is the one NVML (pkg/gpu, the health role) watches whatever
// CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES say.
package cuda
