#!/usr/bin/env bash
# Local scale-out test without Kubernetes (issue 13): N lightllm instances on
# loopback behind llm-d-router's Endpoint Picker (EPP) in file-discovery mode,
# with `lightllm epp-proxy` in front in place of Envoy. It checks that
#   1. requests avoid an instance that is saturated,
#   2. repeated prompts stick to one instance (prefix-cache scorer),
#   3. an instance removed from rotation stops getting traffic,
#   4. nothing fails while an instance drains on SIGTERM,
# and prints a summary for docs/scaling.md.
#
#   scripts/scaleout-local.sh                       run the test
#   scripts/scaleout-local.sh print-epp-config FILE print the EPP config it
#                         runs (deploy/kubernetes/epp.yaml's, plus file
#                         discovery of FILE); pkg/deploytest checks it
#
# The EPP is built from the pinned llm-d-router release with the Go toolchain
# into the temp dir (never into the repository):
#   go install github.com/llm-d/llm-d-router/cmd/epp@$EPP_VERSION
# Environment:
#   EPP_VERSION   pinned release (default v0.10.0)
#   EPP_BIN       use this epp binary instead of building one
#   EPP_SRC       build from this checkout of the release when the module
#                 proxy does not serve llm-d-router
#   INSTANCES     2 or 3 (default 3)       BASE_PORT   first API port (18100)
#   MODEL_DIR     default ../shared/models/stories260K/hf, or
#                 $LIGHTLLM_TEST_MODELS/stories260K/hf
#   BUILD_JOBS    parallel compile jobs (default 1: the machine is shared)
#   LIGHTLLM_BIN_DIR  use the lightllm and role binaries in this directory
#                 instead of building them
#   KEEP=1        keep the work dir (logs, endpoints file, EPP config)
#   SUMMARY_OUT   also write the summary (markdown) to this file
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

EPP_VERSION=${EPP_VERSION:-v0.10.0}
INSTANCES=${INSTANCES:-3}
BASE_PORT=${BASE_PORT:-18100}
BUILD_JOBS=${BUILD_JOBS:-1}
MODEL_NAME=stories
ENGINE_LABEL="llm-d.ai/engine-type"
ENGINE_TYPE=lightllm-go

# --- the EPP configuration --------------------------------------------------

# epp_config ENDPOINTS: the ConfigMap's EndpointPickerConfig with the
# file-discovery plugin added (first plugin) and wired as dataLayer.discovery.
epp_config() {
  local endpoints=$1 src="$repo/deploy/kubernetes/epp.yaml"
  [ -f "$src" ] || { echo "missing $src" >&2; return 1; }
  awk -v ep="$endpoints" '
    /^  lightllm-plugins.yaml: \|$/ { inblock = 1; next }
    inblock && /^[^ ]/ { inblock = 0 }
    inblock && /^    / {
      line = substr($0, 5); print line
      if (line == "plugins:") {
        print "- type: file-discovery"
        print "  parameters:"
        print "    path: " ep
        print "    watchFile: true"
      }
      if (line == "dataLayer:") {
        print "  discovery:"
        print "    pluginRef: file-discovery"
      }
      found = 1; next
    }
    inblock && /^ *$/ { print ""; next }
    END { if (!found) exit 1 }
  ' "$src" || { echo "no lightllm-plugins.yaml block in $src" >&2; return 1; }
}

if [ "${1:-run}" = print-epp-config ]; then
  [ $# -eq 2 ] || { echo "usage: $0 print-epp-config ENDPOINTS_FILE" >&2; exit 2; }
  epp_config "$2"
  exit 0
fi
[ "${1:-run}" = run ] || { echo "usage: $0 [run | print-epp-config FILE]" >&2; exit 2; }

# --- setup ------------------------------------------------------------------

case "$INSTANCES" in 2|3) ;; *) echo "INSTANCES must be 2 or 3" >&2; exit 2 ;; esac
for tool in go curl awk; do
  command -v "$tool" >/dev/null || { echo "scaleout: $tool not found" >&2; exit 1; }
done
if [ -z "${MODEL_DIR:-}" ]; then
  MODEL_DIR="$repo/../shared/models/stories260K/hf"
  [ -n "${LIGHTLLM_TEST_MODELS:-}" ] && MODEL_DIR="$LIGHTLLM_TEST_MODELS/stories260K/hf"
fi
if [ ! -f "$MODEL_DIR/config.json" ]; then
  echo "SKIP: no model at $MODEL_DIR (set MODEL_DIR or LIGHTLLM_TEST_MODELS)"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lightllm-scaleout.XXXXXX")
mkdir -p "$work/bin" "$work/logs" "$work/run" "$work/epp"
endpoints="$work/endpoints.yaml"
results="$work/results"
mkdir -p "$results"

port_of() { echo $((BASE_PORT + $1)); }      # instance i (1-based) → API port
name_of() { echo "scaleout-$1"; }
grpc_port=$((BASE_PORT + 90)); health_port=$((BASE_PORT + 91))
epp_metrics_port=$((BASE_PORT + 92)); proxy_port=$((BASE_PORT + 80))
proxy="http://127.0.0.1:$proxy_port"

declare -A launcher_pid=()
declare -a bg_pids=()
epp_pid=""; proxy_pid=""

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }

stop_pid() { # stop_pid PID SECONDS: SIGTERM, then SIGKILL after SECONDS
  local pid=$1 t=${2:-30}
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq $((t * 10))); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  for pid in "${bg_pids[@]}"; do pkill -TERM -P "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; done
  [ -n "$proxy_pid" ] && stop_pid "$proxy_pid" 10
  [ -n "$epp_pid" ] && stop_pid "$epp_pid" 10
  for i in "${!launcher_pid[@]}"; do
    stop_pid "${launcher_pid[$i]}" 60
    LIGHTLLM_RUN_DIR="$work/run" "$work/bin/lightllm" stop --instance "$(name_of "$i")" --timeout 20s >/dev/null 2>&1
  done
  if [ "${KEEP:-0}" = 1 ] || [ $rc -ne 0 ]; then
    echo "work dir kept: $work" >&2
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_tcp() { # wait_tcp PORT SECONDS
  for _ in $(seq $(($2 * 10))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# --- build ------------------------------------------------------------------

build() {
  if [ -n "${LIGHTLLM_BIN_DIR:-}" ]; then
    log "using the lightllm binaries in $LIGHTLLM_BIN_DIR"
    cp "$LIGHTLLM_BIN_DIR"/* "$work/bin/"
  else
    log "building lightllm (all roles) into $work/bin"
    (cd "$repo" && GOMAXPROCS=$BUILD_JOBS nice -n 19 go build -p "$BUILD_JOBS" -o "$work/bin/" ./cmd/...) \
      >"$work/logs/build.log" 2>&1 || { cat "$work/logs/build.log" >&2; echo "scaleout: building lightllm failed" >&2; exit 1; }
  fi
  for role in lightllm apiserver router detokenizer infer metric health; do
    [ -x "$work/bin/$role" ] || { echo "scaleout: role binary $role was not built (is cmd/$role finished?)" >&2; exit 1; }
  done

  epp="$work/epp/epp"
  if [ -n "${EPP_BIN:-}" ]; then
    epp=$EPP_BIN; epp_how="given binary $EPP_BIN"
    return
  fi
  local start; start=$(date +%s)
  log "building the EPP: go install github.com/llm-d/llm-d-router/cmd/epp@$EPP_VERSION (log: $work/logs/epp-build.log)"
  if (cd "$work" && GOBIN="$work/epp" GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOMAXPROCS=$BUILD_JOBS \
      nice -n 19 go install -p "$BUILD_JOBS" "github.com/llm-d/llm-d-router/cmd/epp@$EPP_VERSION") \
      >"$work/logs/epp-build.log" 2>&1; then
    epp_how="go install github.com/llm-d/llm-d-router/cmd/epp@$EPP_VERSION ($(( $(date +%s) - start )) s)"
  elif [ -n "${EPP_SRC:-}" ]; then
    log "module proxy route failed; building from EPP_SRC=$EPP_SRC"
    (cd "$EPP_SRC" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOMAXPROCS=$BUILD_JOBS \
      nice -n 19 go build -p "$BUILD_JOBS" -o "$epp" ./cmd/epp) >>"$work/logs/epp-build.log" 2>&1 \
      || { tail -20 "$work/logs/epp-build.log" >&2; echo "scaleout: building the EPP from $EPP_SRC failed" >&2; exit 1; }
    epp_how="go build ./cmd/epp in $EPP_SRC ($(( $(date +%s) - start )) s)"
  else
    tail -5 "$work/logs/epp-build.log" >&2
    echo "scaleout: could not build the EPP from the module proxy; set EPP_BIN to an epp binary of" \
      "llm-d-router $EPP_VERSION, or EPP_SRC to a checkout of that tag" >&2
    exit 1
  fi
}

# --- instances and the endpoints file --------------------------------------

declare -A in_rotation=()

# write_endpoints: the file-discovery file for the instances in rotation,
# replaced atomically (the EPP watches it and reloads on the rename).
write_endpoints() {
  local tmp="$endpoints.tmp.$$"
  {
    echo "endpoints:"
    for i in $(printf '%s\n' "${!in_rotation[@]}" | sort -n); do
      printf '  - name: %s\n    address: "127.0.0.1"\n    port: "%s"\n    labels:\n      %s: %s\n' \
        "$(name_of "$i")" "$(port_of "$i")" "$ENGINE_LABEL" "$ENGINE_TYPE"
    done
  } >"$tmp"
  [ ${#in_rotation[@]} -gt 0 ] || echo "endpoints: []" >"$tmp"
  mv -f "$tmp" "$endpoints"
}
rotate_in() { in_rotation[$1]=1; write_endpoints; }
rotate_out() { unset "in_rotation[$1]"; write_endpoints; }

start_instance() {
  local i=$1 port; port=$(port_of "$i")
  LIGHTLLM_RUN_DIR="$work/run" "$work/bin/lightllm" launch --normal \
    --model_dir "$MODEL_DIR" --model_name "$MODEL_NAME" --port "$port" --host 127.0.0.1 \
    --instance "$(name_of "$i")" --threads 1 --running_max_req_size 2 --max_waiting_reqs 64 \
    --max_req_total_len 512 --max_total_token_num 4096 --graceful_timeout 20s \
    --log_format json >"$work/logs/$(name_of "$i").log" 2>&1 &
  launcher_pid[$i]=$!
}

wait_healthy() { # wait_healthy I SECONDS
  local port; port=$(port_of "$1")
  for _ in $(seq $(($2 * 5))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && return 0
    kill -0 "${launcher_pid[$1]}" 2>/dev/null || { echo "instance $1 exited; log:" >&2; tail -20 "$work/logs/$(name_of "$1").log" >&2; return 1; }
    sleep 0.2
  done
  echo "instance $1 not healthy after $2 s" >&2; return 1
}

gauge() { # gauge PORT NAME: the first sample of a gauge on an instance's /metrics
  curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n || index($1, n "{") == 1 { print $2; exit }'
}

# --- requests ---------------------------------------------------------------

# complete PROMPT MAX_TOKENS [URL]: one non-streaming completion; prints
# "<http status> <served instance|->".
complete() {
  local url=${3:-$proxy} hdr; hdr=$(mktemp "$work/hdr.XXXXXX")
  local body
  body=$(printf '{"model":"%s","prompt":"%s","max_tokens":%d,"temperature":0,"ignore_eos":true}' "$MODEL_NAME" "$1" "$2")
  local code; code=$(curl -s -o /dev/null -D "$hdr" -w '%{http_code}' -H 'Content-Type: application/json' \
    --max-time 120 -d "$body" "$url/v1/completions" || true)
  echo "$code $(served_instance "$hdr")"
  rm -f "$hdr"
}

served_instance() { # the instance named by x-gateway-destination-endpoint-served
  local ep; ep=$(awk -F': ' 'tolower($1) == "x-gateway-destination-endpoint-served" { gsub(/\r/, "", $2); print $2 }' "$1")
  [ -n "$ep" ] || { echo -; return; }
  echo $(( ${ep##*:} - BASE_PORT ))
}

# tally FILE: "i:count ..." of the served-instance column of FILE.
tally() { awk '{ n[$2]++ } END { for (k in n) printf "%s:%d ", k, n[k] }' "$1" | tr ' ' '\n' | sort | tr '\n' ' '; }

story="Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her big red ball. One day, she saw a small dog under a tree. The dog was sad because it was lost and could not find its home. Lily wanted to help the dog. She looked at the dog and said, do not be sad, I will help you find your home. They walked together past the pond, past the tall trees and past the little shop where the kind old man sold sweet cakes. At last they saw a blue house with a green door. A boy ran out and hugged the dog. Thank you, Lily, said the boy, you are a good friend. Lily smiled and felt happy inside. The sun was going down, so she waved goodbye and walked home to tell her mom about her big day."

declare -a summary=()
failures=0
record() { # record CHECK PASS|FAIL DETAIL
  summary+=("| $1 | $2 | $3 |")
  [ "$2" = PASS ] || failures=$((failures + 1))
  log "$1: $2 — $3"
}

# --- checks -----------------------------------------------------------------

check_saturated() {
  # Saturate instance 1 directly (not through the proxy): long generations,
  # more than its two running slots, so requests queue there.
  local sat=1 port; port=$(port_of 1)
  local n=12
  for attempt in 1 2 3; do
    for _ in $(seq $n); do
      curl -s -o /dev/null --max-time 120 -H 'Content-Type: application/json' \
        -d "$(printf '{"model":"%s","prompt":"tell me a story","max_tokens":480,"temperature":0,"ignore_eos":true}' "$MODEL_NAME")" \
        "http://127.0.0.1:$port/v1/completions" &
      bg_pids+=($!)
    done
    local waiting=0
    for _ in $(seq 50); do
      waiting=$(gauge "$port" lightllm_num_requests_waiting); waiting=${waiting%.*}
      [ "${waiting:-0}" -ge 2 ] && break
      sleep 0.1
    done
    sleep 0.3 # > the EPP's 50 ms scrape interval
    : >"$results/saturated"
    for k in $(seq 6); do complete "a short tale number $k $RANDOM" 8 >>"$results/saturated"; done
    local after; after=$(gauge "$port" lightllm_num_requests_waiting); after=${after%.*}
    for pid in "${bg_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    bg_pids=()
    if [ "${waiting:-0}" -ge 2 ] && [ "${after:-0}" -ge 1 ]; then
      local to_sat ok
      to_sat=$(awk -v s=$sat '$2 == s' "$results/saturated" | wc -l)
      ok=$(awk '$1 == 200' "$results/saturated" | wc -l)
      if [ "$to_sat" -eq 0 ] && [ "$ok" -eq 6 ]; then
        record "less-loaded routing" PASS "instance $sat saturated (waiting $waiting before, $after after); 6/6 requests elsewhere: $(tally "$results/saturated")"
      else
        record "less-loaded routing" FAIL "instance $sat saturated (waiting $waiting/$after); $to_sat/6 sent to it, $ok/6 OK: $(tally "$results/saturated")"
      fi
      sleep 2
      return
    fi
    log "saturation did not hold (waiting $waiting → ${after:-0}); retrying with more load"
    n=$((n * 2)); sleep 2
  done
  record "less-loaded routing" FAIL "could not keep instance $sat saturated"
}

check_prefix() {
  : >"$results/prefix"
  for k in $(seq 6); do complete "$story" 8 >>"$results/prefix"; done
  # The same long prefix with a different ending also sticks.
  for k in $(seq 3); do complete "$story And then number $k happened." 8 >>"$results/prefix"; done
  local distinct ok
  distinct=$(awk '{ print $2 }' "$results/prefix" | sort -u | wc -l)
  ok=$(awk '$1 == 200' "$results/prefix" | wc -l)
  if [ "$distinct" -eq 1 ] && [ "$ok" -eq 9 ]; then
    record "prefix stickiness" PASS "9/9 requests sharing a ${#story}-byte prefix on instance $(awk 'NR==1 { print $2 }' "$results/prefix")"
  else
    record "prefix stickiness" FAIL "$ok/9 OK, spread over $distinct instances: $(tally "$results/prefix")"
  fi
}

check_removal() {
  local out=$INSTANCES
  rotate_out "$out"; sleep 1
  : >"$results/removed"
  for k in $(seq 10); do complete "removal check $k $RANDOM" 8 >>"$results/removed"; done
  local to_out ok alive
  to_out=$(awk -v s="$out" '$2 == s' "$results/removed" | wc -l)
  ok=$(awk '$1 == 200' "$results/removed" | wc -l)
  alive=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(port_of "$out")/health")
  rotate_in "$out"; sleep 1
  : >"$results/readded"
  for k in $(seq 10); do complete "re-added check $k $RANDOM" 8 >>"$results/readded"; done
  local back; back=$(awk -v s="$out" '$2 == s' "$results/readded" | wc -l)
  if [ "$to_out" -eq 0 ] && [ "$ok" -eq 10 ] && [ "$alive" = 200 ]; then
    record "removal from rotation" PASS "instance $out out of the endpoints file (still healthy): 0/10 requests; back in: $back/10"
  else
    record "removal from rotation" FAIL "instance $out removed: $to_out/10 still sent to it, $ok/10 OK (its /health $alive)"
  fi
}

# client LABEL: streaming requests through the proxy until $work/stop
# exists; one line per request: start end http-status served done(0|1).
client() {
  local out="$results/drain.$1" k=0
  while [ ! -e "$work/stop" ]; do
    k=$((k + 1))
    local hdr body start code done
    hdr=$(mktemp "$work/hdr.XXXXXX"); body=$(mktemp "$work/body.XXXXXX")
    start=$(now)
    code=$(curl -s -N -o "$body" -D "$hdr" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
      -d "$(printf '{"model":"%s","prompt":"drain %s %d","max_tokens":96,"temperature":0,"ignore_eos":true,"stream":true}' "$MODEL_NAME" "$1" "$k")" \
      "$proxy/v1/completions" || true)
    done=0; grep -q 'data: \[DONE\]' "$body" && done=1
    echo "$start $(now) $code $(served_instance "$hdr") $done" >>"$out"
    rm -f "$hdr" "$body"
  done
}

# direct_stream I LABEL: one long streaming request straight to instance I,
# recorded like client's.
direct_stream() {
  local hdr body start code done
  hdr=$(mktemp "$work/hdr.XXXXXX"); body=$(mktemp "$work/body.XXXXXX")
  start=$(now)
  code=$(curl -s -N -o "$body" -D "$hdr" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
    -d "$(printf '{"model":"%s","prompt":"drain direct %s","max_tokens":480,"temperature":0,"ignore_eos":true,"stream":true}' "$MODEL_NAME" "$2")" \
    "http://127.0.0.1:$(port_of "$1")/v1/completions" || true)
  done=0; grep -q 'data: \[DONE\]' "$body" && done=1
  echo "$start $(now) $code $1 $done" >>"$results/drain.direct$2"
  rm -f "$hdr" "$body"
}

check_drain() {
  local victim=2 clients=4
  rm -f "$work/stop"
  for c in $(seq $clients); do client "$c" & bg_pids+=($!); done
  sleep 3
  # What Kubernetes does: the pod leaves the endpoints (the EPP drops it as
  # soon as it is marked for deletion), preStop waits, then SIGTERM.
  rotate_out "$victim"; sleep 1
  # Requests the gateway routed just before the pod left the rotation: two
  # long streams straight to the victim, in flight when SIGTERM lands.
  for c in 1 2; do direct_stream "$victim" "$c" & bg_pids+=($!); done
  sleep 0.2
  local t_term; t_term=$(now)
  log "SIGTERM to instance $victim (launcher pid ${launcher_pid[$victim]})"
  kill -TERM "${launcher_pid[$victim]}"
  local rc=0 waited=0
  wait "${launcher_pid[$victim]}" || rc=$?
  waited=$(awk -v a="$t_term" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  unset "launcher_pid[$victim]"
  sleep 3
  touch "$work/stop"
  for pid in "${bg_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bg_pids=()
  cat "$results"/drain.* >"$results/drain"
  local total failed on_victim finished_late
  total=$(wc -l <"$results/drain")
  failed=$(awk '$3 != 200 || $5 != 1' "$results/drain" | wc -l)
  on_victim=$(awk -v s=$victim '$4 == s' "$results/drain" | wc -l)
  # requests on the victim still streaming when SIGTERM arrived, finished by the drain
  finished_late=$(awk -v s=$victim -v t="$t_term" '$4 == s && $2 > t && $3 == 200 && $5 == 1' "$results/drain" | wc -l)
  if [ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] && [ "$total" -gt 0 ]; then
    record "drain on SIGTERM" PASS "$total streamed requests, 0 failed; instance $victim served $on_victim ($finished_late finished after SIGTERM), exited 0 in ${waited} s"
  else
    record "drain on SIGTERM" FAIL "$total streamed requests, $failed failed or incomplete; launcher exit $rc after ${waited} s"
  fi
}

# --- main -------------------------------------------------------------------

build
epp_config "$endpoints" >"$work/epp-config.yaml"
: >"$endpoints"; write_endpoints

for p in $(for i in $(seq "$INSTANCES"); do port_of "$i"; done) "$grpc_port" "$health_port" "$epp_metrics_port" "$proxy_port"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "scaleout: port $p is in use; set BASE_PORT to a free range" >&2; exit 1
  fi
done
log "starting $INSTANCES instances of $MODEL_DIR"
for i in $(seq "$INSTANCES"); do start_instance "$i"; done
for i in $(seq "$INSTANCES"); do
  wait_healthy "$i" 180
  rotate_in "$i" # in rotation only once healthy: file mode has no health checks
done

log "starting the EPP (grpc $grpc_port) and epp-proxy ($proxy)"
GOMAXPROCS=1 "$epp" --pool-name lightllm-local --pool-namespace local \
  --config-file "$work/epp-config.yaml" --grpc-port "$grpc_port" --grpc-health-port "$health_port" \
  --metrics-port "$epp_metrics_port" --secure-serving=false --tracing=false \
  --metrics-endpoint-auth=false --enable-pprof=false --zap-encoder json >"$work/logs/epp.log" 2>&1 &
epp_pid=$!
wait_tcp "$grpc_port" 60 || { tail -20 "$work/logs/epp.log" >&2; echo "scaleout: the EPP did not come up" >&2; exit 1; }
"$work/bin/lightllm" epp-proxy --listen "127.0.0.1:$proxy_port" --picker "127.0.0.1:$grpc_port" \
  >"$work/logs/proxy.log" 2>&1 &
proxy_pid=$!
wait_tcp "$proxy_port" 30 || { cat "$work/logs/proxy.log" >&2; echo "scaleout: epp-proxy did not come up" >&2; exit 1; }
sleep 1 # first scrape of every instance

first=$(complete "Once upon a time" 8)
[ "${first%% *}" = 200 ] || { echo "scaleout: first request through the proxy failed ($first)" >&2; exit 1; }

check_saturated
check_prefix
check_removal
check_drain

{
  echo "Local scale-out run, $(date -u +%Y-%m-%dT%H:%MZ): $INSTANCES × \`lightllm launch --normal\` (stories260K, CPU, 1 thread,"
  echo "running_max_req_size 2) on loopback; EPP llm-d-router $EPP_VERSION ($epp_how) in file-discovery mode"
  echo "with deploy/kubernetes/epp.yaml's EndpointPickerConfig; \`lightllm epp-proxy\` in front."
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${summary[@]}"
} | tee "$work/summary.md"
[ -n "${SUMMARY_OUT:-}" ] && cp "$work/summary.md" "$SUMMARY_OUT"
[ "$failures" -eq 0 ]
