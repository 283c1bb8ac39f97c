#!/usr/bin/env bash
# Builds the two peers of issue 35 from their own git sources, for bench/peers/run.sh:
#
#   bench/peers/build.sh RWKV_GIT GGML_GIT OUT
#
#   RWKV_GIT  a git repository (or bare git directory) of rwkv.cpp (github.com/RWKV/rwkv.cpp)
#   GGML_GIT  a git repository of ggml (github.com/ggml-org/ggml) that holds the commit rwkv.cpp
#             pins as its `ggml` submodule
#   OUT       where everything goes (created):
#     OUT/src/rwkv.cpp        clone of RWKV_GIT at RWKV_REF (default HEAD), its ggml/ a checkout
#                             of GGML_GIT at the pinned commit (no network: the submodule is
#                             filled from GGML_GIT, not from its url)
#     OUT/src/ggml            clone of GGML_GIT at GGML_REF (default: the same pinned commit)
#     OUT/src/rwkv.cpp/build  librwkv.so (Release, AVX/AVX2/FMA/F16C on, AVX-512 off, GGML_NATIVE
#                             off: the instruction set seqlab's kernels use); built in the
#                             checkout so rwkv.cpp's python/quantize.py finds it
#     OUT/build/ggml          ggml's gpt-2 example: gpt-2-backend, gpt-2-quantize
#     OUT/bin/rwkv_bench      bench/peers/rwkv_bench.c (ours) linked against librwkv
#     OUT/bin/gpt2_bench      bench/peers/gpt2_bench.cpp (ours) with the example compiled in
#     OUT/peers.json          the commits, flags and compiler
#
# Needs git, cmake >= 3.21, a C/C++ compiler (Debian: cmake build-essential). Downloads nothing.
# Environment: JOBS (2), RWKV_REF (HEAD), GGML_REF (the pinned commit), CC/CXX as usual.
set -euo pipefail
usage() { echo "usage: bench/peers/build.sh RWKV_GIT GGML_GIT OUT" >&2; exit 2; }
[ $# -eq 3 ] || usage
RWKV_GIT=$1 GGML_GIT=$2 OUT=$3
HERE=$(cd "$(dirname "$0")" && pwd)
JOBS=${JOBS:-2}
for g in "$RWKV_GIT" "$GGML_GIT"; do
  git -C "$g" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "build.sh: $g is not a git repository (clone the peer first)" >&2; exit 2; }
done
for tool in git cmake cc c++; do
  command -v $tool >/dev/null || { echo "build.sh: $tool not found (apt-get install cmake build-essential)" >&2; exit 2; }
done
mkdir -p "$OUT/src" "$OUT/build" "$OUT/bin"
OUT=$(cd "$OUT" && pwd)

# fresh_clone SRC DIR REF: DIR becomes a clone of SRC at REF (reused when already there). A
# mirror may lack some large blobs (rwkv.cpp's tests/*.bin fixtures): those paths are left out
# with a sparse checkout and listed in DIR/.missing-blobs, so nothing that needs them is built.
fresh_clone() {
  local src=$1 dir=$2 ref=$3
  ref=$(git -C "$src" rev-parse "$ref^{commit}")
  # Already there: leave the files (and their times, so a rerun rebuilds nothing) alone.
  [ "$(cat "$dir/.bench-peers-ref" 2>/dev/null)" = "$ref" ] && return 0
  [ -d "$dir/.git" ] || git clone -q --no-checkout "$src" "$dir"
  git -C "$dir" fetch -q "$src" "$ref" 2>/dev/null || true
  git -C "$dir" ls-tree -r "$ref" | awk -F'\t' '$1 ~ / blob / {split($1, a, " "); print a[3] "\t" $2}' |
    while IFS=$'\t' read -r sha path; do
      git -C "$dir" cat-file -e "$sha" 2>/dev/null || printf '%s\n' "$path"
    done >"$dir/.missing-blobs"
  if [ -s "$dir/.missing-blobs" ]; then
    echo "build.sh: $(wc -l <"$dir/.missing-blobs") blob(s) absent from $src, left out:" \
      "$(tr '\n' ' ' <"$dir/.missing-blobs")" >&2
    # git checkout would read every blob; write the others out of the index one by one instead.
    git -C "$dir" update-ref --no-deref HEAD "$(git -C "$dir" rev-parse "$ref^{commit}")"
    git -C "$dir" read-tree "$ref"
    git -C "$dir" ls-files | grep -vxF -f "$dir/.missing-blobs" | git -C "$dir" checkout-index -f --stdin
    git -C "$dir" update-index --skip-worktree $(cat "$dir/.missing-blobs")
  else
    git -C "$dir" -c advice.detachedHead=false checkout -q --force "$ref"
  fi
  echo "$ref" >"$dir/.bench-peers-ref"
}

# 1. rwkv.cpp, and ggml at the commit its submodule pins.
RWKV_REF=${RWKV_REF:-HEAD}
RWKV_REF=$(git -C "$RWKV_GIT" rev-parse "$RWKV_REF^{commit}")
fresh_clone "$RWKV_GIT" "$OUT/src/rwkv.cpp" "$RWKV_REF"
PIN=$(git -C "$OUT/src/rwkv.cpp" ls-tree HEAD ggml | awk '$2 == "commit" {print $3}')
[ -n "$PIN" ] || { echo "build.sh: rwkv.cpp at $RWKV_REF has no ggml submodule" >&2; exit 2; }
git -C "$GGML_GIT" cat-file -e "$PIN^{commit}" 2>/dev/null ||
  { echo "build.sh: $GGML_GIT lacks rwkv.cpp's pinned ggml commit $PIN" >&2; exit 2; }
fresh_clone "$GGML_GIT" "$OUT/src/rwkv.cpp/ggml" "$PIN"

ISA=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
     -DGGML_AVX512=OFF -DGGML_CCACHE=OFF)
# RWKV_STANDALONE: the library only (its tests need the fixtures a mirror may lack). The build
# directory is the checkout's build/, where rwkv.cpp's python/ scripts look for librwkv.so.
RB="$OUT/src/rwkv.cpp/build"
cmake -S "$OUT/src/rwkv.cpp" -B "$RB" -DCMAKE_BUILD_TYPE=Release -DRWKV_STANDALONE=ON \
  -DRWKV_AVX=ON -DRWKV_AVX2=ON -DRWKV_FMA=ON -DRWKV_AVX512=OFF -DRWKV_NATIVE=OFF \
  -DRWKV_BUILD_SHARED_LIBRARY=ON "${ISA[@]}" >"$OUT/build/rwkv.cmake.log"
cmake --build "$RB" -j "$JOBS" --target rwkv >"$OUT/build/rwkv.build.log"
LIBRWKV=$(find "$RB" -name 'librwkv.so' | head -1)
[ -n "$LIBRWKV" ] || { echo "build.sh: librwkv.so not built (see $OUT/build/rwkv.build.log)" >&2; exit 1; }

# Our driver (bench/peers/rwkv_bench.c) against the library; rpath so run.sh needs no env.
cc -O2 -std=c11 -o "$OUT/bin/rwkv_bench" "$HERE/rwkv_bench.c" -I"$OUT/src/rwkv.cpp" \
  -L"$(dirname "$LIBRWKV")" -lrwkv -Wl,-rpath,"$(dirname "$LIBRWKV")" -lm

# 2. ggml's gpt-2 example, at the same pinned commit unless GGML_REF says otherwise.
GGML_REF=${GGML_REF:-$PIN}
[ "$GGML_REF" = "$PIN" ] || echo "build.sh: gpt-2 from ggml $GGML_REF, not rwkv.cpp's pin $PIN" >&2
GGML_REF=$(git -C "$GGML_GIT" rev-parse "$GGML_REF^{commit}")
fresh_clone "$GGML_GIT" "$OUT/src/ggml" "$GGML_REF"
cmake -S "$OUT/src/ggml" -B "$OUT/build/ggml" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_BUILD_EXAMPLES=ON -DGGML_BUILD_TESTS=OFF "${ISA[@]}" >"$OUT/build/ggml.cmake.log"
cmake --build "$OUT/build/ggml" -j "$JOBS" --target gpt-2-backend gpt-2-quantize common common-ggml \
  >"$OUT/build/ggml.build.log"
for b in gpt-2-backend gpt-2-quantize; do
  [ -x "$OUT/build/ggml/bin/$b" ] || { echo "build.sh: $b not built (see $OUT/build/ggml.build.log)" >&2; exit 1; }
done
# Our driver (bench/peers/gpt2_bench.cpp) compiles the example's main-backend.cpp in, unmodified.
GL=$(dirname "$(find "$OUT/build/ggml" -name 'libggml.so' | head -1)")
c++ -O2 -std=c++17 -o "$OUT/bin/gpt2_bench" "$HERE/gpt2_bench.cpp" \
  -I"$OUT/src/ggml/include" -I"$OUT/src/ggml/examples" -I"$OUT/src/ggml/examples/gpt-2" \
  "$(find "$OUT/build/ggml" -name 'libcommon-ggml.a' | head -1)" \
  "$(find "$OUT/build/ggml" -name 'libcommon.a' | head -1)" \
  -L"$GL" -lggml -lggml-base -lggml-cpu -Wl,-rpath,"$GL" -lpthread

/usr/bin/env python3 - "$OUT/peers.json" "$RWKV_GIT" "$RWKV_REF" "$PIN" "$GGML_GIT" "$GGML_REF" \
  "$(cc --version | head -1)" "${ISA[*]}" <<'PY'
import json, sys
path, rgit, rref, pin, ggit, gref, cc, isa = sys.argv[1:]
json.dump({"rwkv.cpp": {"git": rgit, "commit": rref, "ggml_submodule": pin},
           "ggml": {"git": ggit, "commit": gref, "same_as_rwkv_pin": gref == pin},
           "compiler": cc, "cmake_flags": "-DCMAKE_BUILD_TYPE=Release " + isa},
          open(path, "w"), indent=2)
open(path, "a").write("\n")
PY
echo "build.sh: peers built under $OUT (see $OUT/peers.json)" >&2
