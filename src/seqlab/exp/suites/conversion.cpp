// Suite `conversion`: swap-then-finetune on WordNet glosses (Kasai et al. 2021, T2R; Zhang et al.
// 2024, Hedgehog). A softmax teacher LM; each feature map (a) converted from the teacher and
// finetuned and (b) trained from random initialisation for the same number of steps; Hedgehog
// with and without attention transfer; LoRA and Tied-LoRA finetuning of a converted model; and
// generation speed / state memory against context length for the teacher and the RNNs.
#include "seqlab/convert/convert.h"
#include "seqlab/core/atomic_file.h"
#include "seqlab/exp/cells/lm.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/exp/tables.h"
#include "seqlab/model/adapters.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

namespace seqlab {

namespace {

std::string conversion_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

// LoLCATs / Liger: exact softmax over a window of W tokens plus Hedgehog linear attention for
// older ones, with the output-matching transfer; and gated linear attention alone (no window, a
// key-derived decay). Both convert; the hybrid also trains from scratch (model: the suite's
// hybrid model config).
void add_hybrid_cells(SuiteSpec& s, int64_t W, int64_t d_feature, int64_t distill_steps,
                      nlohmann::json model, const nlohmann::json& task, const nlohmann::json& train,
                      const nlohmann::json& eval) {
  struct Hyb {
    std::string id, label, gate, transfer;
    int64_t window;
  };
  for (const auto& h : std::vector<Hyb>{
           {"hybrid_at", fmt::format("Hybrid (softmax W={} + Hedgehog) + output transfer", W),
            "none", "output", W},
           {"gla_at", "Gated Hedgehog (key gate) + attention transfer", "key", "weights", 0}}) {
    ConvertConfig cc;
    cc.to = "hybrid";
    cc.feature_map = "hedgehog";
    cc.window = h.window;
    cc.gate = h.gate;
    cc.transfer = h.transfer;
    cc.d_feature = d_feature;
    cc.distill_steps = distill_steps;
    s.cells.push_back({{"id", "conv_" + h.id},
                       {"kind", "lm_finetune"},
                       {"label", h.label + ", converted"},
                       {"init", "converted"},
                       {"after", {"teacher"}},
                       {"from", "teacher/model"},
                       {"convert", cc.to_json()},
                       {"train", train},
                       {"eval", eval}});
  }
  model["feature_map"] = "hedgehog";
  model["window"] = W;
  s.cells.push_back({{"id", "scratch_hybrid_at"},
                     {"kind", "lm_train"},
                     {"label", fmt::format("Hybrid (softmax W={} + Hedgehog), from scratch", W)},
                     {"init", "scratch"},
                     {"model", model},
                     {"task", task},
                     {"train", train},
                     {"eval", eval}});
}

}  // namespace

std::string conversion_claims() {
  return "- Kasai et al. (2021), T2R: converting a pretrained Transformer and finetuning beats "
         "training the same linear-attention model from random initialisation, and comes close to "
         "the teacher (WikiText-103: 19.6 ppl converted vs 20.8 from scratch vs 18.8 teacher for "
         "their 32-feature T2R; Table 1).\n"
         "- Zhang et al. (2024), Hedgehog: attention transfer (training the feature maps to mimic "
         "softmax attention weights before finetuning) recovers more of the teacher than "
         "converting "
         "without it, and Hedgehog's softmax-mimicking map beats T2R / ELU+1 / RFA-style maps "
         "(their Table 3/6: Hedgehog GPT-2 conversion 16.7 ppl on WikiText-103 vs T2R 19.9 and "
         "teacher 15.8).\n"
         "- Both: the converted model is an RNN: constant state memory and constant time per "
         "generated token, where the teacher's KV cache grows with the context.\n"
         "- LoLCATs (Zhang et al. 2024): training linear attentions to match each softmax "
         "attention's output (MSE, 'attention transfer'), with exact softmax over a short sliding "
         "window for the newest tokens, then LoRA, closes most of the linearizing gap (abstract: "
         "+20 points 5-shot MMLU over earlier linearized Llama 3 8B / Mistral 7B; 77.8% of the gap "
         "to Llama 3.1 70B closed).\n"
         "- Tied-LoRA (Renduchintala et al. 2023): sharing A, B across layers keeps most of LoRA's "
         "quality with a fraction of its trainable parameters.";
}

SuiteSpec conversion_suite(bool quick) {
  SuiteSpec s;
  s.name = "conversion";
  s.description =
      "Swap-then-finetune on WordNet glosses (byte level): a softmax teacher converted to T2R, "
      "Hedgehog (with and without attention transfer), ELU+1, RFA, the LoLCATs hybrid (softmax "
      "window + Hedgehog, output transfer) and gated Hedgehog, against the same models "
      "trained from scratch; LoRA / Tied-LoRA finetuning; generation speed and memory.";
  s.claims = conversion_claims();
  const int64_t D = quick ? 64 : 128, L = quick ? 2 : 4, T = quick ? 64 : 128;
  const int64_t teacher_steps = quick ? 1500 : 5000, ft_steps = quick ? 400 : 1500;
  const int64_t distill_steps = quick ? 100 : 400;
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{256, 1024, 4096} : std::vector<int64_t>{128, 1024, 4096, 16384};
  const int64_t max_ctx = contexts.back();
  const nlohmann::json task = grid_task("lm", T, T, {{"corpus", "wordnet"}, {"tokenizer", "byte"}});
  // The trainer's periodic eval_ppl (the learning curves) reads the first 65536 valid tokens at
  // context max_len; the final number reads the same, so a curve ends at its table entry.
  const nlohmann::json eval = {{"context", T}, {"max_tokens", 65536}};
  auto train = [&](int64_t steps, double lr) {
    auto t = grid_train(steps, 16, lr, 0);
    t["eval_every"] = std::max<int64_t>(1, steps / 6);
    t["eval_size"] = 64;
    t["warmup"] = std::max<int64_t>(1, steps / 20);
    return t;
  };
  auto model = [&](const std::string& arch) {
    return grid_model(arch, D, L, max_ctx,
                      {{"n_head", 4}, {"mlp_ratio", 4}, {"d_feature", quick ? 16 : 32}});
  };
  nlohmann::json teacher = {{"id", "teacher"},
                            {"kind", "lm_train"},
                            {"label", "teacher (softmax)"},
                            {"init", "teacher"},
                            {"model", model("softmax")},
                            {"task", task},
                            {"train", train(teacher_steps, 1e-3)},
                            {"eval", eval}};
  teacher["model"]["d_feature"] = 0;
  s.cells.push_back(teacher);
  // Control: the teacher itself given the finetuning steps the converted models get, so that
  // "converted vs teacher" is not a comparison of unequal training.
  s.cells.push_back({{"id", "teacher_ft"},
                     {"kind", "lm_finetune"},
                     {"label", "teacher + same finetuning (control)"},
                     {"init", "teacher"},
                     {"after", {"teacher"}},
                     {"from", "teacher/model"},
                     {"train", train(ft_steps, 1e-3)},
                     {"eval", eval}});
  struct Conv {
    std::string id, fm, label;
    int64_t distill;
  };
  const std::vector<Conv> convs = {
      {"t2r", "t2r", "T2R", 0},
      {"hedgehog_at", "hedgehog", "Hedgehog + attention transfer", distill_steps},
      {"hedgehog", "hedgehog", "Hedgehog, no transfer", 0},
      {"elu", "elu1", "ELU+1", 0},
      {"rfa", "rfa", "RFA", 0},
  };
  for (const auto& c : convs) {
    ConvertConfig cc;
    cc.to = c.fm;
    cc.d_feature = quick ? 16 : 32;
    cc.distill_steps = c.distill;
    const nlohmann::json conv = cc.to_json();
    s.cells.push_back({{"id", "conv_" + c.id},
                       {"kind", "lm_finetune"},
                       {"label", c.label + ", converted"},
                       {"init", "converted"},
                       {"after", {"teacher"}},
                       {"from", "teacher/model"},
                       {"convert", conv},
                       {"train", train(ft_steps, 1e-3)},
                       {"eval", eval}});
    // From scratch, once per feature map (attention transfer needs a teacher: the Hedgehog row
    // is compared with both Hedgehog conversions).
    if (c.id != "hedgehog")
      s.cells.push_back(
          {{"id", "scratch_" + c.id},
           {"kind", "lm_train"},
           {"label", (c.fm == "hedgehog" ? std::string("Hedgehog") : c.label) + ", from scratch"},
           {"init", "scratch"},
           {"model", model(c.fm)},
           {"task", task},
           {"train", train(ft_steps, 1e-3)},
           {"eval", eval}});
  }
  add_hybrid_cells(s, T / 4, quick ? 16 : 32, distill_steps, model("hybrid"), task,
                   train(ft_steps, 1e-3), eval);
  // Adapters on the Hedgehog conversion with attention transfer: the base frozen.
  for (const char* kind : {"lora", "tied_lora"}) {
    AdapterConfig ac;
    ac.kind = kind;
    ac.rank = 8;
    ac.targets = "q,k,v,o,fc1,fc2";
    const nlohmann::json a = ac.to_json();
    s.cells.push_back({{"id", std::string("conv_hedgehog_at_") + kind},
                       {"kind", "lm_finetune"},
                       {"label", std::string("Hedgehog + transfer, ") +
                                     (std::string(kind) == "lora" ? "LoRA" : "Tied-LoRA")},
                       {"init", "converted"},
                       {"after", {"conv_hedgehog_at"}},
                       {"from", "conv_hedgehog_at/converted"},
                       {"adapter", a},
                       {"train", train(ft_steps, 3e-3)},
                       {"eval", eval}});
  }
  s.cells.push_back(
      {{"id", "bench"},
       {"kind", "lm_bench"},
       {"after", {"teacher", "conv_t2r", "conv_hedgehog_at", "conv_hybrid_at"}},
       {"models",
        {{{"label", "teacher (softmax, KV cache)"}, {"from", "teacher/model"}},
         {{"label", "T2R, converted"}, {"from", "conv_t2r/model"}},
         {{"label", "Hedgehog + transfer, converted"}, {"from", "conv_hedgehog_at/model"}},
         {{"label", fmt::format("Hybrid W={}, converted", T / 4)},
          {"from", "conv_hybrid_at/model"}}}},
       {"contexts", contexts}});
  s.custom_report = conversion_report;
  return s;
}

namespace {

using LmRows = std::vector<LmRow>;
using ByCell = std::map<std::string, LmRow>;

std::string perplexity_table(const LmRows& lm, double teacher) {
  const auto& any = lm.front();
  std::string md = fmt::format(
      "WordNet 3.0 glosses, byte tokenizer; valid split, consecutive windows of {} tokens, {} "
      "tokens scored; d_model {}, {} layers; seed {}. \"ppl converted\" is the converted model "
      "before any finetuning.\n\n",
      any.eval_context, any.eval_tokens, any.d_model, any.n_layer, any.seed);
  md += md_header({"model", "init", "trainable", "steps", "train time", "ppl converted",
                   "valid ppl", "vs teacher"},
                  "llrrrrrr");
  for (const auto& r : lm)
    md += md_row({r.label, r.init, fmt_count(r.trainable), std::to_string(r.steps),
                  fmt::format("{:.0f} s", r.train_seconds),
                  r.ppl_converted ? fmt::format("{:.1f}", *r.ppl_converted) : std::string(""),
                  fmt::format("{:.3f}", r.ppl),
                  teacher > 0 ? fmt::format("{:+.1f}%", 100 * (r.ppl / teacher - 1)) : ""});
  return md;
}

// The measured targets: the best conversion against the teacher and the control, conversion
// against training from scratch, attention transfer against none.
std::string targets(const LmRows& lm, const ByCell& by, double teacher) {
  std::vector<nlohmann::json> seeds;
  for (const auto& r : lm) seeds.push_back({{"seed", r.seed}});
  std::string md = "\n## Targets\n\n" + seeds_note(count_seeds(seeds)) + "\n\n";
  auto ppl_of = [&](const std::string& id) { return by.count(id) ? by.at(id).ppl : std::nan(""); };
  double best = INFINITY;
  std::string best_id;
  for (const auto& r : lm)
    if (r.init == "converted" && r.ppl < best) best = r.ppl, best_id = r.label;
  if (teacher > 0 && std::isfinite(best))
    md += fmt::format(
        "- Best converted model within 5% of the teacher: {} ({}: {:.3f} vs "
        "teacher {:.3f}, {:+.1f}%).\n",
        best <= 1.05 * teacher ? "**met**" : "**missed**", best_id, best, teacher,
        100 * (best / teacher - 1));
  const double control = ppl_of("teacher_ft");
  if (!std::isnan(control) && std::isfinite(best))
    md += fmt::format(
        "- Against the control (the teacher finetuned for the same steps, {:.3f}): "
        "best converted {:+.1f}%.\n",
        control, 100 * (best / control - 1));
  for (const char* fm : {"t2r", "elu", "rfa", "hedgehog_at", "hybrid_at"}) {
    const double c = ppl_of(std::string("conv_") + fm), sc = ppl_of(std::string("scratch_") + fm);
    if (std::isnan(c) || std::isnan(sc)) continue;
    md +=
        fmt::format("- Converted beats from-scratch at equal steps ({}): {} ({:.3f} vs {:.3f}).\n",
                    by.at("conv_" + std::string(fm)).label, c < sc ? "**yes**" : "**no**", c, sc);
  }
  // The hybrid against every pure linear map (LoLCATs' claim: the window closes most of the gap).
  const double hyb = ppl_of("conv_hybrid_at");
  double best_linear = INFINITY;
  std::string best_linear_label;
  for (const char* id :
       {"conv_t2r", "conv_hedgehog_at", "conv_hedgehog", "conv_elu", "conv_rfa", "conv_gla_at"})
    if (by.count(id) && by.at(id).ppl < best_linear)
      best_linear = by.at(id).ppl, best_linear_label = by.at(id).label;
  if (!std::isnan(hyb) && std::isfinite(best_linear))
    md += fmt::format(
        "- The hybrid beats every pure linear map: {} ({:.3f} vs best linear {}: "
        "{:.3f}).\n",
        hyb < best_linear ? "**yes**" : "**no**", hyb, best_linear_label, best_linear);
  const double at = ppl_of("conv_hedgehog_at"), nat = ppl_of("conv_hedgehog");
  if (!std::isnan(at) && !std::isnan(nat))
    md += fmt::format("- Attention transfer beats none (Hedgehog): {} ({:.3f} vs {:.3f}).\n",
                      at < nat ? "**yes**" : "**no**", at, nat);
  return md;
}

std::string transfer_table(const LmRow& r) {
  std::string md = fmt::format(
      "\n## Attention transfer ({} steps, {:.0f} s)\n\nRow cross-entropy between "
      "the teacher's softmax attention and the Hedgehog feature maps' attention, "
      "on a held-out batch:\n\n",
      r.distill_steps, r.distill_seconds.value_or(0.0));
  md += md_header({"layer", "before", "after"}, "rrr");
  const auto& before = *r.distill_before;
  for (size_t l = 0; l < before.size(); ++l)
    md += md_row({std::to_string(l), fmt::format("{:.4f}", before[l]),
                  fmt::format("{:.4f}", r.distill_after.value().at(l))});
  return md;
}

// Learning curves of every model with one.
std::string curve_plot(const LmRows& lm, const std::string& plot_dir) {
  std::string data, cmds;
  size_t idx = 0;
  for (const auto& r : lm) {
    if (r.curve.empty()) continue;
    std::string block;
    for (const auto& [step, ppl] : r.curve) block += fmt::format("{} {}\n", step, ppl);
    data += gp_block(r.label, block);
    cmds += fmt::format("{}'curves.dat' index {} with linespoints title '{}'", gp_sep(idx), idx,
                        r.label);
    ++idx;
  }
  if (!idx) return "";
  write_file_atomic(plot_dir + "/curves.dat", data);
  return svg_links(render_plot(plot_dir, "curves",
                               "set title 'validation perplexity during training'\nset xlabel "
                               "'step'\nset ylabel 'valid ppl'\nset logscale y\nset key "
                               "below\nset grid\nplot " +
                                   cmds + "\n"),
                   "learning curves");
}

std::string conversion_report(const std::vector<nlohmann::json>& rows,
                              const std::string& plot_dir) {
  LmRows lm;
  std::vector<BenchRow> bench;
  for (const auto& r : rows)
    if (r.value("kind", "") == "bench")
      bench.push_back(read_row<BenchRow>(r));
    else
      lm.push_back(read_row<LmRow>(r));
  ByCell by;
  for (const auto& r : lm) by[r.cell] = r;
  std::string md = "## Validation perplexity\n\n";
  if (lm.empty()) return md + "No model finished.\n";
  const double teacher = by.count("teacher") ? by.at("teacher").ppl : 0;
  md += perplexity_table(lm, teacher);
  md += targets(lm, by, teacher);
  if (by.count("conv_hedgehog_at") && by.at("conv_hedgehog_at").distill_before)
    md += transfer_table(by.at("conv_hedgehog_at"));
  if (!bench.empty()) md += bench_table(bench);
  if (plot_dir.empty()) return md;
  md += "\n## Plots\n\n";
  md += curve_plot(lm, plot_dir);
  if (!bench.empty()) md += bench_plots(bench, plot_dir);
  return md;
}

}  // namespace

std::string bench_table(const std::vector<BenchRow>& bench) {
  std::string md =
      "\n## Generation: speed and state memory against context\n\nBatch 1, one token at a "
      "time, one thread, same tokens for every model: `torch` = the model's recurrent form "
      "in LibTorch eager mode (SeqModel::step), `fast` = seqlab's hand-written decoder "
      "(infer/); tokens/s over the last tokens before each context length; state = the KV "
      "cache's filled part for the teacher, the recurrent state (S, z) for the RNNs. "
      "Absolute speeds are this machine's; compare rows.\n\n";
  md += md_header({"model", "engine", "context", "tokens/s", "state"}, "llrrr");
  for (const auto& b : bench)
    md +=
        md_row({b.label, b.engine, std::to_string(b.context), fmt::format("{:.0f}", b.tokens_per_s),
                fmt::format("{:.1f} KiB", b.state_bytes / 1024.0)});
  return md;
}

// Speed and state memory against context, one line per (model, engine).
std::string bench_plots(const std::vector<BenchRow>& bench, const std::string& plot_dir) {
  std::map<std::string, std::string> series;
  std::vector<std::string> order;
  for (const auto& b : bench) {
    const auto l = b.label + " [" + b.engine + "]";
    if (!series.count(l)) order.push_back(l);
    series[l] += fmt::format("{} {} {}\n", b.context, b.tokens_per_s, b.state_bytes / 1024.0);
  }
  std::string bd, sp, mem;
  for (size_t i = 0; i < order.size(); ++i) {
    bd += gp_block(order[i], series[order[i]]);
    sp += fmt::format("{}'bench.dat' index {} using 1:2 with linespoints title '{}'", gp_sep(i), i,
                      order[i]);
    mem += fmt::format("{}'bench.dat' index {} using 1:3 with linespoints title '{}'", gp_sep(i), i,
                       order[i]);
  }
  write_file_atomic(plot_dir + "/bench.dat", bd);
  std::string md =
      svg_links(render_plot(plot_dir, "speed",
                            "set title 'generation speed vs context'\nset xlabel 'context "
                            "(tokens)'\nset ylabel 'tokens/s'\nset logscale x 2\nset key "
                            "below\nset grid\nplot " +
                                sp + "\n"),
                "speed");
  md += svg_links(render_plot(plot_dir, "memory",
                              "set title 'generation state memory vs context'\nset xlabel "
                              "'context (tokens)'\nset ylabel 'state (KiB)'\nset logscale xy "
                              "2\nset key below\nset grid\nplot " +
                                  mem + "\n"),
                  "memory");
  return md;
}

}  // namespace seqlab
