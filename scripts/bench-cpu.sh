#!/usr/bin/env bash
# CPU engine vs llama.cpp on the same GGUF files, the same thread count, in
# one run (issue 7). For each weight type it generates (once, cached) a
# random-weight 1B-class TinyLlama-shaped model with `lightllm gen-model`,
# runs `lightllm bench-engine` and llama.cpp's bench.mjs on it RUNS times
# each, alternating, and prints the medians, their ratios, and the decode
# memory roofline (bytes of weights read per token / measured bandwidth).
#
# usage: scripts/bench-cpu.sh            (about 10-15 minutes on the 2-core dev box)
# env:   THREADS=1 PROMPT=128 GEN=32 SEQS=1,4,16 RUNS=3 DTYPES="q8_0 q4_0 f16"
#        CACHE=/tmp/lightllm-bench-models   generated models (~4 GB for the three types)
#        LLAMACPP_REF=/tmp/llamacpp-ref      node-llama-cpp install (made by
#                                            ../shared/tools/llamacpp-ref/setup.sh if absent)
#        OUT=FILE                            also write every raw JSON line there
# llama.cpp's README here advises one thread on these 2-core machines (its
# spinning thread pool stalls when the other core is busy), hence THREADS=1.
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-1}
PROMPT=${PROMPT:-128}
GEN=${GEN:-32}
SEQS=${SEQS:-1,4,16}
RUNS=${RUNS:-3}
DTYPES=${DTYPES:-"q8_0 q4_0 f16"}
CACHE=${CACHE:-/tmp/lightllm-bench-models}
OUT=${OUT:-}
# TinyLlama-1.1B's shape.
SHAPE=(--arch llama --hidden 2048 --layers 22 --heads 32 --kv_heads 4 --ffn 5632 --vocab 32000)

log() { printf '%s\n' "$*" >&2; }

mkdir -p "$CACHE"
BIN="$CACHE/lightllm"
log "building lightllm -> $BIN"
go build -o "$BIN" ./cmd/lightllm

REF=${LLAMACPP_REF:-/tmp/llamacpp-ref}
if [ ! -d "$REF/node_modules/node-llama-cpp" ]; then
	if [ -x ../shared/tools/llamacpp-ref/setup.sh ]; then
		log "installing the llama.cpp reference into $REF"
		REF=$(../shared/tools/llamacpp-ref/setup.sh "$REF")
	else
		log "llama.cpp reference not found ($REF) and no setup script: measuring ours only"
		REF=""
	fi
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
record() { # kind dtype json
	local line
	line=$(jq -c --arg kind "$1" --arg dtype "$2" '. + {kind: $kind, dtype: $dtype}' <<<"$3")
	echo "$line" >>"$raw"
	[ -z "$OUT" ] || echo "$line" >>"$OUT"
}

log "measuring read bandwidth ($THREADS threads)"
record membw "" "$("$BIN" membw --threads "$THREADS" --size_mb 512 --passes 5 --json)"

for dt in $DTYPES; do
	model="$CACHE/tinyllama-1b-$dt.gguf"
	if [ ! -s "$model" ]; then
		log "generating $model"
		"$BIN" gen-model "${SHAPE[@]}" --dtype "$dt" --seed 1 --out "$model.tmp" && mv "$model.tmp" "$model"
	fi
	for run in $(seq "$RUNS"); do
		log "$dt run $run/$RUNS: lightllm"
		record ours "$dt" "$("$BIN" bench-engine --model_dir "$model" --threads "$THREADS" \
			--prompt_tokens "$PROMPT" --gen_tokens "$GEN" --sequences "$SEQS" --json)"
		if [ -n "$REF" ]; then
			log "$dt run $run/$RUNS: llama.cpp"
			record llamacpp "$dt" "$(node "$REF/bench.mjs" "$model" "$THREADS" "$PROMPT" "$GEN" "$SEQS")"
		fi
	done
done

# Medians, ratios and the roofline. Bytes of weights per decoded token: every
# matrix once (q, k, v, o, gate, up, down per layer, and the output head) plus
# one embedding row; norms and the few-hundred-token KV cache are left out.
# The roofline target is held against decode_only_tok_s_x1 (the tokens after
# the first over their time): decode_tok_s_x1 follows bench.mjs and includes
# the 16-token prefill, which is not decode; both shares are printed.
jq -rs --arg seqs "$SEQS" --argjson threads "$THREADS" --argjson prompt "$PROMPT" --argjson gen "$GEN" '
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length/2|floor]
    else (.[length/2-1] + .[length/2]) / 2 end;
  def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
  def fmt($w): tostring | if length < $w then . + (" " * ($w - length)) else . end;
  (map(select(.kind == "membw")) | .[0]) as $bw
  | ($seqs | split(",")) as $S
  | (2048 as $H | 22 as $L | 256 as $KV | 5632 as $F | 32000 as $V
     | ($L * (2*$H*$H + 2*$KV*$H + 3*$H*$F) + $V*$H) as $n
     | {q8_0: ($n * 34 / 32 + $H * 34 / 32), q4_0: ($n * 18 / 32 + $H * 18 / 32), f16: ($n * 2 + $H * 2)}) as $bytes
  | "lightllm vs llama.cpp: TinyLlama-shaped 1B (random weights), \($threads) thread(s), prompt \($prompt), gen \($gen); medians of \(map(select(.kind == "ours")) | group_by(.dtype) | map(length) | max // 0) runs",
    "read bandwidth (\($bw.threads) thr, huge pages \($bw.huge_pages)): best \($bw.read_gb_s_best) GB/s, median \($bw.read_gb_s_median) GB/s",
    "",
    ("model" | fmt(6)) + ("metric" | fmt(24)) + ("lightllm" | fmt(10)) + ("llama.cpp" | fmt(10)) + ("ratio" | fmt(7)) + "target",
    (group_by(.dtype) | map(select(.[0].kind != "membw")) | .[]
     | . as $rows | $rows[0].dtype as $dt
     | [$rows[] | select(.kind == "ours")] as $o | [$rows[] | select(.kind == "llamacpp")] as $l
     | def med($k; $xs): [$xs[] | .[$k] | select(. != null)] | median;
       def line($name; $a; $b; $tgt):
         ($dt | fmt(6)) + ($name | fmt(24)) + ($a | r2 | fmt(10)) + ($b | r2 | fmt(10))
         + (ratio($a; $b) | r2 | fmt(7))
         + (if $tgt == null then "" elif ratio($a; $b) == null then ">= \($tgt)"
            elif ratio($a; $b) >= $tgt then ">= \($tgt) ok" else ">= \($tgt) MISSED" end);
       (med("decode_tok_s_x1"; $l)) as $l1
     | line("prefill tok/s"; med("prefill_tok_s"; $o); med("prefill_tok_s"; $l); 0.8),
       ($S[] as $s | line("decode x\($s) tok/s"; med("decode_tok_s_x\($s)"; $o); med("decode_tok_s_x\($s)"; $l);
         (if $s == "1" then (if $dt == "f16" then 0.9 else 1.0 end) else null end))),
       (if ($S | index("16")) != null then
          line("x16 aggregate / ll x1"; med("decode_tok_s_x16"; $o); $l1; 2) else empty end),
       ($bytes[$dt] as $b | ($bw.read_gb_s_best * 1e9 / $b) as $roof
        | ($dt | fmt(6)) + ("decode roofline tok/s" | fmt(24)) + ($roof | r2 | fmt(10)) + ("" | fmt(10))
          + ("" | fmt(7)) + "\($b / 1e9 * 100 | round / 100) GB/token",
          ($dt | fmt(6)) + ("x1 share of roofline" | fmt(24))
          + (ratio(med("decode_tok_s_x1"; $o); $roof) | r2 | fmt(10))
          + (ratio($l1; $roof) | r2 | fmt(10)) + ("" | fmt(7)) + "(bench.mjs method: 16-token prefill included)",
          ($dt | fmt(6)) + ("decode-only x1 tok/s" | fmt(24))
          + (med("decode_only_tok_s_x1"; $o) | r2 | fmt(10)) + ("-" | fmt(10)) + ("" | fmt(7)),
          ($dt | fmt(6)) + ("decode-only share" | fmt(24))
          + (ratio(med("decode_only_tok_s_x1"; $o); $roof) | r2 | fmt(10)) + ("-" | fmt(10)) + ("" | fmt(7))
          + (ratio(med("decode_only_tok_s_x1"; $o); $roof) as $q
             | if $q == null then "" elif $q >= 0.7 then ">= 0.7 ok" else ">= 0.7 MISSED" end))
    )' "$raw"
