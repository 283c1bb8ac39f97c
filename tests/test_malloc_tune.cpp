// core/malloc_tune.h: after tune_malloc(), a block far above glibc's largest mmap threshold
// (32 MiB) comes from the heap, so freeing it and asking again reuses the same pages instead of
// mapping fresh ones that fault in, zeroed. (That the settings leave results bitwise unchanged is
// tests/test_malloc_tune_cli.cpp.)
#include "seqlab/core/malloc_tune.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

TEST(MallocTuneHeap, LargeBlocksStayOnTheHeap) {
  if (const char* off = std::getenv("SEQLAB_MALLOC_TUNE"); off && std::strcmp(off, "0") == 0)
    GTEST_SKIP() << "SEQLAB_MALLOC_TUNE=0";
  ASSERT_TRUE(seqlab::tune_malloc());
  const size_t big = size_t{160} << 20;  // an LM's logits: batch 16 x 256 tokens x 10k types
  const auto mapped_before = mallinfo2().hblks;
  auto* p = static_cast<char*>(std::malloc(big));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, big);
  EXPECT_EQ(mallinfo2().hblks, mapped_before) << "a 160 MiB block was mapped, not on the heap";
  std::free(p);
  // Freed, it stays with the process (the trim threshold is 1 GiB) for the next step's block.
  EXPECT_GE(mallinfo2().fordblks, big);
  auto* q = static_cast<char*>(std::malloc(big));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
  std::free(q);
}
