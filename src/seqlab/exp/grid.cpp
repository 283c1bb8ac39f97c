#include "seqlab/exp/grid.h"

#include "seqlab/convert/convert.h"
#include "seqlab/core/error.h"
#include "seqlab/exp/cells/fields.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

namespace seqlab {

namespace {
nlohmann::json merged(nlohmann::json base, const nlohmann::json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) base[it.key()] = it.value();
  return base;
}
}  // namespace

nlohmann::json grid_model(const std::string& arch, int64_t d_model, int64_t n_layer,
                          int64_t max_context, const nlohmann::json& extra) {
  ModelConfig c;
  c.mixer.arch = arch;
  c.mixer.d_model = d_model;
  c.mixer.n_head = d_model >= 32 ? 4 : 2;
  c.mixer.max_len = max_context;
  c.n_layer = n_layer;
  auto j = merged(c.to_json(), extra);
  return ModelConfig::from_json(j, "suite model " + arch).to_json();  // validates, resolves aliases
}

nlohmann::json grid_task(const std::string& task, int64_t min_len, int64_t max_len,
                         const nlohmann::json& extra) {
  TaskConfig t;
  t.task = task;
  t.min_len = min_len;
  t.max_len = max_len;
  return TaskConfig::from_json(merged(t.to_json(), extra), "suite task " + task).to_json();
}

nlohmann::json grid_train(int64_t steps, int64_t batch, double lr, uint64_t seed) {
  TrainConfig t;
  t.steps = steps;
  t.batch = batch;
  t.lr = lr;
  t.seed = seed;
  t.warmup = std::min<int64_t>(100, steps / 10);
  t.eval_every = steps;  // once, at the end
  t.eval_size = 64;
  t.log_every = 50;
  t.threads = 1;  // suites parallelise over cells, one worker process per core
  t.validate();
  return t.to_json();
}

nlohmann::json normalized_cell(nlohmann::json cell) {
  auto through = [&cell](const char* key, auto read) {
    auto it = cell.find(key);
    if (it == cell.end() || !it->is_object()) return;
    try {
      *it = read(*it);
    } catch (const Error&) {  // not this config: compare it as written
    }
  };
  through("model", [](const nlohmann::json& j) { return ModelConfig::from_json(j, "").to_json(); });
  through("task", [](const nlohmann::json& j) { return TaskConfig::from_json(j, "").to_json(); });
  through("train", [](const nlohmann::json& j) { return TrainConfig::from_json(j, "").to_json(); });
  through("adapter",
          [](const nlohmann::json& j) { return AdapterConfig::from_json(j, "").to_json(); });
  through("convert", [](const nlohmann::json& j) {
    ConvertConfig c;
    c.visit(DefaultsVisitor{});
    read_fields(j, c, "", /*strict=*/true);  // an unknown key: compare as written
    return c.to_json();
  });
  return cell;
}

}  // namespace seqlab
