// gpt2_bench: times ggml's own gpt-2 example (examples/gpt-2/main-backend.cpp, compiled in from
// the peer's checkout, unmodified) the way `seqlab bench decode` times seqlab's decoder, for
// bench/peers/run.sh (issue 35). Only this main() is ours: the model loader, graph and eval are
// the example's, so what is timed is ggml's gpt-2 and nothing of seqlab's.
//
//   gpt2_bench MODEL.bin THREADS CONTEXT GEN [SEED] [BATCH]
//
// pp: the first CONTEXT tokens of a seeded random sequence, BATCH tokens per gpt2_eval call
//     (default 32, the example's own n_batch default); the example computes the head for every
//     token of a batch and keeps the last row.
// tg: GEN tokens generated greedily after it, one gpt2_eval each (argmax of the logits).
// The KV cache is sized CONTEXT + GEN (the example's n_ctx argument). Prints one JSON line on
// stdout; the example's own load messages go to stdout first, so run.sh keeps the last line.
// With GPT2_BENCH_LOGITS=FILE it also writes the last step's logits there (n_vocab raw float32),
// which bench/peers/check_gpt2.py compares with a PyTorch GPT-2 on the same weights.
#define main gpt2_example_main
#include "main-backend.cpp"
#undef main

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static long parse_arg(const char* what, const char* s, long lo) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo) {
    std::fprintf(stderr, "gpt2_bench: %s must be an integer >= %ld, got '%s'\n", what, lo, s);
    std::exit(2);
  }
  return v;
}

static double peak_rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: gpt2_bench MODEL.bin THREADS CONTEXT GEN [SEED] [BATCH]\n");
    return 2;
  }
  const int threads = (int)parse_arg("THREADS", argv[2], 1);
  const int context = (int)parse_arg("CONTEXT", argv[3], 1);
  const int gen = (int)parse_arg("GEN", argv[4], 1);
  const uint64_t seed = argc > 5 ? (uint64_t)parse_arg("SEED", argv[5], 0) : 0;
  const int batch = argc > 6 ? (int)parse_arg("BATCH", argv[6], 1) : 32;
  ggml_time_init();

  gpt_vocab vocab;
  gpt2_model model;
  double t0 = now_s();
  if (!gpt2_model_load(argv[1], model, vocab, context + gen, 0)) {
    std::fprintf(stderr, "gpt2_bench: failed to load %s\n", argv[1]);
    return 2;
  }
  const double load_s = now_s() - t0;
  const int n_vocab = model.hparams.n_vocab;

  ggml_gallocr_t allocr = ggml_gallocr_new(ggml_backend_get_default_buffer_type(model.backend));
  {  // reserve for the worst case, as the example's main does
    int n_tokens = std::min(model.hparams.n_ctx, batch);
    ggml_gallocr_reserve(allocr, gpt2_graph(model, model.hparams.n_ctx - n_tokens, n_tokens));
  }

  // A 64-bit LCG (Knuth's MMIX constants): the context only has to be the same every run.
  std::vector<gpt_vocab::id> tokens(context);
  uint64_t s = seed * 2862933555777941757ULL + 3037000493ULL;
  for (auto& t : tokens) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    t = (gpt_vocab::id)((s >> 33) % (uint64_t)n_vocab);
  }

  std::vector<float> logits;
  t0 = now_s();
  for (int p = 0; p < context; p += batch) {
    std::vector<gpt_vocab::id> chunk(tokens.begin() + p,
                                     tokens.begin() + std::min(context, p + batch));
    if (!gpt2_eval(model, allocr, threads, p, chunk, logits)) return 2;
  }
  const double pp_s = now_s() - t0;

  auto argmax = [&] {
    return (gpt_vocab::id)(std::max_element(logits.begin(), logits.end()) - logits.begin());
  };
  gpt_vocab::id token = argmax();
  t0 = now_s();
  for (int i = 0; i < gen; i++) {
    if (!gpt2_eval(model, allocr, threads, context + i, {token}, logits)) return 2;
    token = argmax();
  }
  const double tg_s = now_s() - t0;
  if (const char* path = std::getenv("GPT2_BENCH_LOGITS")) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(logits.data()), logits.size() * sizeof(float));
    if (!f) {
      std::fprintf(stderr, "gpt2_bench: cannot write %s\n", path);
      return 2;
    }
  }

  std::printf(
      "\n{\"engine\":\"ggml-gpt2\",\"threads\":%d,\"context\":%d,\"gen\":%d,\"batch\":%d,"
      "\"n_vocab\":%d,\"n_embd\":%d,\"n_layer\":%d,\"load_s\":%.4f,"
      "\"pp_tokens_per_s\":%.2f,\"tg_tokens_per_s\":%.2f,\"ms_per_token\":%.4f,"
      "\"last_token\":%d,\"peak_rss_mib\":%.1f}\n",
      threads, context, gen, batch, n_vocab, model.hparams.n_embd, model.hparams.n_layer, load_s,
      context / pp_s, gen / tg_s, 1e3 * tg_s / gen, token, peak_rss_mib());
  ggml_gallocr_free(allocr);
  return 0;
}
