// What classify_exit and classify_swag share (exp/cells/classify.h): training the classifier.
#include "seqlab/exp/cells/classify.h"

#include "seqlab/mixers/registry.h"

#include <filesystem>

namespace seqlab {

TrainedClassifier train_classifier(const std::string& label, const ModelConfig& model,
                                   const TaskConfig& task, const TrainConfig& train,
                                   const std::string& run_dir) {
  const std::string dir = (std::filesystem::path(run_dir) / "model").string();
  // A killed cell resumes from its checkpoint; a finished one is not retrained.
  auto res = train_model(model, task, train, dir, /*resume=*/true);
  TrainedClassifier t;
  t.lm = load_model_dir(dir);
  t.task = task;
  t.seed = train.seed;
  t.base.label = label;
  t.base.task = task.task;
  t.base.arch = model.mixer.arch;
  t.base.feature_map = feature_map_of(model.mixer);
  t.base.n_layer = model.n_layer;
  t.base.d_model = model.mixer.d_model;
  t.base.seed = train.seed;
  t.base.steps = res.steps;
  t.base.train_seconds = res.seconds;
  return t;
}

}  // namespace seqlab
