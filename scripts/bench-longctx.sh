#!/usr/bin/env bash
# Long-context CPU speed, ours vs llama.cpp on the same GGUF file and thread
# count, in one run (issue 26). For each prompt length P it prefills a
# P-token pseudo-random prompt and then decodes GEN tokens in the same
# sequence: ours with `lightllm bench-engine --context P`, llama.cpp with
# ../shared/tools/llamacpp-ref/longctx.mjs (512-token batches both). It also
# runs SEQS sequences x P2 context together (ours) against llama.cpp's
# single sequence at P2. Runs alternate between the engines; medians and
# ratios are printed.
#
# usage: scripts/bench-longctx.sh
# env:   THREADS=1 CONTEXTS="512 2048 8192 32768" GEN=33 RUNS=1 SEQS=16 P2=2048
#        CACHE=/tmp/lightllm-bench-models  LLAMACPP_REF=/tmp/llamacpp-ref  OUT=FILE (raw JSON lines)
#        SERVER_P=4096 PORT=18927          also time to first token of a SERVER_P-token prompt through
#                                          the launched server (/generate, max_new_tokens 1, prompt cache
#                                          off, same token ids) against llama.cpp's prefill time for it;
#                                          SERVER_P= (empty) skips it
# The model is 160M-shaped (hidden 768, 12 layers, 12 heads / 4 KV heads,
# FFN 3072, vocab 32000), q8_0, context 40960. A 32k prompt takes minutes
# per engine on one core.
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-1}
CONTEXTS=${CONTEXTS:-"512 2048 8192 32768"}
GEN=${GEN:-33}
RUNS=${RUNS:-1}
SEQS=${SEQS:-16}
P2=${P2:-2048}
SERVER_P=${SERVER_P-4096}
PORT=${PORT:-18927}
CACHE=${CACHE:-/tmp/lightllm-bench-models}
OUT=${OUT:-}
SHAPE=(--arch llama --hidden 768 --layers 12 --heads 12 --kv_heads 4 --ffn 3072 --vocab 32000 --max_pos 40960)

log() { printf '%s\n' "$*" >&2; }
mkdir -p "$CACHE"
BIN="$CACHE/lightllm"
log "building lightllm -> $BIN"
go build -o "$BIN" ./cmd/lightllm
REF=${LLAMACPP_REF:-/tmp/llamacpp-ref}
if [ ! -d "$REF/node_modules/node-llama-cpp" ]; then
	log "installing the llama.cpp reference into $REF"
	REF=$(../shared/tools/llamacpp-ref/setup.sh "$REF")
fi
model="$CACHE/m160-longctx-q8_0.gguf"
if [ ! -s "$model" ]; then
	log "generating $model"
	"$BIN" gen-model "${SHAPE[@]}" --dtype q8_0 --seed 1 --out "$model.tmp" && mv "$model.tmp" "$model"
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
record() { # kind P json
	local line
	line=$(jq -c --arg kind "$1" --argjson P "$2" '. + {kind: $kind, P: $P}' <<<"$3")
	echo "$line" >>"$raw"
	[ -z "$OUT" ] || echo "$line" >>"$OUT"
}
for run in $(seq "$RUNS"); do
	for P in $CONTEXTS; do
		log "P=$P run $run/$RUNS: lightllm"
		record ours "$P" "$("$BIN" bench-engine --model_dir "$model" --threads "$THREADS" --prompt_tokens 16 \
			--gen_tokens "$GEN" --sequences 1 --context "$P" --json)"
		log "P=$P run $run/$RUNS: llama.cpp"
		record llamacpp "$P" "$(node "$REF/longctx.mjs" "$model" "$THREADS" "$P" "$GEN")"
	done
	log "$SEQS x $P2 run $run/$RUNS: lightllm"
	record ours_multi "$P2" "$("$BIN" bench-engine --model_dir "$model" --threads "$THREADS" --prompt_tokens 16 \
		--gen_tokens "$GEN" --sequences "$SEQS" --context "$P2" --json)"
done

if [ -n "$SERVER_P" ]; then
	log "building the server roles -> $CACHE/bin"
	go build -o "$CACHE/bin/" ./cmd/...
	# longctx.mjs's prompt, computed by the same JavaScript.
	ids=$(node -e '
		const P = +process.argv[1]; let x = 12345; const p = [];
		for (let i = 0; i < P; i++) { x = (x * 1103515245 + 12345) >>> 0; p.push(3 + (x % (30000 - 3))); }
		console.log(JSON.stringify(p));' "$SERVER_P")
	inst="bench-longctx-$PORT"
	"$CACHE/bin/lightllm" launch --model_dir "$model" --port "$PORT" --instance "$inst" --threads "$THREADS" \
		--disable_dynamic_prompt_cache --max_req_total_len $((SERVER_P + 16)) >"$raw.server" 2>&1 &
	server=$!
	trap 'rm -f "$raw" "$raw.server"; "$CACHE/bin/lightllm" stop --instance "$inst" >/dev/null 2>&1 || true' EXIT
	for _ in $(seq 600); do
		curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
		kill -0 "$server" 2>/dev/null || { tail -20 "$raw.server" >&2; exit 1; }
		sleep 0.5
	done
	for run in $(seq "$RUNS"); do
		log "TTFT P=$SERVER_P run $run/$RUNS: server"
		t=$(curl -fsS -o /dev/null -w '%{time_total}' -H 'Content-Type: application/json' \
			-d "{\"inputs\": $ids, \"parameters\": {\"max_new_tokens\": 1}}" "http://127.0.0.1:$PORT/generate")
		record server_ttft "$SERVER_P" "{\"ttft_s\": $t}"
		log "TTFT P=$SERVER_P run $run/$RUNS: llama.cpp prefill"
		record llamacpp_ttft "$SERVER_P" "$(node "$REF/longctx.mjs" "$model" "$THREADS" "$SERVER_P" 2)"
	done
	"$CACHE/bin/lightllm" stop --instance "$inst" >/dev/null 2>&1 || true
	wait "$server" 2>/dev/null || true
fi

jq -rs --arg threads "$THREADS" --argjson seqs "$SEQS" --argjson p2 "$P2" '
	def med: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
	def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
	(map(select(.kind == "ours")) | group_by(.P)) as $ours |
	"threads \($threads); medians of runs; ratio = ours / llama.cpp",
	"| prompt P | prefill tok/s ours | llama.cpp | ratio | decode tok/s at P ours | llama.cpp | ratio |",
	"|---|---|---|---|---|---|---|",
	($ours[] | .[0].P as $P |
		(map(.prefill_ctx_tok_s) | med) as $op | (map(.decode_ctx_tok_s_x1) | med) as $od |
		([$all[] | select(.kind == "llamacpp" and .P == $P)] ) as $l |
		($l | map(.prefill_tok_s) | med) as $lp | ($l | map(.decode_tok_s_at_P) | med) as $ld |
		"| \($P) | \($op | r2) | \($lp | r2) | \(if $lp then ($op / $lp) | r2 else "-" end) | \($od | r2) | \($ld | r2) | \(if $ld then ($od / $ld) | r2 else "-" end) |"),
	(([$all[] | select(.kind == "ours_multi")] | map(.["decode_ctx_tok_s_x\($seqs)"]) | med) as $m |
	 ([$all[] | select(.kind == "llamacpp" and .P == $p2)] | map(.decode_tok_s_at_P) | med) as $l1 |
	 "\($seqs) sequences x \($p2) context: \($m | r2) tok/s aggregate = \(if $l1 then ($m / $l1) | r2 else "-" end)x llama.cpp single sequence at \($p2)"),
	(([$all[] | select(.kind == "server_ttft")]) as $st | if ($st | length) == 0 then empty else
	 ($st | map(.ttft_s) | med) as $t | $st[0].P as $sp |
	 ([$all[] | select(.kind == "llamacpp_ttft")] | map($sp / .prefill_tok_s) | med) as $lt |
	 "TTFT of a \($sp)-token prompt through the server: \($t | r2) s; llama.cpp prefill of it: \($lt | r2) s; ratio \(($t / $lt) | r2) (<= 1 is the target)" end)
' --argjson all "$(jq -s . "$raw")" "$raw"
