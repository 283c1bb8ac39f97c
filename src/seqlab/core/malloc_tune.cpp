#include "seqlab/core/malloc_tune.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace seqlab {

bool tune_malloc() {
  const char* off = std::getenv("SEQLAB_MALLOC_TUNE");
  if (off && std::strcmp(off, "0") == 0) return false;
  for (const char* own :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(own)) return false;
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2). Setting it
  // turns off glibc's dynamic threshold, so the trim threshold must be set with it: a trim
  // threshold alone leaves the mmap threshold at 128 KiB and multiplies the faults (measured:
  // 22x) instead.
  bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1 && ok;
  ok = mallopt(M_TOP_PAD, 64 << 20) == 1 && ok;
  // Blocks above the largest threshold (an LM's logits and their gradients: 128 MiB at batch 16,
  // 256 tokens, 8192 types) would still be mapped afresh and faulted in, zeroed, every step; no
  // mmap at all keeps them on the heap too. A thread arena too small for a block retries in the
  // main arena, and glibc still maps memory when the heap cannot grow.
  ok = mallopt(M_MMAP_MAX, 0) == 1 && ok;
  return ok;
}

}  // namespace seqlab
