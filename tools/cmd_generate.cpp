// seqlab generate: sample text from a causal lm model, on the fast decoder (src/seqlab/infer/) or
// on SeqModel::step, with the same sampler; save the decoder state and continue from it later.
#include "commands.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/infer/engine.h"
#include "seqlab/infer/kernels.h"
#include "seqlab/infer/sampler.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

namespace seqlab::cli {

namespace fs = std::filesystem;

namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_file, prompt_ids, engine = "auto", save_state, load_state;
  std::string weights;  // "" = the format the directory stores (f32 unless seqlab quantize)
  int64_t max_new = 64;
  infer::SamplerConfig sampler;
  bool json = false, stop_at_eos = false;
  Common common;
  int64_t decoder_threads = 1;
  CLI::App* sub = nullptr;
};

// "1 2 3" (or comma-separated) -> ids, each in [0, V).
std::vector<int64_t> parse_ids(const std::string& s, int64_t V) {
  std::vector<int64_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ' ' || s[i] == ',' || s[i] == '\t' || s[i] == '\n') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != ',' && s[j] != '\t' && s[j] != '\n') ++j;
    const std::string word = s.substr(i, j - i);
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    SEQLAB_CHECK(used == word.size() && id >= 0 && id < V,
                 "--prompt-ids: '{}' is not a token id in [0, {})", word, V);
    ids.push_back(id);
    i = j;
  }
  return ids;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The checks that need no model: every flag on its own, and where --save-state would write.
void check_generate_args(const GenerateArgs& a) {
  SEQLAB_CHECK(a.decoder_threads >= 1, "--decoder-threads must be >= 1, got {}", a.decoder_threads);
  a.sampler.validate();
  if (!a.weights.empty()) {
    parse_weight_format(a.weights);
    SEQLAB_CHECK(a.engine != "torch" || a.weights == "f32",
                 "--weights {} needs the fast engine (the torch engine runs the fp32 model)",
                 a.weights);
  }
  SEQLAB_CHECK(a.max_new >= 0, "--max-new must be >= 0, got {}", a.max_new);
  SEQLAB_CHECK(a.engine == "auto" || a.engine == "fast" || a.engine == "torch",
               "--engine must be auto, fast or torch, got '{}'", a.engine);
  const bool wants_state = !a.save_state.empty() || !a.load_state.empty();
  SEQLAB_CHECK(a.engine != "torch" || !wants_state,
               "--save-state and --load-state need --engine fast");
  const bool has_prompt =
      a.sub->count("--prompt") + a.sub->count("--prompt-file") + a.sub->count("--prompt-ids") > 0;
  SEQLAB_CHECK(has_prompt || !a.load_state.empty(),
               "give a prompt (--prompt, --prompt-file or --prompt-ids) or --load-state");
  if (!a.save_state.empty()) {
    const fs::path p(a.save_state);
    SEQLAB_CHECK(!fs::is_directory(p), "--save-state {} is a directory", a.save_state);
    SEQLAB_CHECK(p.parent_path().empty() || fs::is_directory(p.parent_path()),
                 "--save-state {}: directory {} does not exist", a.save_state,
                 p.parent_path().string());
  }
}

int run_generate(GenerateArgs& a) {
  a.common.apply();
  check_generate_args(a);
  infer::set_threads(static_cast<int>(a.decoder_threads));
  const bool wants_state = !a.save_state.empty() || !a.load_state.empty();

  auto lm = load_model_dir(a.model);
  const auto& mc = lm.config;
  SEQLAB_CHECK(mc.head == "lm", "{} is not a language model (its head is '{}'; generate needs lm)",
               a.model, mc.head);
  const auto tok = model_tokenizer(lm, a.model);
  const int64_t V = mc.vocab_size;
  SEQLAB_CHECK(tok || !(a.sub->count("--prompt") || a.sub->count("--prompt-file")),
               "{} names no tokenizer (its task is not lm): give --prompt-ids", a.model);
  SEQLAB_CHECK(tok || !a.stop_at_eos, "--stop-at-eos needs a tokenizer (an lm model)");

  std::vector<int64_t> prompt;
  if (a.sub->count("--prompt")) prompt = tok->encode(a.prompt);
  if (a.sub->count("--prompt-file")) prompt = tok->encode(read_file(a.prompt_file));
  if (a.sub->count("--prompt-ids")) prompt = parse_ids(a.prompt_ids, V);

  if (lm.model->adapters) lm.model->merge_adapters();
  // auto: the fast decoder where it supports the model, else torch with a one-line notice.
  const auto choice = infer::choose_engine(a.engine, *lm.model);
  SEQLAB_CHECK(choice.engine == "fast" || !wants_state,
               "--save-state and --load-state need the fast engine, which does not support this "
               "model: {}",
               choice.reason);
  if (!choice.notice.empty()) log_warn("{}", choice.notice);
  // The fast engine runs the directory's stored format unless --weights says otherwise; the torch
  // engine runs the fp32 model load_model_dir made from it.
  WeightFormat weights = a.weights.empty() ? lm.weights : parse_weight_format(a.weights);
  if (choice.engine == "torch" && a.weights.empty()) weights = WeightFormat::f32;
  auto engine = infer::make_engine(choice.engine, *lm.model, weights);
  // The tokens to consume before sampling: a loaded state's pending token, then the prompt.
  const int64_t pending_in = a.load_state.empty() ? -1 : engine->load_state(a.load_state);
  const int64_t start = engine->pos();
  std::function<int64_t()> eos;  // read only for a new document: not every tokenizer has one
  if (tok) eos = [&] { return tok->eos_id(); };
  const auto inputs =
      infer::generation_inputs(pending_in, prompt, eos, start, infer::max_sequence(*lm.model),
                               a.max_new, !a.load_state.empty());
  const int64_t n_in = static_cast<int64_t>(inputs.size());

  // Every check is done: from here on, output.
  infer::Sampler sampler(a.sampler, V);
  std::vector<float> logits(V);
  std::vector<int64_t> generated;
  generated.reserve(a.max_new);
  const bool stream = !a.json;
  bool stopped = false;
  int64_t pending = inputs.back();
  auto t0 = std::chrono::steady_clock::now();
  if (a.max_new == 0) {
    engine->prefill(inputs.data(), n_in - 1, nullptr);
  } else {
    engine->prefill(inputs.data(), n_in, logits.data());
  }
  const double prefill_s = seconds_since(t0);
  double gen_s = 0;
  for (int64_t i = 0; i < a.max_new; ++i) {
    t0 = std::chrono::steady_clock::now();
    const int64_t id = sampler.sample(logits.data(), engine->pos());
    if (i + 1 < a.max_new && !(a.stop_at_eos && id == tok->eos_id()))
      engine->step(id, logits.data());
    gen_s += seconds_since(t0);
    pending = id;
    if (a.stop_at_eos && id == tok->eos_id()) {
      stopped = true;
      break;
    }
    generated.push_back(id);
    if (!stream) continue;
    if (tok) {
      const std::string bytes = tok->decode({id});
      std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    } else {
      fmt::print("{}{}", i ? " " : "", id);
    }
    std::fflush(stdout);
  }
  if (stream) fmt::print("\n");
  std::fflush(stdout);
  if (!a.save_state.empty()) engine->save_state(a.save_state, pending);

  const auto n_gen = static_cast<int64_t>(generated.size()) + (stopped ? 1 : 0);
  const int64_t n_prefill = a.max_new == 0 ? n_in - 1 : n_in;  // tokens consumed by the prefill
  const double pp_tps = prefill_s > 0 ? n_prefill / prefill_s : 0;
  const double tg_tps = gen_s > 0 ? n_gen / gen_s : 0;
  if (a.json) {
    nlohmann::json doc = {{"model", a.model},
                          {"engine", choice.engine},
                          {"weights", weight_format_name(weights)},
                          {"prompt_ids", prompt},
                          {"generated_ids", generated},
                          {"text", tok ? nlohmann::json(tok->decode(generated)) : nlohmann::json()},
                          {"stopped_at_eos", stopped},
                          {"start_pos", start},
                          {"end_pos", engine->pos()},
                          {"prefill_tokens", n_prefill},
                          {"prefill_s", prefill_s},
                          {"prefill_tokens_per_s", pp_tps},
                          {"generated_tokens", n_gen},
                          {"generation_s", gen_s},
                          {"generation_tokens_per_s", tg_tps}};
    if (!a.save_state.empty()) doc["state"] = a.save_state;
    // Byte tokens can split a UTF-8 character: invalid bytes become U+FFFD in the JSON text.
    std::cout << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  log_info(
      "{} engine{}: prefill {} tokens in {:.1f} ms ({:.0f} tokens/s); generated {} tokens in "
      "{:.1f} ms ({:.0f} tokens/s){}",
      choice.engine,
      choice.engine == "fast" ? fmt::format(" ({})", infer::kernel_name(infer::active_kernel()))
                              : "",
      n_prefill, 1e3 * prefill_s, pp_tps, n_gen, 1e3 * gen_s, tg_tps,
      a.save_state.empty() ? "" : "; state saved to " + a.save_state);
  return 0;
}

}  // namespace

void add_generate_commands(CLI::App& app, Actions& actions) {
  auto ga = std::make_shared<GenerateArgs>();
  auto* g = app.add_subcommand(
      "generate",
      "sample text from a causal language model (the fast decoder where it supports the model), "
      "streaming each token "
      "to stdout; --save-state / --load-state pause and continue a generation");
  ga->sub = g;
  g->add_option("--model", ga->model, "model directory (an lm model)")->required();
  auto* p =
      g->add_option("--prompt", ga->prompt, "prompt text (encoded with the model's tokenizer)")
          ->group("Prompt");
  auto* pf = g->add_option("--prompt-file", ga->prompt_file, "read the prompt text from a file")
                 ->group("Prompt");
  auto* pi = g->add_option("--prompt-ids", ga->prompt_ids,
                           "the prompt as token ids, e.g. \"1 2 3\" (models without a tokenizer)")
                 ->group("Prompt");
  p->excludes(pf)->excludes(pi);
  pf->excludes(pi);
  g->add_option("-n,--max-new", ga->max_new, "tokens to generate")->capture_default_str();
  g->add_option("--temperature", ga->sampler.temperature, "sampling temperature (0 = greedy)")
      ->capture_default_str()
      ->group("Sampling");
  g->add_option("--top-k", ga->sampler.top_k, "keep the k most probable tokens (0 = all)")
      ->capture_default_str()
      ->group("Sampling");
  g->add_option("--top-p", ga->sampler.top_p,
                "keep the smallest most-probable set with this much mass (nucleus; 1 = all)")
      ->capture_default_str()
      ->group("Sampling");
  g->add_option("--seed", ga->sampler.seed,
                "sampling seed; the draw at position p depends only on (seed, p)")
      ->capture_default_str()
      ->group("Sampling");
  g->add_option("--weights", ga->weights,
                "the fast engine's weight format: f32, bf16 or int8 (blocks of 32 with a scale "
                "each; converted at load). Default: the format the model directory stores");
  g->add_option("--engine", ga->engine,
                "auto (fast where it supports the model, else torch with a notice), fast "
                "(hand-written decoder; an error on a model it does not support) or torch "
                "(SeqModel::step)")
      ->capture_default_str();
  g->add_option("--save-state", ga->save_state,
                "after generating, write the decoder state to this file (fast engine)")
      ->group("State");
  g->add_option("--load-state", ga->load_state,
                "continue from a saved state (fast engine); the prompt is then optional")
      ->group("State");
  g->add_flag("--stop-at-eos", ga->stop_at_eos, "stop at the end-of-text token (not printed)");
  g->add_flag("--json", ga->json,
              "print one JSON document (ids, text, tokens/s) instead of streaming the text");
  ga->common.add(g);
  g->add_option("--decoder-threads", ga->decoder_threads,
                "fast engine: threads over the output rows of large matrix-vector products "
                "(workers spin while waiting; at most the number of idle cores)")
      ->capture_default_str();
  actions.push_back({g, [ga] { return run_generate(*ga); }});
}

}  // namespace seqlab::cli
