#!/usr/bin/env bash
# Installs what the tests need beyond the Go toolchain, outside the
# repository, on a fresh machine:
#   - Node.js and npm (Debian/Ubuntu packages), when `node` is missing and
#     this runs as root (otherwise it says what to install);
#   - the official OpenAI Node client, pinned, into a cache directory:
#     $OPENAI_NODE_DIR, default ~/.cache/lightllm-test/openai. The tests
#     (pkg/apiserver TestOpenAINodeClient, test/e2e TestAPI and
#     TestAPIChatAndUTF8) find it there, or through OPENAI_NODE_DIR, and
#     skip with a message when it is absent.
# Idempotent: an existing install of the pinned version is kept. Needs the
# npm registry; exits non-zero when it cannot install.
set -euo pipefail

OPENAI_VERSION="${OPENAI_NODE_VERSION:-6.49.0}"
dir="${OPENAI_NODE_DIR:-$HOME/.cache/lightllm-test/openai}"

say() { printf 'install-test-deps: %s\n' "$*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing nodejs and npm (apt)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  else
    say "node and npm are missing: install Node.js >= 18 (e.g. apt-get install nodejs npm), then rerun"
    exit 1
  fi
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 18 ]; then
  say "node $(node --version) is too old for the OpenAI client (needs >= 18)"
  exit 1
fi

installed=""
if [ -f "$dir/node_modules/openai/package.json" ]; then
  installed=$(node -p "require('$dir/node_modules/openai/package.json').version" 2>/dev/null || true)
fi
if [ "$installed" = "$OPENAI_VERSION" ]; then
  say "openai $installed already in $dir"
  exit 0
fi

mkdir -p "$dir"
[ -f "$dir/package.json" ] || printf '{"name":"lightllm-test-deps","private":true}\n' >"$dir/package.json"
say "installing openai@$OPENAI_VERSION into $dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "openai@$OPENAI_VERSION" >&2
node -e "require('$dir/node_modules/openai')" || { say "openai did not load from $dir"; exit 1; }
say "done: tests find it at $dir (or set OPENAI_NODE_DIR=$dir)"
