#!/usr/bin/env bash
# Multi-turn prompt-cache benchmark (issue 11): the same conversations are
# sent to a server launched with the radix prompt cache on (the default) and
# then to one launched with --disable_dynamic_prompt_cache, using
# `lightllm bench --dataset multiturn:TURNS` (turn k+1's prompt = turn k's
# prompt + its answer + new user text). For each run it prints the bench
# table (per-turn prompt / cached / prefilled tokens and TTFT), and at the
# end a markdown summary of the turn-2 numbers for docs/performance.md.
#
#   scripts/bench-multiturn.sh [MODEL]    MODEL: HF dir or .gguf
#                                          (default ../shared/models/stories260K/hf)
# Environment:
#   TOKENIZER     tokenizer dir or .gguf (default: MODEL)
#   CONVS=8 TURNS=3 INPUT_LEN=64 TURN_LEN=16 OUTPUT_LEN=32 CONCURRENCY=4
#                 conversations, turns, first / later user message tokens,
#                 answer tokens, conversations in flight
#   LAUNCH_ARGS   extra `lightllm launch` flags (e.g. --max_total_token_num 4096)
#   LIGHTLLM_BIN_DIR  use the binaries there instead of building them
#   OUT           keep the JSON reports and server logs in this directory
#   BENCH_TIMEOUT per-request timeout (default 30m)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

MODEL=${1:-../shared/models/stories260K/hf}
TOKENIZER=${TOKENIZER:-$MODEL}
CONVS=${CONVS:-8}
TURNS=${TURNS:-3}
INPUT_LEN=${INPUT_LEN:-64}
TURN_LEN=${TURN_LEN:-16}
OUTPUT_LEN=${OUTPUT_LEN:-32}
CONCURRENCY=${CONCURRENCY:-4}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-30m}
read -r -a LAUNCH_EXTRA <<<"${LAUNCH_ARGS:-}"

if [[ ! -e $MODEL ]]; then
	echo "bench-multiturn: model $MODEL not found" >&2
	exit 2
fi
work=$(mktemp -d)
OUT=${OUT:-$work}
mkdir -p "$OUT"
bin=${LIGHTLLM_BIN_DIR:-}
if [[ -z $bin ]]; then
	bin=$work/bin
	echo "building binaries into $bin ..." >&2
	go build -o "$bin/" ./cmd/...
fi

instance=""
cleanup() {
	if [[ -n $instance ]]; then
		"$bin/lightllm" stop --instance "$instance" >/dev/null 2>&1 || true
	fi
	if [[ $OUT != "$work" ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
		echo $((20000 + RANDOM % 20000))
}

# run MODE [launch flags...]: launch, wait for /health, bench, stop.
run() {
	local mode=$1
	shift
	local port
	port=$(free_port)
	instance="mtbench-$$-$mode"
	"$bin/lightllm" launch --normal --model_dir "$MODEL" --port "$port" --instance "$instance" \
		"${LAUNCH_EXTRA[@]}" "$@" >"$OUT/server-$mode.log" 2>&1 &
	local pid=$! i
	for ((i = 0; i < 600; i++)); do
		if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "bench-multiturn: server ($mode) exited; log:" >&2
			tail -20 "$OUT/server-$mode.log" >&2
			exit 1
		fi
		sleep 0.5
	done
	echo "== prompt cache $mode: $MODEL ($CONVS conversations x $TURNS turns) ==" >&2
	"$bin/lightllm" bench --url "http://127.0.0.1:$port" --api openai-completions --tokenizer "$TOKENIZER" \
		--dataset "multiturn:$TURNS" --num-prompts "$CONVS" --input-len "$INPUT_LEN" --turn-input-len "$TURN_LEN" \
		--output-len "$OUTPUT_LEN" --ignore-eos --max-concurrency "$CONCURRENCY" --seed 1 \
		--request-timeout "$BENCH_TIMEOUT" --json "$OUT/multiturn-$mode.json" | tee "$OUT/table-$mode.txt"
	"$bin/lightllm" stop --instance "$instance" >/dev/null 2>&1 || true
	wait "$pid" 2>/dev/null || true
	instance=""
}

run on
run off --disable_dynamic_prompt_cache

# The row of turn 2 from each table: Turn Reqs Prompt Cached Prefill MeanTTFT MedTTFT P90TTFT.
row() { awk '/^-+Multi-turn/ {t=1; next} t && $1 == 2 {print; exit}' "$OUT/table-$1.txt"; }
read -r _ _ p_on c_on f_on m_on med_on _ < <(row on)
read -r _ _ p_off c_off f_off m_off med_off _ < <(row off)
echo
echo "| prompt cache | turn-2 prompt tokens | cached | prefilled | mean TTFT (ms) | median TTFT (ms) |"
echo "|---|---|---|---|---|---|"
echo "| on  | $p_on | $c_on | $f_on | $m_on | $med_on |"
echo "| off | $p_off | $c_off | $f_off | $m_off | $med_off |"
if [[ $OUT != "$work" ]]; then echo "(JSON reports and server logs in $OUT)"; fi
