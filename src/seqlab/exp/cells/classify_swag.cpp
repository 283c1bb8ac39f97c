// Cell kind classify_swag (exp/cells/classify.h): a classifier trained with SWAG moments, scored
// with its final weights, SWA and SWAG's model average.
#include "seqlab/core/safetensors.h"
#include "seqlab/exp/cells/classify.h"
#include "seqlab/exp/cells/kinds.h"
#include "seqlab/methods/classify_eval.h"
#include "seqlab/tasks/registry.h"

#include <filesystem>

namespace seqlab {

namespace {

nlohmann::json run_classify_swag(const nlohmann::json& cell, const std::string& run_dir) {
  const auto c = read_spec<ClassifySwagCellConfig>(cell, cell_source(cell));
  auto t = train_classifier(c.label.value_or(c.id), c.model, c.task, c.train, run_dir);
  auto task = make_task(t.task);
  auto& model = *t.lm.model;
  const auto path = (std::filesystem::path(run_dir) / "model" / kSwagFile).string();
  auto swag = Swag::from_tensors(load_safetensors(path).tensors, path);
  auto test = classify_set(*task, Split::test, t.task.max_len, c.eval_n, 64, t.seed);
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& method, const UncertaintyScore& s) {
    UncertaintyRow r;
    static_cast<ClassifyRowBase&>(r) = t.base;
    r.kind = "uncertainty";
    r.method = method;
    r.accuracy = s.accuracy;
    r.nll = s.nll;
    r.ece = s.ece;
    r.n = s.n;
    r.snapshots = swag.snapshots();
    r.rank = swag.columns();
    if (s.annotators) {
      r.entropy_pearson = s.entropy_pearson;
      r.entropy_spearman = s.entropy_spearman;
      r.kl_annotators = s.kl;
    }
    rows.push_back(r.to_json());
  };
  add("sgd", score_probs(predict_probs(model, test), test));
  add("swa", score_probs(swag_probs(model, swag, test, 1, 0.0, t.seed), test));
  add("swag", score_probs(swag_probs(model, swag, test, c.samples, c.scale, t.seed), test));
  return {{"id", c.id}, {"rows", rows}};
}

}  // namespace

SEQLAB_REGISTER_CELL_KIND("classify_swag", 50,
                          "a classifier with SWAG: final weights, SWA and SWAG model average",
                          run_classify_swag, check_spec<ClassifySwagCellConfig>);

}  // namespace seqlab
