// Data parallelism for the conversion stages (convert --distill-steps, finetune), as `seqlab train`
// has it (train/distributed.h, train/launch.h): 2 workers with the same global batch reach the
// weights of 1 process within fp32 rounding, whether started by --nproc or torchrun-style through
// RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT. And attention transfer's layer-by-layer backward
// (one layer's [B,H,T,T] weights alive at a time) is bitwise the summed loss's.
#include "cli_testing.h"
#include "weights_testing.h"

#include "seqlab/convert/convert.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/tasks/registry.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/optim.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

using namespace seqlab;
using seqlab::testing::checkpoint_weights;
using seqlab::testing::cli_tmp;
using seqlab::testing::expect_cli_error;
using seqlab::testing::gradient_free;
using seqlab::testing::relative_drift;
using seqlab::testing::run_seqlab;
using seqlab::testing::seqlab_bin;
using seqlab::testing::worst_weight_diff;
namespace fs = std::filesystem;

namespace {

const std::string kTiny =
    " --task copy --max-len 12 --d-model 16 --n-head 2 --n-layer 2 --threads 1 -q ";

// A small trained softmax model, made once per test process.
const std::string& teacher() {
  static const std::string dir = [] {
    auto d = cli_tmp("dp_teacher");
    auto r = run_seqlab("train --out " + d + kTiny + " --batch 8 --steps 20");
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

const std::string kTransfer =
    " --to hedgehog --distill-steps 8 --distill-batch 6 --distill-lr 3e-2 ";

}  // namespace

TEST(ConvertDataParallel, TwoWorkersTransferLikeOneProcess) {
  const auto one = cli_tmp("conv_one"), two = cli_tmp("conv_two"), none = cli_tmp("conv_none");
  auto r1 = run_seqlab("convert --model " + teacher() + " --out " + one + kTransfer +
                       "--threads 1 -q --json");
  ASSERT_EQ(r1.code, 0) << r1.err;
  auto r2 = run_seqlab("convert --model " + teacher() + " --out " + two + kTransfer +
                       "--nproc 2 --threads 1 -q --json");
  ASSERT_EQ(r2.code, 0) << r2.err;
  // One summary on stdout (rank 0's), saying how many workers shared the batches.
  const auto j1 = nlohmann::json::parse(r1.out), j2 = nlohmann::json::parse(r2.out);
  EXPECT_EQ(j2["convert"]["distill"]["workers"], 2);
  EXPECT_FALSE(j1["convert"]["distill"].contains("workers"));
  const auto b1 = j1["convert"]["distill"]["loss_before"],
             b2 = j2["convert"]["distill"]["loss_before"];
  EXPECT_EQ(b1, b2);  // the same held-out batch and starting point
  for (size_t l = 0; l < 2; ++l)
    EXPECT_NEAR(j1["convert"]["distill"]["loss_after"][l].get<double>(),
                j2["convert"]["distill"]["loss_after"][l].get<double>(), 1e-5);
  const auto a = checkpoint_weights(one), b = checkpoint_weights(two);
  {
    const auto d = worst_weight_diff(a, b, gradient_free);
    EXPECT_LT(d.value, 1e-5) << d.tensor;
  }
  // The feature maps moved: the comparison is not between two initialisations.
  ASSERT_EQ(run_seqlab("convert --model " + teacher() + " --out " + none +
                       " --to hedgehog --threads 1 -q")
                .code,
            0);
  EXPECT_GT(worst_weight_diff(a, checkpoint_weights(none), gradient_free).value, 1e-2);
  EXPECT_EQ(read_config_json(one)["model"], read_config_json(two)["model"]);
}

TEST(ConvertDataParallel, TorchrunEnvironmentWorkersTransferLikeOneProcess) {
  const auto one = cli_tmp("env_one"), two = cli_tmp("env_two");
  ASSERT_EQ(
      run_seqlab("convert --model " + teacher() + " --out " + one + kTransfer + "--threads 1 -q")
          .code,
      0);
  // Two processes started by hand, as torchrun starts them: rank, world and rendezvous in the
  // environment, no flag.
  const int port = free_local_port();
  std::vector<int> codes(2, -1);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      const std::string env = "RANK=" + std::to_string(r) +
                              " WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
                              "MASTER_PORT=" +
                              std::to_string(port) + " ";
      const auto log = cli_tmp("env_rank" + std::to_string(r) + ".log");
      const int s = std::system((env + seqlab_bin() + " convert --model " + teacher() + " --out " +
                                 two + kTransfer + "--threads 1 -q >" + log + " 2>&1")
                                    .c_str());
      codes[r] = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    });
  for (auto& t : ranks) t.join();
  ASSERT_EQ(codes, (std::vector<int>{0, 0}));
  {
    const auto d =
        worst_weight_diff(checkpoint_weights(one), checkpoint_weights(two), gradient_free);
    EXPECT_LT(d.value, 1e-5) << d.tensor;
  }
}

TEST(FinetuneDataParallel, TwoWorkersFinetuneLikeOneProcess) {
  const std::string run = "finetune --model " + teacher() +
                          " --steps 6 --batch 6 --lr 3e-3 --warmup 1 --eval-size 6 --threads 1 "
                          "-q --json --out ";
  const auto one = cli_tmp("ft_one"), two = cli_tmp("ft_two");
  auto r1 = run_seqlab(run + one);
  ASSERT_EQ(r1.code, 0) << r1.err;
  auto r2 = run_seqlab(run + two + " --nproc 2");
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_EQ(std::count(r2.out.begin(), r2.out.end(), '\n'), 1) << r2.out;
  const auto a = checkpoint_weights(one), b = checkpoint_weights(two);
  // Within fp32 rounding of one process's steps (a coordinate whose gradient is near zero can
  // flip its AdamW step, so elementwise differences reach 1e-4 of a tensor's scale), where
  // 3-row batches, what an unreduced worker would take, move elsewhere.
  const auto start = checkpoint_weights(teacher());
  EXPECT_LT(relative_drift(a, b, start, gradient_free), 1e-3);
  {
    // Elementwise too: 1.9e-4 of a tensor's scale measured on an AVX-512 EPYC.
    const auto d = worst_weight_diff(a, b, gradient_free);
    EXPECT_LT(d.value, 1e-3) << d.tensor;
  }
  const auto half = cli_tmp("ft_half");
  ASSERT_EQ(run_seqlab(std::regex_replace(run, std::regex("--batch 6"), "--batch 3") + half).code,
            0);
  EXPECT_GT(relative_drift(a, checkpoint_weights(half), start, gradient_free), 1e-2);
  EXPECT_EQ(read_config_json(one)["train"], read_config_json(two)["train"]);
  EXPECT_EQ(read_config_json(two)["finetune"]["init"], teacher());
}

TEST(FinetuneDataParallel, ErrorsReachEveryWorker) {
  // Rank 0 fails reading --model; the other worker gets its error at once instead of waiting out
  // the rendezvous, and the launcher fails.
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_seqlab("finetune --model " + cli_tmp("nothing_here") +
                      " --steps 2 --nproc 2 --threads 1 -q --out " + cli_tmp("ft_err"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nothing_here"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data-parallel worker rank"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60);
  // 6 rows cannot feed 7 workers: refused before any is started.
  expect_cli_error(
      "convert --model " + teacher() + " --out " + cli_tmp("conv_err") + kTransfer + "--nproc 7",
      "--distill-batch 6 is smaller than the 7 data-parallel workers");
}

TEST(ConvertTransfer, LayerByLayerBackwardIsTheSummedLossBitwise) {
  // One transfer step by hand, the whole loss summed over the layers and one backward, equals
  // distill_attention's first step, which runs each layer's backward on its own.
  TaskConfig tc;
  tc.task = "copy";
  tc.max_len = 12;
  auto task = make_task(tc);
  ModelConfig mc;
  mc.mixer.d_model = 16;
  mc.mixer.n_head = 2;
  mc.mixer.max_len = 12;
  mc.n_layer = 3;
  mc.vocab_size = task->vocab_size();
  mc.validate();
  torch::manual_seed(3);
  SeqModelImpl teacher(mc);
  ConvertConfig c;
  c.to = "t2r";
  c.distill_steps = 1;
  c.distill_batch = 4;
  auto by_layer = convert_model(teacher, c), summed = convert_model(teacher, c);
  distill_attention(teacher, *by_layer, *task, c, 12);

  std::vector<std::pair<std::string, torch::Tensor>> named;
  std::vector<torch::Tensor> params;
  for (auto& p : summed->named_parameters()) {
    const bool fm = p.key().find(".feature_map.") != std::string::npos;
    p.value().set_requires_grad(fm);
    if (fm) {
      named.emplace_back(p.key(), p.value());
      params.push_back(p.value());
    }
  }
  AdamWOptions o;
  o.weight_decay = 0;
  AdamW opt(named, o);
  auto tokens = task->sample(4, 12, mix_seed(c.distill_seed, 0)).input;
  std::vector<torch::Tensor> inputs;
  {
    torch::NoGradGuard ng;
    inputs = teacher.mixer_inputs(tokens);
  }
  torch::Tensor loss = torch::zeros({});
  for (size_t l = 0; l < inputs.size(); ++l) {
    torch::Tensor a;
    {
      torch::NoGradGuard ng;
      a = std::dynamic_pointer_cast<SoftmaxAttentionImpl>(teacher.blocks->ptr<BlockImpl>(l)->mixer)
              ->attention_weights(inputs[l]);
    }
    auto b =
        std::dynamic_pointer_cast<LinearAttentionImpl>(summed->blocks->ptr<BlockImpl>(l)->mixer)
            ->attention_weights(inputs[l]);
    loss = loss + (-(a * torch::log(b.clamp_min(1e-12))).sum(-1).mean());
  }
  opt.zero_grad();
  loss.backward();
  clip_grad_norm(params, 1.0);
  opt.step(lr_at(0, 1, 0, c.distill_lr, 0.1));
  const auto mine = by_layer->named_parameters();
  size_t compared = 0;
  for (const auto& [name, p] : named) {
    EXPECT_TRUE(torch::equal(p, mine[name])) << name;
    ++compared;
  }
  EXPECT_EQ(compared, 2u * 3u);  // w and b of each layer's map
}
