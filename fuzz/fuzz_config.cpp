// Fuzzes config.json reading on arbitrary bytes: parse_config_json (the checks read_config_json
// makes), then every section through its from_json (ModelConfig, TaskConfig, TrainConfig,
// AdapterConfig, StartFrom), as load_model_dir, the trainer and finetune do.
// Oracle: an accepted config writes (to_json) and reads back to the same JSON.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/model/adapters.h"
#include "seqlab/model/model_config.h"
#include "seqlab/model/model_dir.h"
#include "seqlab/tasks/task.h"
#include "seqlab/train/trainer.h"

using namespace seqlab;

namespace {

template <class Config>
void check_section(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return;
  Config c;
  try {
    c = Config::from_json(j.at(key), "config.json");
  } catch (const Error&) {
    return;
  }
  const nlohmann::json written = c.to_json();
  try {
    if (Config::from_json(written, "again").to_json() != written)
      fuzz::finding(fmt::format("section {} changes when written and read back", key));
  } catch (const Error& e) {
    fuzz::finding(fmt::format("section {} as written does not read back: {}", key, e.what()));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto file = [](nlohmann::json model, nlohmann::json extra) {
    nlohmann::json j = {{"format", "seqlab-model"},
                        {"format_version", 1},
                        {"seqlab_version", "0.1.0"},
                        {"model", model}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return j.dump(2) + "\n";
  };
  ModelConfig classify;
  classify.head = "classify";
  classify.n_classes = 3;
  classify.exits = "1";
  classify.mixer.arch = "linear";
  ModelConfig deq;
  deq.n_layer = 1;
  deq.deq.enabled = true;
  StartFrom from;
  from.init = "runs/base";
  fuzz::maybe_write_seeds(
      {file(ModelConfig().to_json(),
            {{"task", TaskConfig().to_json()}, {"train", TrainConfig().to_json()}}),
       file(classify.to_json(), {{"adapters", AdapterConfig().to_json()}}),
       file(deq.to_json(), {{"finetune", from.to_json()}, {"hf", {{"model_type", "gpt2"}}}})});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = parse_config_json(std::string_view(reinterpret_cast<const char*>(data), size),
                          "config.json");
  } catch (const Error&) {
    return 0;
  }
  check_section<ModelConfig>(j, "model");
  check_section<TaskConfig>(j, "task");
  check_section<TrainConfig>(j, "train");
  check_section<AdapterConfig>(j, "adapters");
  check_section<StartFrom>(j, "finetune");
  try {
    ModelConfig::from_json(j.at("model"), "config.json").exit_layers();
  } catch (const Error&) {
  }
  return 0;
}
