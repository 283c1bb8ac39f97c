// Suite `tied_lora`: the Tied-LoRA configuration grid (Renduchintala et al. 2023; issue 36 §3) on
// a converted model. Per seed: a byte-level softmax teacher on WordNet glosses (4 layers, so
// sharing across layers matters), converted to Hedgehog with attention transfer; then from that
// converted model (before any finetuning): full finetuning, LoRA, and Tied-LoRA with every
// configuration below, each for the same steps. A seed-0 check reruns every adapter at a lower
// and a higher learning rate, so a configuration is not judged at a rate that suits only another.
//
// Configurations: which of A, B are shared by all layers (--tied-share) and which of A, B, u, v
// train (--tied-train); the report gives each one's trainable parameters as a fraction of LoRA's
// and its test perplexity against LoRA, paired by seed. The report is tied_lora_report.cpp.
#include "seqlab/convert/convert.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/suites/suites.h"
#include "seqlab/model/adapters.h"

#include <fmt/format.h>

namespace seqlab {

std::string tied_lora_report(const std::vector<nlohmann::json>& rows, const std::string& plot_dir);

namespace {

struct AdapterSetting {
  std::string id, label, kind, share, train;
};

// LoRA, then the tied configurations from most to fewest trained factors, then the half-tied ones.
const std::vector<AdapterSetting>& settings() {
  static const std::vector<AdapterSetting> s = {
      {"lora", "LoRA (A_l, B_l per layer)", "lora", "", "A,B"},
      {"tl_ABuv", "tied A,B; train A,B,u,v", "tied_lora", "A,B", "A,B,u,v"},
      {"tl_ABv", "tied A,B; train A,B,v", "tied_lora", "A,B", "A,B,v"},
      {"tl_AB", "tied A,B; train A,B", "tied_lora", "A,B", "A,B"},
      {"tl_Buv", "tied A,B; train B,u,v (A frozen random)", "tied_lora", "A,B", "B,u,v"},
      {"tl_Bv", "tied A,B; train B,v (A frozen random)", "tied_lora", "A,B", "B,v"},
      {"tl_uv", "tied A,B; train u,v (A, B frozen random)", "tied_lora", "A,B", "u,v"},
      {"tl_v", "tied A,B; train v only", "tied_lora", "A,B", "v"},
      {"tA_AB", "tied A, B_l per layer; train A,B", "tied_lora", "A", "A,B"},
      {"tB_AB", "A_l per layer, tied B; train A,B", "tied_lora", "B", "A,B"},
  };
  return s;
}

}  // namespace

SuiteSpec tied_lora_suite(bool quick) {
  SuiteSpec s;
  s.name = "tied_lora";
  s.description =
      "Tied-LoRA configurations (which of A, B are shared across layers; which of A, B, u, v "
      "train) against LoRA and full finetuning on a converted 4-layer model, 3 seeds, with a "
      "seed-0 learning-rate check (Renduchintala+ 2023)";
  s.claims =
      "- Renduchintala et al. (2023), Tied-LoRA: sharing A and B across all layers and training "
      "selected factors of diag(v) B diag(u) A keeps most of LoRA's quality with a fraction of "
      "its trainable parameters; their abstract: one configuration is comparable to LoRA on "
      "several tasks with about 13% of LoRA's parameters. Freezing A and B (training only the "
      "vectors) costs the most quality.";
  const int64_t D = quick ? 32 : 64, L = quick ? 2 : 4, T = 64;
  const int64_t teacher_steps = quick ? 40 : 1500, ft_steps = quick ? 20 : 400;
  const int64_t distill_steps = quick ? 10 : 100, rank = 8;
  const std::vector<uint64_t> seeds =
      quick ? std::vector<uint64_t>{0} : std::vector<uint64_t>{0, 1, 2};
  const double adapter_lr = 3e-3;
  const std::vector<std::pair<double, std::string>> lr_check =
      quick ? std::vector<std::pair<double, std::string>>{}
            : std::vector<std::pair<double, std::string>>{{1e-3, "1e-3"}, {1e-2, "1e-2"}};
  const nlohmann::json task = grid_task("lm", T, T, {{"corpus", "wordnet"}, {"tokenizer", "byte"}});
  const nlohmann::json eval = {
      {"context", T}, {"max_tokens", quick ? 4096 : 65536}, {"test", true}};
  auto train = [&](int64_t steps, double lr, uint64_t seed) {
    auto t = grid_train(steps, 16, lr, seed);
    t["eval_every"] = std::max<int64_t>(1, steps / 4);
    t["eval_size"] = 64;
    t["warmup"] = std::max<int64_t>(1, steps / 20);
    return t;
  };
  auto cell = [&](const std::string& id, const std::string& method, const std::string& label,
                  const std::string& init) {
    return nlohmann::json{{"id", id}, {"label", label}, {"method", method}, {"init", init}};
  };
  for (const auto seed : seeds) {
    const auto sfx = fmt::format("_s{}", seed);
    auto teacher = cell("teacher" + sfx, "teacher", "teacher (softmax)", "teacher");
    teacher["kind"] = "lm_train";
    teacher["model"] = grid_model("softmax", D, L, T, {{"n_head", 4}, {"mlp_ratio", 4}});
    teacher["task"] = task;
    teacher["train"] = train(teacher_steps, 1e-3, seed);
    teacher["eval"] = eval;
    s.cells.push_back(teacher);
    ConvertConfig cc;
    cc.to = "hedgehog";
    cc.d_feature = 16;
    cc.distill_steps = distill_steps;
    auto full = cell("full" + sfx, "full", "Hedgehog + transfer, full finetuning", "converted");
    full["kind"] = "lm_finetune";
    full["after"] = {"teacher" + sfx};
    full["from"] = "teacher" + sfx + "/model";
    full["convert"] = cc.to_json();
    full["train"] = train(ft_steps, 1e-3, seed);
    full["eval"] = eval;
    s.cells.push_back(full);
    // Every adapter from the same converted model, before finetuning; the seed-0 lr check last.
    std::vector<std::pair<double, std::string>> lrs = {{adapter_lr, ""}};
    if (seed == 0) lrs.insert(lrs.end(), lr_check.begin(), lr_check.end());
    for (const auto& [lr, tag] : lrs)
      for (const auto& a : settings()) {
        AdapterConfig ac;
        ac.kind = a.kind;
        ac.rank = rank;
        ac.targets = "q,k,v,o,fc1,fc2";
        ac.train = a.train;
        ac.share = a.share;
        ac.seed = 7 + seed;
        const auto method = a.id + (tag.empty() ? "" : "_lr" + tag);
        auto c = cell(method + sfx, method,
                      a.label + (tag.empty() ? "" : fmt::format(", lr {}", tag)), "converted");
        c["kind"] = "lm_finetune";
        c["after"] = {"full" + sfx};
        c["from"] = "full" + sfx + "/converted";
        c["adapter"] = ac.to_json();
        c["train"] = train(ft_steps, lr, seed);
        c["eval"] = eval;
        s.cells.push_back(c);
      }
  }
  s.custom_report = tied_lora_report;
  return s;
}

}  // namespace seqlab
