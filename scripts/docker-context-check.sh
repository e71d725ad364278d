#!/usr/bin/env bash
# Checks the Dockerfile without a container builder (none can pull base
# images on a host without registry access): every COPY source exists, and
# the build stage's command, run on exactly the files .dockerignore lets
# into the context, builds every role binary and `lightllm version` runs.
# Usage: scripts/docker-context-check.sh   (from anywhere; exit 0 = ok)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { echo "docker-context-check: $*" >&2; exit 1; }

# 1. COPY sources (not --from stages) exist.
while read -r src; do
	[ -e "$src" ] || fail "Dockerfile copies $src, which does not exist"
done < <(awk '$1 == "COPY" && $2 !~ /^--from/ { for (i = 2; i < NF; i++) print $i }' Dockerfile)

# 2. The context .dockerignore leaves: go.mod, go.sum, cmd, pkg, shm without
# tests and testdata (kept in step with .dockerignore's allow list).
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
for p in $(sed -n 's/^!\(.*[^/]\)\/\{0,1\}$/\1/p' .dockerignore); do
	[ -e "$p" ] || fail ".dockerignore allows $p, which does not exist"
	cp -r "$p" "$ctx/"
done
find "$ctx" -name '*_test.go' -delete
find "$ctx" -type d -name testdata -prune -exec rm -rf {} +

# 3. The build stage's command for BACKEND=cpu.
(cd "$ctx" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/out/" ./cmd/...)
for b in lightllm apiserver router detokenizer metric health infer; do
	[ -x "$ctx/out/$b" ] || fail "the build made no $b binary"
done
file_out=$(file "$ctx/out/lightllm" 2>/dev/null || true)
case "$file_out" in *"statically linked"*|"") ;; *) fail "lightllm is not static: $file_out" ;; esac
"$ctx/out/lightllm" version
echo "docker-context-check: ok (COPY sources exist; the context builds all 7 binaries, static)"
