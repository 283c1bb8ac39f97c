// Reading and writing the safetensors format (https://github.com/huggingface/safetensors), the
// format of model.safetensors and train_state.safetensors (docs/DESIGN.md, "Data and file
// formats").
//
// Layout of a file:
//
//   [8 bytes]  N, the header length, an unsigned 64-bit little-endian integer
//   [N bytes]  a UTF-8 JSON object:
//                {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//                 "__metadata__": {"key": "value", ...}}          (the metadata is optional)
//   [rest]     the data buffer: raw little-endian tensor bytes, row-major; data_offsets are
//              relative to the start of this buffer, `end` exclusive
//
// The writer stores tensors contiguously in name order, omits "__metadata__" when it is empty, and
// pads the header with spaces to a multiple of 8 bytes, so the buffer starts 8-byte aligned.
//
// The reader is strict, like the reference Rust implementation, and rejects with a one-line
// seqlab::Error naming the file and the problem: a file shorter than 8 bytes; a header length past
// the end of the file or over 100 MB; a header that is not a JSON object of well-formed entries
// (required fields "dtype", "shape", "data_offsets", no other fields) or that nests deeper than 64
// levels (refused while parsing: core/json_read.h); duplicate names or keys; an unsupported dtype;
// more than 64 dimensions; a negative, non-integer or overflowing shape; a byte range that does not
// match the shape; offsets out of bounds or with begin > end; ranges that overlap; and bytes of
// the buffer covered by no tensor (the union of the ranges must be exactly the buffer, which is
// what the reference implementation enforces too). BOOL bytes other than 0 and 1 are rejected.
// Nothing is allocated before the header length has been checked against the file size, and no
// tensor is allocated before its byte range has been checked against the buffer, so a hostile
// header cannot make the reader allocate more than the file's size.
//
// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL. Others (U16..U64, F8_*, complex) are rejected:
// LibTorch 1.13 has no tensor type to load them into.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace seqlab {

// Tensors by name. Ordered, so iteration is in the same (name) order the writer stores them.
using TensorMap = std::map<std::string, torch::Tensor>;

struct SafetensorsFile {
  TensorMap tensors;                            // owning, contiguous CPU tensors
  std::map<std::string, std::string> metadata;  // "__metadata__", empty when absent
};

// Serializes `tensors` (any device, any layout: they are copied to contiguous CPU memory first)
// and `metadata`. Throws seqlab::Error for an undefined tensor, an unsupported dtype, the reserved
// name "__metadata__", or a name that is not valid UTF-8.
std::string save_safetensors_bytes(const TensorMap& tensors,
                                   const std::map<std::string, std::string>& metadata = {});

// save_safetensors_bytes, then write_file_atomic(path, ...).
void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Parses a safetensors image held in memory. `name_for_messages` is the file name that errors
// quote. The result owns its memory: `bytes` may be freed afterwards.
SafetensorsFile load_safetensors_bytes(std::string_view bytes,
                                       const std::string& name_for_messages);

// Reads the file at `path`. The header is read and fully validated first, then each tensor is read
// straight from the file into its own buffer (no second copy of the whole file in memory).
SafetensorsFile load_safetensors(const std::string& path);

// The names and shapes a loader expects, e.g. from a model built from its config.
using ShapeList = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// Checks that `got` holds exactly the tensors in `expected`, with those shapes. Throws one
// seqlab::Error naming `file` and listing every missing tensor, extra tensor and shape mismatch by
// name (the first few, then a count). Duplicate names in `expected` are a caller bug and throw too.
void check_tensor_set(const TensorMap& got, const ShapeList& expected, const std::string& file);

}  // namespace seqlab
