#!/usr/bin/env bash
# Mixture-of-experts CPU speed vs llama.cpp on the same GGUF files, the same
# thread count, in one run (issue 20). It generates (once, cached) a
# random-weight Qwen3-30B-A3B-shaped MoE scaled to a small machine — hidden
# 1024, 16 layers, 64 experts of which 8 are used, expert FFN 512 — with
# `lightllm gen-model --arch qwen3moe`, runs `lightllm bench-engine` and
# llama.cpp's bench.mjs on it RUNS times each, alternating, and prints the
# medians and their ratios against issue 20's targets: decode x1 >= 1.2x
# llama.cpp, x16 aggregate >= 2x llama.cpp's x1, prefill >= 1.0x.
#
# usage: scripts/bench-moe.sh
# env:   THREADS="1 2" PROMPT=128 GEN=32 SEQS=1,16 RUNS=3 DTYPES="q8_0 q4_K_M"
#        CACHE=/tmp/lightllm-bench-moe      generated models (~1.9 GB q8_0, ~1.0 GB q4_K_M)
#        LLAMACPP_REF=/tmp/llamacpp-ref      node-llama-cpp install
#        OUT=FILE                            also write every raw JSON line there
#        LLAMACPP_SEQS=1                     llama.cpp's sequence counts (default SEQS): no
#                                            target uses its x16, whose node-llama-cpp rounds
#                                            take minutes
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-"1 2"}
PROMPT=${PROMPT:-128}
GEN=${GEN:-32}
SEQS=${SEQS:-1,16}
RUNS=${RUNS:-3}
DTYPES=${DTYPES:-"q8_0 q4_K_M"}
CACHE=${CACHE:-/tmp/lightllm-bench-moe}
OUT=${OUT:-}
LLAMACPP_SEQS=${LLAMACPP_SEQS:-$SEQS}
SHAPE=(--arch qwen3moe --hidden 1024 --layers 16 --heads 16 --kv_heads 4 --head_dim 64 --ffn 512
	--experts 64 --experts_used 8 --vocab 32000)

log() { printf '%s\n' "$*" >&2; }

mkdir -p "$CACHE"
BIN="$CACHE/lightllm"
log "building lightllm -> $BIN"
go build -o "$BIN" ./cmd/lightllm

REF=${LLAMACPP_REF:-/tmp/llamacpp-ref}
if [ ! -d "$REF/node_modules/node-llama-cpp" ]; then
	if [ -x ../shared/tools/llamacpp-ref/setup.sh ]; then
		REF=$(../shared/tools/llamacpp-ref/setup.sh "$REF")
	else
		log "llama.cpp reference not found ($REF): cannot compare"
		exit 1
	fi
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
record() { # kind dtype threads json
	local line
	line=$(jq -c --arg kind "$1" --arg dtype "$2" --argjson thr "$3" '. + {kind: $kind, dtype: $dtype, thr: $thr}' <<<"$4")
	echo "$line" >>"$raw"
	[ -z "$OUT" ] || echo "$line" >>"$OUT"
}

for dt in $DTYPES; do
	model="$CACHE/qwen3moe-a3b-mini-$dt.gguf"
	if [ ! -s "$model" ]; then
		log "generating $model"
		"$BIN" gen-model "${SHAPE[@]}" --dtype "$dt" --seed 1 --out "$model.tmp" && mv "$model.tmp" "$model"
	fi
	for thr in $THREADS; do
		for run in $(seq "$RUNS"); do
			log "$dt $thr thr run $run/$RUNS: lightllm"
			record ours "$dt" "$thr" "$("$BIN" bench-engine --model_dir "$model" --threads "$thr" \
				--prompt_tokens "$PROMPT" --gen_tokens "$GEN" --sequences "$SEQS" --json)"
			log "$dt $thr thr run $run/$RUNS: llama.cpp"
			record llamacpp "$dt" "$thr" "$(node "$REF/bench.mjs" "$model" "$thr" "$PROMPT" "$GEN" "$LLAMACPP_SEQS")"
		done
	done
done

jq -rs --arg seqs "$SEQS" --argjson prompt "$PROMPT" --argjson gen "$GEN" '
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length/2|floor]
    else (.[length/2-1] + .[length/2]) / 2 end;
  def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
  def fmt($w): tostring | if length < $w then . + (" " * ($w - length)) else . end;
  "lightllm vs llama.cpp: Qwen3-30B-A3B-shaped MoE (hidden 1024, 16 layers, 64 experts, 8 used, expert FFN 512; random weights), prompt \($prompt), gen \($gen); medians of \(map(select(.kind == "ours")) | group_by([.dtype, .thr]) | map(length) | max // 0) runs",
  "",
  ("model" | fmt(8)) + ("thr" | fmt(4)) + ("metric" | fmt(24)) + ("lightllm" | fmt(10)) + ("llama.cpp" | fmt(10)) + ("ratio" | fmt(7)) + "target",
  (group_by([.dtype, .thr]) | .[]
   | . as $rows | $rows[0].dtype as $dt | $rows[0].thr as $thr
   | [$rows[] | select(.kind == "ours")] as $o | [$rows[] | select(.kind == "llamacpp")] as $l
   | def med($k; $xs): [$xs[] | .[$k] | select(. != null)] | median;
     def line($name; $a; $b; $tgt):
       ($dt | fmt(8)) + ($thr | fmt(4)) + ($name | fmt(24)) + ($a | r2 | fmt(10)) + ($b | r2 | fmt(10))
       + (ratio($a; $b) | r2 | fmt(7))
       + (if $tgt == null then "" elif ratio($a; $b) == null then ">= \($tgt)"
          elif ratio($a; $b) >= $tgt then ">= \($tgt) ok" else ">= \($tgt) MISSED" end);
   line("prefill tok/s"; med("prefill_tok_s"; $o); med("prefill_tok_s"; $l); 1.0),
   (($seqs | split(","))[] as $s | line("decode x\($s) tok/s"; med("decode_tok_s_x\($s)"; $o); med("decode_tok_s_x\($s)"; $l);
     (if $s == "1" then 1.2 else null end))),
   (if ($seqs | split(",") | index("16")) != null then
      line("x16 aggregate / ll x1"; med("decode_tok_s_x16"; $o); med("decode_tok_s_x1"; $l); 2) else empty end))' "$raw"
