#!/usr/bin/env bash
# GPU check of the CUDA backend (pkg/cuda), for a machine with an NVIDIA GPU
# (written for one H200; under 8 minutes there). It
#   1. builds the cuda-tagged test binary of pkg/cuda and the cuda-tagged
#      lightllm binary (needs Go and a C compiler, no CUDA toolkit);
#   2. generates a random-weight 1B-class Llama with `lightllm gen-model`
#      (hidden 2048, 16 layers, 32 heads / 8 KV heads, FFN 8192, vocab 32000,
#      bf16, tied embeddings: ~1.0B parameters);
#   3. runs the GPU tests: stories260K greedy vs llama.cpp's golden tokens,
#      GPU vs CPU on stories260K (GGUF and HF), generated qwen2/qwen3 and the
#      1B model (argmax agreement and max relative logit error), and prefill /
#      decode throughput at batch 1, 16, 64 with the share of the H200's
#      4.8 TB/s memory-bandwidth roofline reached in decode;
#   4. appends the results, dated and with the machine, to docs/performance.md.
#
# Usage:
#   scripts/gpu-check.sh               build, then run (a GPU machine with Go)
#   scripts/gpu-check.sh --build-only  build into $GPU_CHECK_DIR and copy the
#                                      stories260K files next to the binaries
#                                      (on a machine without a GPU, to carry)
#   scripts/gpu-check.sh --prebuilt    run what --build-only left in
#                                      $GPU_CHECK_DIR (a GPU machine without Go)
# The binaries open libcuda, libcublas(Lt) and libnvrtc at run time, any of
# CUDA 11, 12 or 13, so a build made on a CPU machine runs on the GPU machine.
#
# Environment:
#   GPU_CHECK_DIR          build/carry directory (default tmp/gpu-check, git-ignored)
#   LIGHTLLM_TEST_MODELS   directory holding stories260K/ (default: the copy in
#                          $GPU_CHECK_DIR/models, else ../shared/models)
#   GPU_CHECK_TIMEOUT      seconds for the test run (default 420)
#   LIGHTLLM_CUDA_LIBDIR   extra directories to find the CUDA libraries in
#   OUT                    when set (the device tool's output folder), the
#                          report and the log are copied there too
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

dir=${GPU_CHECK_DIR:-tmp/gpu-check}
mode=all
case "${1:-}" in
--build-only) mode=build ;;
--prebuilt) mode=run ;;
"") ;;
*)
	sed -n '2,40p' "$0" >&2
	exit 2
	;;
esac

log() { printf 'gpu-check: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

models_dir() {
	if [[ -n ${LIGHTLLM_TEST_MODELS:-} ]]; then
		echo "$LIGHTLLM_TEST_MODELS"
	elif [[ -d $dir/models/stories260K ]]; then
		echo "$root/$dir/models"
	else
		echo "$root/../shared/models"
	fi
}

build() {
	command -v go >/dev/null || die "no Go toolchain here: build elsewhere with --build-only and run with --prebuilt"
	mkdir -p "$dir"
	log "building the cuda-tagged test binary and lightllm"
	CGO_ENABLED=1 go test -c -tags cuda -o "$dir/cuda.test" ./pkg/cuda
	CGO_ENABLED=1 go build -tags cuda -o "$dir/lightllm" ./cmd/lightllm
	local src
	src=$(models_dir)
	if [[ -d $src/stories260K && $src != "$root/$dir/models" ]]; then
		rm -rf "$dir/models/stories260K"
		mkdir -p "$dir/models/stories260K"
		cp -r "$src/stories260K/stories260K-f32.gguf" "$src/stories260K/hf" \
			"$src/stories260K/golden_greedy_llamacpp.json" "$dir/models/stories260K/"
		chmod -R u+w "$dir/models"
	fi
	log "built into $dir ($(du -sh "$dir" | cut -f1))"
}

# cuda_libdirs lists directories that may hold libcublas/libnvrtc: the
# toolkit's, and the NVIDIA wheels of the machine's Python (PyTorch images).
cuda_libdirs() {
	local d
	for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
		[[ -d $d ]] && printf '%s\n' "$d"
	done
	if command -v python3 >/dev/null; then
		python3 - <<'PY' 2>/dev/null || true
import glob, os, site
for sp in site.getsitepackages():
    for d in sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib"))):
        print(d)
PY
	fi
}

run() {
	[[ -x $dir/cuda.test && -x $dir/lightllm ]] || die "no binaries in $dir: run with --build-only first (or without arguments)"
	command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this is not a GPU machine"
	local models work report logf gpu host now status=0
	models=$(models_dir)
	[[ -f $models/stories260K/stories260K-f32.gguf ]] || die "stories260K not found under $models"
	local extra
	extra=$(cuda_libdirs | paste -sd: -)
	export LIGHTLLM_CUDA_LIBDIR=${LIGHTLLM_CUDA_LIBDIR:+$LIGHTLLM_CUDA_LIBDIR:}$extra
	export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$extra
	work=$(mktemp -d /tmp/gpu-check.XXXXXX)
	trap 'rm -rf "$work"' EXIT
	report=$work/report.md
	logf=$root/$dir/gpu-check.log
	gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n1)
	host="$(nproc) CPUs, $(uname -m)"
	now=$(date -u '+%Y-%m-%d %H:%M UTC')
	log "GPU: $gpu; models: $models"

	log "generating the 1B model"
	local t0=$SECONDS
	"$dir/lightllm" gen-model --arch llama --hidden 2048 --layers 16 --heads 32 --kv_heads 8 --ffn 8192 \
		--vocab 32000 --dtype bf16 --tied --seed 7 --out "$work/llama1b-bf16.gguf"
	log "generated in $((SECONDS - t0))s"

	{
		echo
		echo "## CUDA backend check, $now"
		echo
		echo "Machine: $gpu; $host. Build: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown) (scripts/gpu-check.sh)."
		echo "Agreement rows compare the GPU with the CPU engine on the same batches (greedy tokens fed from the CPU);"
		echo "max rel err is max |gpu - cpu| / max |cpu| over each logits row."
		echo
		echo "| check | configuration | tokens | logits | time |"
		echo "|---|---|---|---|---|"
	} >"$report"

	log "running the GPU tests (log: $logf)"
	set +e
	(
		cd pkg/cuda &&
			LIGHTLLM_REQUIRE_GPU=1 LIGHTLLM_TEST_MODELS=$models LIGHTLLM_GPU_1B=$work/llama1b-bf16.gguf \
				LIGHTLLM_GPU_REPORT=$report timeout "${GPU_CHECK_TIMEOUT:-420}" \
				"$root/$dir/cuda.test" -test.v -test.count=1 -test.timeout 7m \
				-test.run 'TestGPUStoriesGolden|TestGPUMatchesCPU|TestGPUThroughput|TestKernelsCompile|TestEmulated'
	) 2>&1 | tee "$logf"
	status=${PIPESTATUS[0]}
	set -e
	{
		echo
		if [[ $status -eq 0 ]]; then
			echo "Result: all GPU tests passed."
		else
			echo "Result: FAILED (exit $status); see the failing tests in gpu-check.log:"
			echo
			echo '```'
			grep -E -- '--- FAIL|FAIL|panic|Error' "$logf" | head -n 20
			echo '```'
		fi
	} >>"$report"
	if [[ ! -f $root/docs/performance.md ]]; then
		printf '# Performance\n\nMeasured results, newest last. GPU sections come from scripts/gpu-check.sh.\n' >"$root/docs/performance.md"
	fi
	cat "$report" >>"$root/docs/performance.md"
	log "appended the results to docs/performance.md"
	if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
		cp "$report" "$OUT/gpu-check-report.md"
		cp "$logf" "$OUT/gpu-check.log"
	fi
	cat "$report"
	return "$status"
}

case $mode in
build) build ;;
run) run ;;
all)
	build
	run
	;;
esac
