# Shared by the A/B benchmarks (bench/malloc_tune.sh, fused_scan.sh, attention_eval.sh), sourced.
# The caller defines `run MODE REP`, which prints "cpu_seconds extra" on one line, and may define
# `ab_after_rep REP` (a check after both modes of a rep ran).

declare -A AB_CPU

# ab_reps A B REPS FORMAT: runs mode A then mode B, REPS times, alternating, and prints each run
# with printf FORMAT MODE REP CPU EXTRA; the CPU seconds collect in AB_CPU[MODE].
ab_reps() {
  local a="$1" b="$2" reps="$3" fmt="$4" r mode s x
  for r in $(seq 1 "$reps"); do
    for mode in "$a" "$b"; do
      read -r s x < <(run "$mode" "$r")
      AB_CPU[$mode]+="$s "
      # shellcheck disable=SC2059
      printf "$fmt" "$mode" "$r" "$s" "$x"
    done
    if declare -F ab_after_rep > /dev/null; then ab_after_rep "$r"; fi
  done
}

# ab_median MODE: the median of MODE's CPU seconds.
ab_median() {
  echo "${AB_CPU[$1]}" | tr ' ' '\n' | grep . | sort -g |
    awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
