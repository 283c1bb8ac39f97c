// Fuzzes the strict reader of stored bf16 / int8 model weights (model/quantized_dir.h,
// decode_weights) on arbitrary bytes: the first byte picks the declared format (even: int8, odd:
// bf16), the rest is read as model.safetensors for a fixed small model (a matrix with a tail block,
// a bias, a 3-D parameter, an integer buffer).
// Oracles on every accepted file: the decoded tensors are exactly the model's names, shapes and
// dtypes (fp32 for floating point); int8 matrices decode to finite weights (the scales were
// checked); encoding the decoded weights again and decoding that is accepted too, bf16 unchanged
// bit for bit.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"
#include "seqlab/model/quantized_dir.h"

#include <cstring>

using namespace seqlab;
using seqlab::fuzz::finding;

namespace {

const TensorMap& model() {
  static const TensorMap m = [] {
    torch::manual_seed(1);
    return TensorMap{{"l.weight", torch::randn({3, 40})},
                     {"l.bias", torch::randn({3})},
                     {"emb.weight", torch::randn({2, 5})},
                     {"conv.weight", torch::randn({2, 1, 4})},
                     {"steps", torch::tensor({5, 6}, torch::kInt64)}};
  }();
  return m;
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0;
}

void check_accepted(const TensorMap& decoded, WeightFormat f) {
  if (decoded.size() != model().size()) finding("decoded a different set of tensors");
  for (const auto& [name, t] : model()) {
    auto it = decoded.find(name);
    if (it == decoded.end()) finding("decoded tensors lack " + name);
    const auto& d = it->second;
    const auto want = t.is_floating_point() ? torch::kFloat : t.scalar_type();
    if (d.sizes() != t.sizes() || d.scalar_type() != want)
      finding("decoded " + name + " has the wrong shape or dtype");
    if (f == WeightFormat::int8 && is_stored_matrix(name, t) &&
        !torch::isfinite(d).all().item<bool>())
      finding("an accepted int8 matrix decoded to a non-finite weight: " + name);
  }
  TensorMap again;
  try {
    again = decode_weights(encode_weights(decoded, f), model(), f, "again.safetensors");
  } catch (const Error& e) {
    // bf16 keeps any bit pattern; int8 has no value for a non-finite weight (a NaN or inf bf16 or
    // F32 parameter is stored as it is): only a matrix of finite weights must encode again.
    if (f == WeightFormat::int8)
      finding(std::string("decoded weights do not encode again: ") + e.what());
    return;
  }
  if (f == WeightFormat::bf16)
    for (const auto& [name, t] : decoded)
      if (!same_bits(t, again.at(name)) && torch::isfinite(t).all().item<bool>())
        finding("bf16 re-encoding changed " + name);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::vector<std::string> seeds;
  for (auto f : {WeightFormat::int8, WeightFormat::bf16}) {
    const char tag = f == WeightFormat::int8 ? '\0' : '\1';
    seeds.push_back(tag + save_safetensors_bytes(encode_weights(model(), f), {{"format", "pt"}}));
  }
  fuzz::maybe_write_seeds(seeds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const WeightFormat f = data[0] % 2 == 0 ? WeightFormat::int8 : WeightFormat::bf16;
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  TensorMap decoded;
  try {
    const auto file = load_safetensors_bytes(bytes, "fuzz.safetensors");
    decoded = decode_weights(file.tensors, model(), f, "fuzz.safetensors");
  } catch (const Error&) {
    return 0;
  }
  check_accepted(decoded, f);
  return 0;
}
