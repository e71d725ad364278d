#!/usr/bin/env bash
# CUDA section of CI: compiles and vets the CUDA backend (pkg/cuda) when the
# CUDA toolchain is present, and says plainly that it skipped when not. No
# GPU is needed or used: nothing here runs a kernel.
#   - nvcc compiles pkg/cuda/kernels.cu for sm_80 and sm_90 (with ptxas
#     warnings for spills and local memory treated as errors);
#   - `go build -tags cuda ./...` and `go vet -tags cuda ./pkg/cuda/...`;
#   - the cuda-tagged tests that need no GPU: NVRTC compiles the embedded
#     kernels (the path Load takes), Load fails cleanly without a device, and
#     the emulated forward pass matches the CPU engine (the GPU tests skip).
# The default build and `go test ./...` need none of this; scripts/test.sh
# covers them.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvcc >/dev/null 2>&1; then
	echo "cuda-check: SKIPPED: nvcc not found (scripts/install-cuda-toolchain.sh installs it); the CUDA backend was not compiled"
	exit 0
fi
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
	echo "cuda-check: SKIPPED: no C compiler for cgo; the CUDA backend was not compiled"
	exit 0
fi
echo "cuda-check: $(nvcc --version | tail -n1)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in 80 90; do
	echo "cuda-check: nvcc kernels.cu for sm_$arch"
	out=$(nvcc -arch=sm_$arch -cubin -Xptxas -warn-spills,-warn-lmem-usage -o "$tmp/k$arch.cubin" pkg/cuda/kernels.cu 2>&1)
	# rope_table keeps a small stack frame for double-precision sin/cos of
	# large arguments: the only local memory allowed.
	bad=$(printf '%s\n' "$out" | grep -Ei 'warning|error' | grep -v "function 'rope_table'" || true)
	if [[ -n $bad ]]; then
		printf '%s\n' "$out"
		echo "cuda-check: FAILED: nvcc reported problems for sm_$arch"
		exit 1
	fi
done

export CGO_ENABLED=1
echo "cuda-check: go build -tags cuda ./..."
go build -tags cuda ./...
echo "cuda-check: go vet -tags cuda ./pkg/cuda/..."
go vet -tags cuda ./pkg/cuda/...
echo "cuda-check: go test -tags cuda ./pkg/cuda (no GPU: GPU tests skip)"
go test -tags cuda -count=1 -timeout 10m ./pkg/cuda
echo "cuda-check: passed"
