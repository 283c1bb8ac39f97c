/* rwkv_bench: times one rwkv.cpp model the way `seqlab bench decode` times seqlab's decoder, for
 * bench/peers/run.sh (issue 35). Our own driver; it only calls librwkv's public API (rwkv.h).
 *
 *   rwkv_bench MODEL.bin THREADS CONTEXT GEN [SEED] [CHUNK]
 *
 * pp: the first CONTEXT tokens of a seeded random sequence, through rwkv_eval_sequence_in_chunks
 *     (CHUNK tokens per graph, default 16 as rwkv.h recommends), logits of the last one only.
 * tg: GEN tokens generated greedily after it, one rwkv_eval each, logits every step (argmax).
 * Prints one JSON line on stdout: pp/tg tokens per second, ms per generated token, the model's
 * shape, and the process's peak resident memory (VmHWM) after the run.
 * Errors go to stderr with exit status 2. */
#define _POSIX_C_SOURCE 200809L
#include <rwkv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long parse_long(const char* what, const char* s, long lo) {
  char* end = NULL;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo) {
    fprintf(stderr, "rwkv_bench: %s must be an integer >= %ld, got '%s'\n", what, lo, s);
    exit(2);
  }
  return v;
}

/* Peak resident set size of this process in MiB, from /proc/self/status (0 if unreadable). */
static double peak_rss_mib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  double kib = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = strtod(line + 6, NULL);
  fclose(f);
  return kib / 1024.0;
}

static uint32_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return (uint32_t)best;
}

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    fprintf(stderr, "usage: rwkv_bench MODEL.bin THREADS CONTEXT GEN [SEED] [CHUNK]\n");
    return 2;
  }
  const char* path = argv[1];
  uint32_t threads = (uint32_t)parse_long("THREADS", argv[2], 1);
  size_t context = (size_t)parse_long("CONTEXT", argv[3], 1);
  size_t gen = (size_t)parse_long("GEN", argv[4], 1);
  uint64_t seed = argc > 5 ? (uint64_t)parse_long("SEED", argv[5], 0) : 0;
  size_t chunk = argc > 6 ? (size_t)parse_long("CHUNK", argv[6], 1) : 16;

  double t0 = now_s();
  struct rwkv_context* ctx = rwkv_init_from_file(path, threads, 0);
  if (!ctx) {
    fprintf(stderr, "rwkv_bench: rwkv_init_from_file failed on %s\n", path);
    return 2;
  }
  double load_s = now_s() - t0;
  size_t n_vocab = rwkv_get_n_vocab(ctx);
  float* state = malloc(rwkv_get_state_len(ctx) * sizeof(float));
  float* logits = malloc(rwkv_get_logits_len(ctx) * sizeof(float));
  uint32_t* tokens = malloc(context * sizeof(uint32_t));
  if (!state || !logits || !tokens) {
    fprintf(stderr, "rwkv_bench: out of memory\n");
    return 2;
  }
  /* A 64-bit LCG (Knuth's MMIX constants): the context only has to be the same every run. */
  uint64_t s = seed * 2862933555777941757ULL + 3037000493ULL;
  for (size_t i = 0; i < context; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    tokens[i] = (uint32_t)((s >> 33) % n_vocab);
  }
  rwkv_init_state(ctx, state);

  t0 = now_s();
  if (!rwkv_eval_sequence_in_chunks(ctx, tokens, context, chunk, state, state, logits)) {
    fprintf(stderr, "rwkv_bench: prefill failed\n");
    return 2;
  }
  double pp_s = now_s() - t0;

  uint32_t token = argmax(logits, n_vocab);
  t0 = now_s();
  for (size_t i = 0; i < gen; i++) {
    if (!rwkv_eval(ctx, token, state, state, logits)) {
      fprintf(stderr, "rwkv_bench: eval failed at generated token %zu\n", i);
      return 2;
    }
    token = argmax(logits, n_vocab);
  }
  double tg_s = now_s() - t0;

  printf(
      "{\"engine\":\"rwkv.cpp\",\"threads\":%u,\"context\":%zu,\"gen\":%zu,\"chunk\":%zu,"
      "\"n_vocab\":%zu,\"n_embed\":%zu,\"n_layer\":%zu,\"load_s\":%.4f,"
      "\"pp_tokens_per_s\":%.2f,\"tg_tokens_per_s\":%.2f,\"ms_per_token\":%.4f,"
      "\"last_token\":%u,\"peak_rss_mib\":%.1f}\n",
      threads, context, gen, chunk, n_vocab, rwkv_get_n_embed(ctx), rwkv_get_n_layer(ctx), load_s,
      (double)context / pp_s, (double)gen / tg_s, 1e3 * tg_s / (double)gen, token, peak_rss_mib());
  rwkv_free(ctx);
  free(state);
  free(logits);
  free(tokens);
  return 0;
}
