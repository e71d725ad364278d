#!/usr/bin/env bash
# Installs what the tests need beyond the Go toolchain, outside the
# repository, on a fresh machine:
#   - Node.js and npm (Debian/Ubuntu packages), when `node` is missing and
#     this runs as root (otherwise it says what to install);
#   - Debian's chromium, for the browser test of the built-in pages
#     (test/e2e TestWebPages, driven with chromedp), when no chromium is on
#     $PATH and this runs as root; that test fails under CI=true without it;
#   - the official OpenAI Node client, pinned, into a cache directory:
#     $OPENAI_NODE_DIR, default ~/.cache/lightllm-test/openai. The tests
#     (pkg/apiserver TestOpenAINodeClient, test/e2e TestAPI and
#     TestAPIChatAndUTF8) find it there, or through OPENAI_NODE_DIR, and
#     skip with a message when it is absent;
#   - the `ollama` npm client, pinned, into $OLLAMA_NODE_DIR, default
#     ~/.cache/lightllm-test/ollama (test/e2e TestOllamaAPI drives the
#     server's ollama API with it).
# Idempotent: an existing install of the pinned version is kept. Needs the
# npm registry; exits non-zero when it cannot install.
set -euo pipefail

OPENAI_VERSION="${OPENAI_NODE_VERSION:-6.49.0}"
dir="${OPENAI_NODE_DIR:-$HOME/.cache/lightllm-test/openai}"

say() { printf 'install-test-deps: %s\n' "$*" >&2; }

# Chromium first: the Node part below may end the script early.
chromium_failed=0
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium (apt)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
      say "could not install chromium; the browser test will fail in CI"
      chromium_failed=1
    fi
  else
    say "chromium is missing: install it (e.g. apt-get install chromium) for the browser test"
    chromium_failed=1
  fi
fi
trap '[ "$chromium_failed" -eq 0 ] || exit 1' EXIT

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

# install PKG VERSION DIR ENVNAME: npm install PKG@VERSION into DIR unless
# that version is there already.
install() {
  local pkg=$1 version=$2 dir=$3 env=$4 installed=""
  if [ -f "$dir/node_modules/$pkg/package.json" ]; then
    installed=$(node -p "require('$dir/node_modules/$pkg/package.json').version" 2>/dev/null || true)
  fi
  if [ "$installed" = "$version" ]; then
    say "$pkg $installed already in $dir"
    return
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || printf '{"name":"lightllm-test-deps","private":true}\n' >"$dir/package.json"
  say "installing $pkg@$version into $dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
  node -e "require('$dir/node_modules/$pkg')" || { say "$pkg did not load from $dir"; exit 1; }
  say "done: tests find it at $dir (or set $env=$dir)"
}

install openai "$OPENAI_VERSION" "$dir" OPENAI_NODE_DIR
install ollama "${OLLAMA_NODE_VERSION:-0.6.4}" "${OLLAMA_NODE_DIR:-$HOME/.cache/lightllm-test/ollama}" OLLAMA_NODE_DIR
