#!/usr/bin/env bash
# Installs the peer's npm package, node-llama-cpp at the version package.json and package-lock.json pin: its prebuilt
# CPU binding (bench.sh, generate.sh) and the llama.cpp source it ships as a git bundle (llama.sh builds that). It goes
# into a cache folder outside the repository, so every clone shares one install and one llama.cpp build. Idempotent.
#   PEER_DIR (default ~/.cache/pagoda-peer) is where it goes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${PEER_DIR:-$HOME/.cache/pagoda-peer}
mkdir -p "$dir"
# -f: a copy made from a read-only source is read-only itself; replace it rather than fail.
cp -f "$here/package.json" "$here/package-lock.json" "$here/bench.mjs" "$here/membw.c" "$dir/"
cd "$dir"
# npm 11 refuses `npm ci` on this lock ("Missing: @node-llama-cpp/win-x64@ from lock file": it wants an entry for
# every other platform's optional binary, which the lock, like one npm 11 writes itself, leaves out); `npm install`
# then installs the same locked versions and integrity hashes.
if [ ! -d node_modules/node-llama-cpp ]; then
  npm ci --no-audit --no-fund --omit=optional >/dev/null 2>&1 || npm install --no-audit --no-fund --omit=optional >/dev/null
fi
[ -x membw ] || gcc -O3 -march=native -fopenmp -o membw membw.c
node -e "import('node-llama-cpp').then(async m => { const l = await m.getLlama({gpu: false, build: 'never'}); console.error('peer ready: llama.cpp ' + l.llamaCppRelease.release + ' in $dir'); })"
