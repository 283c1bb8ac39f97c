// The automatic evaluation budget (train/trainer.h: eval_budget) is cut only for models larger
// than any suite trains: every cell of every suite, quick and full, keeps the defaults, so a
// rerun of a suite evaluates what it evaluated before --eval-tokens existed. Cells that set
// eval_tokens themselves are skipped.
#include "seqlab/exp/suite.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/memory_estimate.h"
#include "seqlab/train/trainer.h"

#include <gtest/gtest.h>

#include <map>

using namespace seqlab;

TEST(EvalBudgetSuites, EverySuiteModelKeepsTheDefaultBudget) {
  std::map<std::string, std::unique_ptr<Task>> tasks;  // by task JSON: corpora load once
  double worst = 0;
  std::string worst_cell;
  int64_t checked = 0;
  for (const auto& entry : suite_registry())
    for (bool quick : {true, false}) {
      const auto spec = entry.make(quick);
      for (const auto& cell : spec.cells) {
        if (!cell.contains("model") || !cell.contains("task") || !cell["model"].is_object())
          continue;
        const std::string id = entry.name + "/" + cell.value("id", std::string("?"));
        SCOPED_TRACE(id);
        // A cell that sets its own evaluation budget (conversion_full's teacher-sized models)
        // does not depend on the automatic one.
        if (cell.contains("train") && cell["train"].value("eval_tokens", int64_t{0}) > 0) continue;
        auto tc = TaskConfig::from_json(cell["task"], id);
        auto& task = tasks[cell["task"].dump()];
        if (!task) task = make_task(tc);
        auto mc = ModelConfig::from_json(cell["model"], id);
        mc.vocab_size = task->vocab_size();
        mc.head = task->head();
        mc.n_classes = task->n_classes();
        mc.validate();
        const double f = forward_flops_per_token(mc, tc.max_len);
        if (f > worst) {
          worst = f;
          worst_cell = id;
        }
        TrainConfig t;
        if (cell.contains("train")) t = TrainConfig::from_json(cell["train"], id);
        EXPECT_FALSE(eval_budget(mc, t, tc.max_len).scaled) << f << " FLOPs per token";
        ++checked;
      }
    }
  EXPECT_GT(checked, 100);
  // How far below the threshold the largest suite model sits.
  RecordProperty("largest_flops_per_token", std::to_string(worst));
  RecordProperty("largest_cell", worst_cell);
  EXPECT_LT(worst, kEvalFlopsPerToken) << worst_cell;
  std::printf("largest suite model: %s, %.3g FLOPs per token (threshold %.3g)\n",
              worst_cell.c_str(), worst, kEvalFlopsPerToken);
}
