// glibc malloc settings for training. Each training step frees and reallocates the same few
// megabytes of activations and gradients; with glibc's defaults the heap top above its trim
// threshold goes back to the kernel after the step and every page of it faults in again, zeroed,
// on the next (about 500 faults a step on an MQAR cell of width 32, a tenth of its CPU time in
// the fault handler on this VM). Keeping that memory (a high trim threshold and top pad, and
// every block on the heap rather than mmap) removes the faults; the arithmetic is the same, so
// results are bitwise unchanged (tests/test_malloc_tune_cli.cpp) and a cell takes about a fifth
// less CPU time, an LM of the shipped teacher's shape about two fifths (bench/malloc_tune.sh
// prints the ratio).
#pragma once

namespace seqlab {

// Applies the settings unless the environment sets SEQLAB_MALLOC_TUNE=0 (or glibc's own
// MALLOC_*_ variables, which then win). Returns whether it applied them. Call once, first thing in
// main(), before LibTorch allocates.
bool tune_malloc();

}  // namespace seqlab
