#!/usr/bin/env bash
# Runs every `go test -fuzz` target for a short budget (FUZZTIME, default 5s
# each; CI uses the default). A longer run: FUZZTIME=10m scripts/fuzz-short.sh.
# Targets are discovered from the source so a new Fuzz func is never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${FUZZTIME:-5s}"
status=0
while IFS=: read -r file _ rest; do
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$rest")
  pkg="./$(dirname "$file")"
  echo "--- fuzz $pkg $name ($budget)"
  if ! go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" -fuzzminimizetime 5s >/tmp/fuzz.$$.log 2>&1; then
    cat /tmp/fuzz.$$.log; status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sed 's|^\./||')
rm -f /tmp/fuzz.$$.log
exit $status
