#!/usr/bin/env bash
# Dead code check (issue 17): golang.org/x/tools/cmd/deadcode, pinned, on
# ./cmd/... (what the shipped binaries can reach). Every function it reports
# must be listed in scripts/deadcode-allow.txt as "<file> <func>" (no line
# numbers, so edits elsewhere in a file do not break the list); anything
# else fails. Remove an entry together with the code it names; add one only
# with a comment saying why the function must stay.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.52.0
allowfile=scripts/deadcode-allow.txt
out=$(go run "golang.org/x/tools/cmd/deadcode@$version" ./cmd/...)
allow=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$allowfile" | awk '{print $1" "$2}')
fail=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  file=${line%%:*}
  fn=${line##*unreachable func: }
  if ! grep -qxF "$file $fn" <<<"$allow"; then
    echo "unreachable from ./cmd/... and not in $allowfile: $line"
    fail=1
  fi
done <<<"$out"
# Entries whose function is gone (or now reachable) are stale: drop them.
# They are reported but do not fail the check, so removing dead code (the
# point of the list) never breaks CI on its own.
while IFS= read -r entry; do
  [ -z "$entry" ] && continue
  file=${entry%% *}
  fn=${entry#* }
  if ! grep -qF "$file:" <<<"$out" || ! grep -q "^$file:.*unreachable func: $fn\$" <<<"$out"; then
    echo "warning: stale entry in $allowfile (no longer reported), remove it: $entry"
  fi
done <<<"$allow"
exit $fail
