#!/usr/bin/env bash
# Configures and builds seqlab into build/ (Release, Ninja). Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" ${1:+--target "$@"}
