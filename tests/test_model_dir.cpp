#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/safetensors.h"

#include "mixer_testing.h"

#include <unistd.h>

#include <filesystem>

using namespace seqlab;
using namespace seqlab::testing;
namespace fs = std::filesystem;

namespace {

std::string tmp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() /
           ("seqlab_test_model_dir_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  return d.string();
}

ModelConfig tiny(const std::string& arch) {
  ModelConfig c;
  c.mixer = small_config(arch);
  c.vocab_size = 7;
  c.validate();
  return c;
}

std::string load_error(const std::string& dir) {
  try {
    load_model_dir(dir);
  } catch (const seqlab::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class ModelDirArchs : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelDirArchs, RoundTripGivesEqualLogits) {
  const auto dir = tmp_dir("rt_" + GetParam());
  torch::manual_seed(2);
  SeqModelImpl m(tiny(GetParam()));
  save_model_dir(dir, m, {{"task", {{"task", "parity"}}}});
  auto back = load_model_dir(dir);
  torch::NoGradGuard ng;
  m.eval();
  auto tokens = torch::randint(0, 7, {2, 9}, torch::kLong);
  EXPECT_TRUE(all_close(m.forward(tokens), back.model->forward(tokens), 0.0));
  EXPECT_EQ(back.sections["task"]["task"], "parity");
}

// rfa and performer keep their random matrices as buffers: they must survive the round trip.
INSTANTIATE_TEST_SUITE_P(All, ModelDirArchs,
                         ::testing::Values("softmax", "rfa", "performer", "hedgehog", "lstm", "s4d",
                                           "mamba"));

TEST(ModelDir, RejectsMissingAndExtraTensors) {
  const auto dir = tmp_dir("bad");
  SeqModelImpl m(tiny("gru"));
  save_model_dir(dir, m);
  const auto w = (fs::path(dir) / kWeightsFile).string();
  auto t = load_safetensors(w).tensors;
  auto missing = t;
  missing.erase("ln_f.weight");
  save_safetensors(w, missing);
  auto e = load_error(dir);
  EXPECT_NE(e.find("ln_f.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  auto extra = t;
  extra["blocks.9.mixer.w_ih.weight"] = torch::zeros({2});
  save_safetensors(w, extra);
  e = load_error(dir);
  EXPECT_NE(e.find("blocks.9.mixer.w_ih.weight"), std::string::npos) << e;
  auto wrong = t;
  wrong["wte.weight"] = torch::zeros({8, 16});
  save_safetensors(w, wrong);
  e = load_error(dir);
  EXPECT_NE(e.find("wte.weight"), std::string::npos) << e;
}

TEST(ModelDir, RejectsBadConfig) {
  const auto dir = tmp_dir("cfg");
  SeqModelImpl m(tiny("gru"));
  save_model_dir(dir, m);
  const auto cfg = (fs::path(dir) / kConfigFile).string();
  write_file_atomic(cfg, "{not json");
  EXPECT_NE(load_error(dir).find("not valid JSON"), std::string::npos);
  write_file_atomic(cfg, R"({"format":"seqlab-model","format_version":99,"model":{}})");
  EXPECT_NE(load_error(dir).find("format_version 99"), std::string::npos);
  write_file_atomic(cfg, R"({"format":"seqlab-model","format_version":1,"model":{},"extra":1})");
  EXPECT_NE(load_error(dir).find("unknown field 'extra'"), std::string::npos);
  EXPECT_NE(load_error(tmp_dir("nothing")).find("not a directory"), std::string::npos);
}

TEST(ModelDir, RejectsHostileConfigsWithAnError) {
  // Found by fuzz/fuzz_config.cpp's reasoning: each used to crash or be accepted.
  const auto dir = tmp_dir("hostile");
  SeqModelImpl m(tiny("gru"));
  save_model_dir(dir, m);
  const auto cfg = (fs::path(dir) / kConfigFile).string();
  const std::string head = R"({"format":"seqlab-model","format_version":1,)";
  // A million '[' where an integer belongs: the "must be an integer, got ..." message serialized
  // the value recursively and overflowed the stack.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  write_file_atomic(cfg, head + R"("model":{"d_model":)" + deep + "}}");
  EXPECT_NE(load_error(dir).find("nested deeper than 64 levels"), std::string::npos)
      << load_error(dir);
  // ... and copying a deep optional section recursed too.
  write_file_atomic(cfg, head + R"("model":{},"task":)" + deep + "}");
  EXPECT_NE(load_error(dir).find("nested deeper than 64 levels"), std::string::npos);
  // Shallow but structured values are named by type, not dumped.
  write_file_atomic(cfg, head + R"("model":{"d_model":[1,2,3]}})");
  EXPECT_NE(load_error(dir).find("field 'd_model' must be an integer, got an array"),
            std::string::npos)
      << load_error(dir);
  // format_version 2^32 + 1 was read as an int, that is as 1, and accepted.
  write_file_atomic(cfg, R"({"format":"seqlab-model","format_version":4294967297,"model":{}})");
  EXPECT_NE(load_error(dir).find("format_version 4294967297 is not supported"), std::string::npos)
      << load_error(dir);
  fs::remove_all(dir);
}

// model/model_task.h: the task section, typed, and the tokenizer it names.
TEST(ModelTask, IsReadFromTheTaskSection) {
  LoadedModel m;
  m.config.vocab_size = 7;
  EXPECT_FALSE(model_task(m, "dir").has_value());  // a model no training run wrote
  EXPECT_EQ(model_tokenizer(m, "dir"), nullptr);
  m.sections["task"] = {{"task", "parity"}, {"max_len", 33}};
  const auto t = model_task(m, "dir");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->task, "parity");
  EXPECT_EQ(t->max_len, 33);
  EXPECT_EQ(t->n_types, TaskConfig().n_types);  // the fields it does not name keep their defaults
  // A task over its own alphabet has no tokenizer, whatever its (default) tokenizer field says.
  EXPECT_EQ(model_tokenizer(m, "dir"), nullptr);
}

TEST(ModelTask, LanguageModelsNameTheirTokenizer) {
  LoadedModel m;
  m.config.vocab_size = 257;
  m.sections["task"] = {{"task", "lm"}, {"tokenizer", "byte"}};
  const auto tok = model_tokenizer(m, "dir");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->spec(), "byte");
  EXPECT_EQ(tok->vocab_size(), 257);
}

TEST(ModelTask, ErrorsNameTheDirectory) {
  auto error = [](const LoadedModel& m) -> std::string {
    try {
      model_tokenizer(m, "some/dir");
    } catch (const seqlab::Error& e) {
      return e.what();
    }
    return "";
  };
  LoadedModel m;
  m.config.vocab_size = 7;
  m.sections["task"] = {{"task", "lm"}, {"tokenizer", "byte"}};
  EXPECT_EQ(error(m), "some/dir: the tokenizer has 257 tokens but the model 7");
  m.sections["task"] = {{"task", "lm"}, {"colour", "blue"}};
  EXPECT_EQ(error(m), "some/dir: unknown task field 'colour'");
  m.sections["task"] = {{"task", "lm"}, {"tokenizer", "no-such-tokenizer-dir"}};
  EXPECT_NE(error(m).find("no-such-tokenizer-dir"), std::string::npos) << error(m);
}
