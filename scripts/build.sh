#!/usr/bin/env bash
# Configures and builds seqlab into build/ (Release, Ninja): the library, the CLI, the tests and,
# when pybind11 and python3-torch are installed, the Python module build/python/seqlab
# (docs/python.md). Extra arguments are ninja targets.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" ${1:+--target "$@"}
