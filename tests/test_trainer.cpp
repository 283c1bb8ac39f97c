#include "seqlab/train/trainer.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/model_dir.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace seqlab;
namespace fs = std::filesystem;

namespace {

std::string tmp_dir(const std::string& name) {
  auto d =
      fs::temp_directory_path() / ("seqlab_test_trainer_" + std::to_string(getpid()) + "_" + name);
  fs::remove_all(d);
  return d.string();
}

struct RunSetup {
  ModelConfig m;
  TaskConfig t;
  TrainConfig tr;
  RunSetup(const std::string& arch) {
    m.mixer.arch = arch;
    m.mixer.d_model = 16;
    m.mixer.n_head = 2;
    m.n_layer = 1;
    t.task = "parity";
    t.min_len = 2;
    t.max_len = 12;
    tr.steps = 12;
    tr.batch = 8;
    tr.warmup = 3;
    tr.lr = 3e-3;
    tr.eval_size = 16;
    tr.eval_every = 4;
    tr.log_every = 2;
    tr.threads = 1;
  }
};

TensorMap weights(const std::string& dir) {
  return load_safetensors((fs::path(dir) / kWeightsFile).string()).tensors;
}

int count_lines(const std::string& path) {
  std::ifstream in(path);
  std::string l;
  int n = 0;
  while (std::getline(in, l)) ++n;
  return n;
}

}  // namespace

class Resume : public ::testing::TestWithParam<std::string> {};

// An interrupted and resumed run ends with bitwise the same weights as an uninterrupted one.
TEST_P(Resume, IsBitwiseExact) {
  RunSetup s(GetParam());
  const auto full = tmp_dir("full_" + GetParam()), part = tmp_dir("part_" + GetParam());
  train_model(s.m, s.t, s.tr, full, false);
  auto r1 = train_model(s.m, s.t, s.tr, part, false, 0, /*stop_after=*/5);
  EXPECT_EQ(r1.steps, 5);
  auto r2 = train_model(ModelConfig(), TaskConfig(), TrainConfig(), part, true);
  EXPECT_EQ(r2.start_step, 5);
  auto a = weights(full), b = weights(part);
  ASSERT_EQ(a.size(), b.size());
  for (auto& [k, v] : a) EXPECT_TRUE(v.equal(b.at(k))) << k << " differs after resume";
  // The resumed log is the uninterrupted one, line for line.
  EXPECT_EQ(read_file((fs::path(full) / kMetricsFile).string()),
            read_file((fs::path(part) / kMetricsFile).string()));
  EXPECT_GT(count_lines((fs::path(full) / kMetricsFile).string()), 3);
}

INSTANTIATE_TEST_SUITE_P(Archs, Resume, ::testing::Values("lstm", "softmax", "t2r"));

TEST(Trainer, RefusesToOverwriteAModel) {
  RunSetup s("gru");
  s.tr.steps = 2;
  const auto dir = tmp_dir("overwrite");
  train_model(s.m, s.t, s.tr, dir, false);
  EXPECT_THROW(train_model(s.m, s.t, s.tr, dir, false), seqlab::Error);
}

TEST(Trainer, ResumeCanExtendTheRun) {
  RunSetup s("gru");
  s.tr.steps = 4;
  const auto dir = tmp_dir("extend");
  train_model(s.m, s.t, s.tr, dir, false);
  auto r = train_model(s.m, s.t, s.tr, dir, true, /*steps_override=*/6);
  EXPECT_EQ(r.start_step, 4);
  EXPECT_EQ(r.steps, 6);
  auto cfg = read_config_json(dir);
  EXPECT_EQ(cfg["train"]["steps"], 6);
}

TEST(Trainer, ResumeRefusesACorruptLoopStateWithAnError) {
  // train_state.safetensors is read back on --resume: a NaN or huge count in 'trainer.loop' was
  // cast to int64 (undefined behaviour), a float 'step' went through item<int64_t>().
  RunSetup s("gru");
  s.tr.steps = 2;
  const auto dir = tmp_dir("corrupt_loop");
  train_model(s.m, s.t, s.tr, dir, false);
  const auto path = (fs::path(dir) / kTrainStateFile).string();
  const auto good = load_safetensors(path);
  auto resume_error = [&](const std::string& name, const torch::Tensor& value) {
    auto f = good;
    f.tensors[name] = value;
    save_safetensors(path, f.tensors, f.metadata);
    try {
      train_model(s.m, s.t, s.tr, dir, true, /*steps_override=*/4);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  const double nan = std::nan("");
  EXPECT_NE(resume_error("trainer.loop", torch::tensor({0.0, nan, 0.0, 0.0, -1.0}, torch::kDouble))
                .find("'trainer.loop' holds an invalid count nan"),
            std::string::npos);
  EXPECT_NE(
      resume_error("trainer.loop", torch::tensor({0.0, 1e300, 0.0, 0.0, -1.0}, torch::kDouble))
          .find("invalid count"),
      std::string::npos);
  EXPECT_NE(resume_error("trainer.loop", torch::zeros({5, 1}, torch::kDouble))
                .find("must hold 5 float64 values"),
            std::string::npos);
  EXPECT_NE(resume_error("step", torch::tensor({1e30})).find("missing 'step' (one int64)"),
            std::string::npos);
}

TEST(Trainer, BadTrainingOptionsAreErrors) {
  RunSetup s("gru");
  s.tr.lr = -1;
  EXPECT_THROW(train_model(s.m, s.t, s.tr, tmp_dir("bad"), false), seqlab::Error);
  RunSetup s2("gru");
  s2.t.task = "nonesuch";
  EXPECT_THROW(train_model(s2.m, s2.t, s2.tr, tmp_dir("bad2"), false), seqlab::Error);
}

// --tie-tag-head trains a tag task (parity: 2 classes read by tokens 0 and 1) and is refused, once
// the task is known, for a task whose head is not tag.
TEST(Trainer, TiedTagHeadOnlyForTagTasks) {
  RunSetup s("gru");
  s.m.tie_tag_head = true;
  const auto dir = tmp_dir("tied_tag");
  train_model(s.m, s.t, s.tr, dir, false);
  EXPECT_EQ(weights(dir).count("head.weight"), 0u);
  s.t.task = "copy";
  s.t.min_len = 2;
  try {
    train_model(s.m, s.t, s.tr, tmp_dir("tied_tag_lm"), false);
    ADD_FAILURE() << "an lm task with --tie-tag-head trained";
  } catch (const seqlab::Error& e) {
    EXPECT_NE(std::string(e.what()).find("copy's head is lm"), std::string::npos) << e.what();
  }
}

// The seed evaluation defaults to: the one the model was trained with (0 when none is recorded).
TEST(TrainedSeed, IsTheTrainSectionsSeed) {
  LoadedModel m;
  EXPECT_EQ(trained_seed(m, "dir"), 0u);
  TrainConfig tr;
  tr.seed = 42;
  m.sections["train"] = tr.to_json();
  EXPECT_EQ(trained_seed(m, "dir"), 42u);
  m.sections["train"] = {{"sead", 1}};
  try {
    trained_seed(m, "dir");
    ADD_FAILURE() << "an unknown train field was accepted";
  } catch (const seqlab::Error& e) {
    EXPECT_EQ(std::string(e.what()), "dir: unknown train field 'sead'");
  }
}
