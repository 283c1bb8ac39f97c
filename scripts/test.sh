#!/usr/bin/env bash
# The README's test command: installs what it needs (apt), builds, runs every test with ctest.
# Works on a fresh Debian 12 machine; a few minutes on 2 cores after the packages are installed.
#
#   scripts/test.sh              the normal build (build/) and test run, what CI does
#   scripts/test.sh --sanitize   builds the library, CLI and tests once more into build-asan/ with
#                                -fsanitize=address,undefined (gcc) and runs them there: any ASan
#                                or UBSan report fails its test. A full rebuild, 20+ minutes on
#                                2 cores. LibTorch itself is not instrumented.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
case "${1:-}" in
  "") ;;
  --sanitize) sanitize=1 ;;
  *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
esac
bash scripts/setup.sh
if [ $sanitize -eq 0 ]; then
  bash scripts/build.sh
  cd build
  ctest --output-on-failure -j"$(nproc)"
  exit 0
fi

# -g1: line numbers in the reports. halt_on_error: the first UBSan report ends the test with a
# failure instead of a line in a log nobody reads. detect_leaks: LeakSanitizer at exit.
flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g1"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
# Instrumented code runs 2-5x slower: a longer per-test timeout than ctest's default.
ctest --output-on-failure -j"$(nproc)" --timeout 3000
