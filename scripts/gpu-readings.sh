#!/usr/bin/env bash
# Prints the real NVML readings (memory, utilization, temperature, ECC/XID,
# compute processes) of every GPU on this machine, or of $GPU_UUID, through
# pkg/gpu — the same code the health role runs. Needs cgo and the NVIDIA
# driver; on a machine without one it reports "no NVML" and skips.
#
#   scripts/gpu-readings.sh                 # every GPU
#   GPU_UUID=GPU-1234... scripts/gpu-readings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null; then
	echo "gpu-readings: needs the Go toolchain" >&2
	exit 1
fi
CGO_ENABLED=1 exec go test -tags gpu -count=1 -run '^TestGPUReadings$' -v ./pkg/gpu/
