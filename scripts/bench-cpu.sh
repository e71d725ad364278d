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
#        (also q4_K_M, q5_K_M, q6_K: llama.cpp's K-quant mixes, issue 19)
#        CACHE=/tmp/lightllm-bench-models   generated models (~4 GB for the three types)
#        LLAMACPP_REF=/tmp/llamacpp-ref      node-llama-cpp install (made by
#                                            ../shared/tools/llamacpp-ref/setup.sh if absent)
#        OUT=FILE                            also write every raw JSON line there
#        LLAMACPP_MMAP=0                     1: llama.cpp maps the file (its default); 0: it reads the
#                                            weights into memory (--no-mmap; scripts/llamacpp/bench.mjs).
#                                            0 by default: these VMs drop the page cache of a multi-GB
#                                            file within minutes, so a mapped q5_K/q6_K model (which
#                                            llama.cpp does not repack into its own memory) is re-read
#                                            from disk on every token (1.8 instead of 17 tok/s at 1B).
#                                            Its peak RSS with a mapped file (what a default llama.cpp
#                                            shows) is larger: run with 1 for that figure.
#        LLAMACPP_SEQS=1                     llama.cpp's sequence counts (default SEQS): its
#                                            multi-sequence rounds through node-llama-cpp take
#                                            minutes (x16 ~2 tok/s) and no target uses them
#                                            (x16 is held against llama.cpp's x1)
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
LLAMACPP_SEQS=${LLAMACPP_SEQS:-$SEQS}
export LLAMACPP_MMAP=${LLAMACPP_MMAP:-0}
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

# bench.mjs with the weights read into memory (node resolves node-llama-cpp
# from the script's folder, so it runs from the reference install).
REFBENCH=""
if [ -n "$REF" ]; then
	REFBENCH="$REF/bench-nommap.mjs"
	cp scripts/llamacpp/bench.mjs "$REFBENCH"
	log "llama.cpp weights: $([ "$LLAMACPP_MMAP" = 1 ] && echo "mapped from the file" || echo "read into memory (--no-mmap)")"
fi

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
rssf=$(mktemp)
trap 'rm -f "$raw" "$rssf"' EXIT
# timed CMD...: runs CMD under GNU time, its peak RSS (KiB) left in $rssf.
timed() { /usr/bin/time -f %M -o "$rssf" "$@"; }
record() { # kind dtype json
	local line rss=null
	[ -s "$rssf" ] && rss=$(tail -1 "$rssf") && : >"$rssf"
	line=$(jq -c --arg kind "$1" --arg dtype "$2" --argjson rss "$rss" '. + {kind: $kind, dtype: $dtype, peak_rss_kb: $rss}' <<<"$3")
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
		record ours "$dt" "$(timed "$BIN" bench-engine --model_dir "$model" --threads "$THREADS" \
			--prompt_tokens "$PROMPT" --gen_tokens "$GEN" --sequences "$SEQS" --json)"
		if [ -n "$REF" ]; then
			log "$dt run $run/$RUNS: llama.cpp"
			record llamacpp "$dt" "$(timed node "$REFBENCH" "$model" "$THREADS" "$PROMPT" "$GEN" "$LLAMACPP_SEQS")"
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
     # K-quant mixes (gen-model follows llama-quant.cpp): attn_v and ffn_down
     # in q6_K on the use_more_bits layers, the output head in q6_K.
     | ([range(0; $L) | select(. < ($L/8|floor) or . >= (7*$L/8|floor) or ((. - ($L/8|floor)) % 3) == 2)] | length) as $more
     | (2*$H*$H + $KV*$H + 2*$H*$F) as $base | ($KV*$H + $F*$H) as $vd
     | def kmix($b): $L*$base*$b + $more*$vd*210/256 + ($L-$more)*$vd*$b + $V*$H*210/256 + $H*$b;
     {q8_0: ($n * 34 / 32 + $H * 34 / 32), q4_0: ($n * 18 / 32 + $H * 18 / 32), f16: ($n * 2 + $H * 2),
      q4_K_M: kmix(144/256), q5_K_M: kmix(176/256), q6_K: ($n * 210 / 256 + $H * 210 / 256)}) as $bytes
  | "lightllm vs llama.cpp: TinyLlama-shaped 1B (random weights), \($threads) thread(s), prompt \($prompt), gen \($gen); medians of \(map(select(.kind == "ours")) | group_by(.dtype) | map(length) | max // 0) runs",
    "read bandwidth (\($bw.threads) thr, huge pages \($bw.huge_pages)): best \($bw.read_gb_s_best) GB/s, median \($bw.read_gb_s_median) GB/s",
    "llama.cpp weights: \(map(select(.kind == "llamacpp")) | .[0].mmap | if . == null then "-" elif . then "mapped from the file (its default)" else "read into memory (--no-mmap)" end)",
    "",
    ("model" | fmt(8)) + ("metric" | fmt(24)) + ("lightllm" | fmt(10)) + ("llama.cpp" | fmt(10)) + ("ratio" | fmt(7)) + "target",
    (group_by(.dtype) | map(select(.[0].kind != "membw")) | .[]
     | . as $rows | $rows[0].dtype as $dt
     | [$rows[] | select(.kind == "ours")] as $o | [$rows[] | select(.kind == "llamacpp")] as $l
     | def med($k; $xs): [$xs[] | .[$k] | select(. != null)] | median;
       def line($name; $a; $b; $tgt):
         ($dt | fmt(8)) + ($name | fmt(24)) + ($a | r2 | fmt(10)) + ($b | r2 | fmt(10))
         + (ratio($a; $b) | r2 | fmt(7))
         + (if $tgt == null then "" elif ratio($a; $b) == null then ">= \($tgt)"
            elif ratio($a; $b) >= $tgt then ">= \($tgt) ok" else ">= \($tgt) MISSED" end);
       (med("decode_tok_s_x1"; $l)) as $l1
       # Targets: issue 7 (f16, q8_0, q4_0) and issue 19 (the K-quant mixes).
     | ({q4_K_M: 1.1, q5_K_M: 1.0, q6_K: 1.0}[$dt] // 0.8) as $tPrefill
     | ({q4_K_M: 1.4, q5_K_M: 1.3, q6_K: 1.3, f16: 0.9}[$dt] // 1.0) as $tX1
     | ({q4_K_M: 3}[$dt] // 2) as $tX16
     | ({q4_K_M: 0.75}[$dt] // 0.7) as $tShare
     | line("prefill tok/s"; med("prefill_tok_s"; $o); med("prefill_tok_s"; $l); $tPrefill),
       ($S[] as $s | line("decode x\($s) tok/s"; med("decode_tok_s_x\($s)"; $o); med("decode_tok_s_x\($s)"; $l);
         (if $s == "1" then $tX1 else null end))),
       (if ($S | index("16")) != null then
          line("x16 aggregate / ll x1"; med("decode_tok_s_x16"; $o); $l1; $tX16) else empty end),
       (med("peak_rss_kb"; $o) as $ro | med("peak_rss_kb"; $l) as $rl
        | ($dt | fmt(8)) + ("peak RSS MB" | fmt(24)) + ($ro | if . == null then "-" else (. / 1024 | round | tostring) end | fmt(10))
          + ($rl | if . == null then "-" else (. / 1024 | round | tostring) end | fmt(10))
          + (ratio($ro; $rl) | r2 | fmt(7)) + "<= 1"
          + (if ratio($ro; $rl) == null then "" elif ratio($ro; $rl) <= 1 then " ok" else " MISSED" end)),
       ($bytes[$dt] as $b | ($bw.read_gb_s_best * 1e9 / $b) as $roof
        | ($dt | fmt(8)) + ("decode roofline tok/s" | fmt(24)) + ($roof | r2 | fmt(10)) + ("" | fmt(10))
          + ("" | fmt(7)) + "\($b / 1e9 * 100 | round / 100) GB/token",
          ($dt | fmt(8)) + ("x1 share of roofline" | fmt(24))
          + (ratio(med("decode_tok_s_x1"; $o); $roof) | r2 | fmt(10))
          + (ratio($l1; $roof) | r2 | fmt(10)) + ("" | fmt(7)) + "(bench.mjs method: 16-token prefill included)",
          ($dt | fmt(8)) + ("decode-only x1 tok/s" | fmt(24))
          + (med("decode_only_tok_s_x1"; $o) | r2 | fmt(10)) + ("-" | fmt(10)) + ("" | fmt(7)),
          ($dt | fmt(8)) + ("decode-only share" | fmt(24))
          + (ratio(med("decode_only_tok_s_x1"; $o); $roof) | r2 | fmt(10)) + ("-" | fmt(10)) + ("" | fmt(7))
          + (ratio(med("decode_only_tok_s_x1"; $o); $roof) as $q
             | if $q == null then "" elif $q >= $tShare then ">= \($tShare) ok" else ">= \($tShare) MISSED" end))
    )' "$raw"
