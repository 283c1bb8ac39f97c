#include "seqlab/core/quant.h"

#include "seqlab/core/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace seqlab {

WeightFormat parse_weight_format(const std::string& name) {
  if (name == "f32") return WeightFormat::f32;
  if (name == "bf16") return WeightFormat::bf16;
  if (name == "int8") return WeightFormat::int8;
  fail("unknown weight format '{}' (choose f32, bf16 or int8)", name);
}

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::f32:
      return "f32";
    case WeightFormat::bf16:
      return "bf16";
    case WeightFormat::int8:
      return "int8";
  }
  return "?";
}

int64_t weight_bytes(WeightFormat f, int64_t out, int64_t in) {
  switch (f) {
    case WeightFormat::f32:
      return out * in * 4;
    case WeightFormat::bf16:
      return out * in * 2;
    case WeightFormat::int8:
      return out * in + out * q8_blocks(in) * 4;
  }
  return 0;
}

void quantize_q8(const float* w, int64_t out, int64_t in, int8_t* q, float* scales) {
  const int64_t nb = q8_blocks(in);
  for (int64_t r = 0; r < out; ++r) {
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t c0 = j * kQ8Block, c1 = std::min(in, c0 + kQ8Block);
      const float* x = w + r * in;
      float amax = 0.f;
      for (int64_t c = c0; c < c1; ++c) {
        SEQLAB_CHECK(std::isfinite(x[c]), "weight [{}, {}] is {}: int8 cannot hold it", r, c, x[c]);
        amax = std::max(amax, std::fabs(x[c]));
      }
      const float scale = amax / 127.f;
      scales[r * nb + j] = scale;
      for (int64_t c = c0; c < c1; ++c) {
        const float v = scale == 0.f ? 0.f : std::round(x[c] / scale);
        q[r * in + c] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
      }
    }
  }
}

void dequantize_q8(const int8_t* q, const float* scales, int64_t out, int64_t in, float* w) {
  const int64_t nb = q8_blocks(in);
  for (int64_t r = 0; r < out; ++r)
    for (int64_t c = 0; c < in; ++c)
      w[r * in + c] = static_cast<float>(q[r * in + c]) * scales[r * nb + c / kQ8Block];
}

uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a quiet NaN
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest, ties to even (overflow rounds to inf)
  return static_cast<uint16_t>(u >> 16);
}

float bf16_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace seqlab
