// Weight formats of the fast decoder and of stored models (issue 35): fp32, bf16 and int8 in
// blocks of 32 along a matrix's input dimension with one fp32 scale per block (ggml's Q8_0 layout,
// with an fp32 scale where ggml stores fp16). These are the scalar reference conversions: the
// kernels in infer/ and the stored format (`seqlab quantize`, docs/DESIGN.md "Data and file
// formats") are tested against them.
#pragma once

#include <cstdint>
#include <string>

namespace seqlab {

enum class WeightFormat { f32, bf16, int8 };

// "f32" | "bf16" | "int8"; anything else is a seqlab::Error listing the three.
WeightFormat parse_weight_format(const std::string& name);
const char* weight_format_name(WeightFormat f);
// Bytes of one [out, in] matrix in a format (int8 counts its scales).
int64_t weight_bytes(WeightFormat f, int64_t out, int64_t in);

constexpr int64_t kQ8Block = 32;
// Blocks per row of `in` inputs; the last block of a row whose length is not a multiple of 32 is
// shorter (a row never shares a block with the next).
inline int64_t q8_blocks(int64_t in) {
  return (in + kQ8Block - 1) / kQ8Block;
}

// Row-major w [out, in] -> q [out, in] and scales [out, q8_blocks(in)]: per block,
// scale = max|w| / 127 and q = round(w / scale) (half away from zero), in [-127, 127]; an all-zero
// block has scale 0 and q 0. A non-finite weight is a seqlab::Error (it has no int8 value).
void quantize_q8(const float* w, int64_t out, int64_t in, int8_t* q, float* scales);
// w = q * scale, element by element.
void dequantize_q8(const int8_t* q, const float* scales, int64_t out, int64_t in, float* w);

// bf16: the top 16 bits of an fp32. float_to_bf16 rounds to nearest, ties to even; NaN stays a
// (quiet) NaN and infinities stay infinite.
uint16_t float_to_bf16(float x);
float bf16_to_float(uint16_t h);

}  // namespace seqlab
