#!/usr/bin/env bash
# Verifies the systemd units with `systemd-analyze verify` (run by CI via
# scripts/test.sh). Installs Debian's systemd package when the tool is
# missing. ExecStart= must name an existing executable for verify, so the
# units are checked from a copy whose /usr/local/bin is a temp install dir
# of stand-in executables. Any diagnostic, even a warning, fails the check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v systemd-analyze >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing systemd (for systemd-analyze)..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends systemd >/dev/null
  fi
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze not found and could not be installed (apt-get install systemd)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/units"
for u in "$here"/*.service "$here"/*.target; do
  sed "s#/usr/local/bin/#$tmp/bin/#g" "$u" >"$tmp/units/$(basename "$u")"
done
for exe in $(grep -ho "$tmp/bin/[A-Za-z0-9_-]*" "$tmp"/units/* | sort -u); do
  ln -sf "$(type -P true)" "$exe"
done

roles="metric router detokenizer infer apiserver health"
instance=ci-check
units=("$tmp/units/lightllm@$instance.target" "$tmp/units/lightllm-instance@$instance.service")
for r in $roles; do
  [ -f "$here/lightllm-$r@.service" ] || { echo "missing unit lightllm-$r@.service" >&2; exit 1; }
  units+=("$tmp/units/lightllm-$r@$instance.service")
done
# verify reports a missing Requires= unit but not a missing Wants= one.
for ref in $(grep -ho 'lightllm[a-z-]*@%i\.[a-z]*' "$here"/*.service "$here"/*.target | sort -u); do
  [ -f "$here/${ref/\%i/}" ] || { echo "a unit refers to $ref, which does not exist" >&2; exit 1; }
done

rc=0
out=$(SYSTEMD_UNIT_PATH="$tmp/units:" systemd-analyze verify --man=no "${units[@]}" 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "systemd-analyze verify failed (exit $rc):" >&2
  echo "$out" >&2
  exit 1
fi
echo "systemd units OK: ${#units[@]} units verified with $(systemd-analyze --version | head -1)"

# Exposure as `systemd-analyze security` rates it (0 = locked down, 10 =
# unprotected); above 4.0 ("MEDIUM") fails the check.
for u in "${units[@]}"; do
  case "$u" in *.target) continue ;; esac
  line=$(SYSTEMD_UNIT_PATH="$tmp/units:" systemd-analyze security --offline=yes --no-pager "$(basename "$u")" 2>&1 | tail -1)
  score=$(printf '%s\n' "$line" | grep -o '[0-9]*\.[0-9]' | tail -1)
  echo "  $(basename "$u"): exposure ${score:-?}"
  if [ -z "$score" ] || awk -v s="$score" 'BEGIN{exit !(s > 4.0)}'; then
    echo "systemd-analyze security: $line" >&2
    exit 1
  fi
done
