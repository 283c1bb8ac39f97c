#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ and runs each for SECONDS (default 600), two at a time.
#
#   scripts/fuzz.sh [SECONDS]          all targets: safetensors config bpe state cli hf_config
#                                      hf_tokenizer serve_request chat_template quantized
#   FUZZ_TARGETS="bpe cli" scripts/fuzz.sh 60
#
# Builds build-rel/ (the normal Release library, gcc) and build-fuzz/ (clang, the code under
# test instrumented with libFuzzer + ASan + UBSan; fuzz/CMakeLists.txt). Each target starts from
# its seeds in fuzz/corpus/<target>/ and grows a working corpus in build-fuzz/corpus/<target>/.
# Prints executions, executions per second and corpus size per target. Exits 1 on a finding (a
# crash, a sanitizer report, a leak, a timeout over 10 s, an allocation over 2 GB); the input that
# caused it is in build-fuzz/findings/<target>/ and reproduces with
#   build-fuzz/fuzz_<target> build-fuzz/findings/<target>/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2; }
read -r -a targets <<<"${FUZZ_TARGETS:-safetensors config bpe state cli hf_config hf_tokenizer serve_request chat_template quantized}"
parallel="${FUZZ_JOBS:-2}"

# clang++ and its libFuzzer runtime (Debian: clang + libclang-rt-14-dev), as scripts/setup.sh
# installs packages.
missing=()
command -v clang++ >/dev/null || missing+=(clang)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null ||
  missing+=(libclang-rt-dev)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: fuzz needs root or sudo to install: ${missing[*]}" >&2; exit 2; }
    SUDO="sudo"
  fi
  echo "fuzz: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "fuzz: building build-rel (libseqlab.a) and build-fuzz" >&2
cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-rel -j"$(nproc)" --target seqlab
cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DSEQLAB_LIB="$PWD/build-rel/libseqlab.a" >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

run_one() {
  local t="$1" dir="build-fuzz/corpus/$1" out="build-fuzz/findings/$1"
  mkdir -p "$dir" "$out"
  cp -n fuzz/corpus/"$t"/* "$dir"/ 2>/dev/null || true
  # -malloc_limit_mb: one allocation over 2 GB is a finding (a size taken from the input).
  SEQLAB_FUZZ_QUIET=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-fuzz/fuzz_"$t" "$dir" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -malloc_limit_mb=2048 -artifact_prefix="$out/" -print_final_stats=1 \
    >"build-fuzz/fuzz_$t.log" 2>&1 && echo 0 >"build-fuzz/fuzz_$t.rc" || echo $? >"build-fuzz/fuzz_$t.rc"
}

declare -A pid_of
status=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $t for ${seconds}s (log: build-fuzz/fuzz_$t.log)" >&2
  rm -f "build-fuzz/fuzz_$t.rc"
  run_one "$t" &
  pid_of[$t]=$!
  running=$((running + 1))
done

printf '%-12s %12s %10s %8s %8s  %s\n' target executions exec/s seconds corpus result
for t in "${targets[@]}"; do
  wait "${pid_of[$t]}" || true
  rc="$(cat "build-fuzz/fuzz_$t.rc")"
  log="build-fuzz/fuzz_$t.log"
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  execs="$(stat number_of_executed_units)"
  rate="$(stat average_exec_per_sec)"
  took="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)"
  corpus="$(find "build-fuzz/corpus/$t" -type f | wc -l)"
  result=ok
  if [ "$rc" -ne 0 ] || compgen -G "build-fuzz/findings/$t/*" >/dev/null; then
    result="FINDING (exit $rc): see $log and build-fuzz/findings/$t/"
    status=1
  fi
  printf '%-12s %12s %10s %8s %8s  %s\n' "$t" "${execs:--}" "${rate:--}" "${took:--}" "$corpus" \
    "$result"
done
exit $status
