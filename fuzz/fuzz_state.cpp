// Fuzzes the decoder-state snapshot reader (FastModel::load_state, here load_state_bytes) on
// arbitrary bytes. The first byte picks one of four tiny models (softmax attention with a KV
// cache and learned positions, linear attention, Mamba, QRNN); the rest is the state file. A state
// that loads must then be usable: one step() and a short prefill() from it, which is where a bad
// position or size would write out of bounds.
//
// fuzz/corpus/state/seed8_pos_max is made by hand, not by SEQLAB_FUZZ_WRITE_SEEDS: the linear
// model's state with pos = 2^63 - 1, which step() used to advance by signed overflow.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/infer/fast_model.h"

using namespace seqlab;

namespace {

struct Tiny {
  SeqModel model{nullptr};
  std::unique_ptr<infer::FastModel> fast;
};

std::vector<Tiny>& models() {
  static std::vector<Tiny> m = [] {
    std::vector<Tiny> out;
    for (const char* arch : {"softmax", "linear", "mamba", "qrnn"}) {
      ModelConfig c;
      c.mixer.arch = arch;
      c.mixer.d_model = 8;
      c.mixer.n_head = 2;
      c.mixer.d_state = 4;
      c.mixer.max_len = 6;
      c.vocab_size = 5;
      c.n_layer = 2;
      c.mlp_ratio = 1;
      c.validate();
      Tiny t;
      t.model = SeqModel(c);
      t.model->eval();
      t.fast = std::make_unique<infer::FastModel>(*t.model);
      out.push_back(std::move(t));
    }
    return out;
  }();
  return m;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  torch::set_num_threads(1);
  if (!std::getenv("SEQLAB_FUZZ_WRITE_SEEDS")) return 0;
  std::vector<std::string> seeds;
  const std::string tmp = fmt::format("/tmp/fuzz_state_seed_{}", getpid());
  for (size_t i = 0; i < models().size(); ++i) {
    auto& fast = *models()[i].fast;
    auto s = fast.init_state();
    for (int pass = 0; pass < 2; ++pass) {
      fast.save_state(tmp, s);
      seeds.push_back(std::string(1, static_cast<char>(i)) + read_all(tmp));
      const int64_t prompt[] = {1, 2, 3};
      fast.prefill(prompt, 3, s, nullptr);
    }
  }
  std::remove(tmp.c_str());
  fuzz::maybe_write_seeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto& fast = *models()[data[0] % models().size()].fast;
  infer::DecoderState s;
  try {
    s = fast.load_state_bytes(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
                              "state.safetensors");
  } catch (const Error&) {
    return 0;
  }
  std::vector<float> logits(fast.vocab_size());
  auto copy = s;
  try {
    fast.step(1, s, logits.data());
  } catch (const Error&) {
  }
  try {
    const int64_t prompt[] = {4, 0, 2};
    fast.prefill(prompt, 3, copy, logits.data());
  } catch (const Error&) {
  }
  return 0;
}
