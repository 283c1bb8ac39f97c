#!/usr/bin/env bash
# The README's test command: installs what it needs (apt), builds, runs every test with ctest.
# Works on a fresh Debian 12 machine; a few minutes on 2 cores after the packages are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
