// Reading and writing safetensors; see safetensors.h for the layout and the rules the reader
// enforces, and https://github.com/huggingface/safetensors (safetensors/src/tensor.rs) for the
// reference implementation whose checks these mirror.
//
// Every tensor's bytes are copied as they are, so this file assumes a little-endian host, as the
// format does.
#include "seqlab/core/safetensors.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/json_read.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <system_error>
#include <tuple>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this reader copies bytes as they are");

namespace seqlab {
namespace {

using json = nlohmann::json;

struct Dtype {
  const char* name;  // as spelled in the header
  torch::ScalarType type;
  uint64_t size;  // bytes per element
};

constexpr Dtype kDtypes[] = {
    {"F64", torch::kFloat64, 8},   {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},     {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const Dtype* dtype_by_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const Dtype* dtype_by_type(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

// The reference implementation refuses headers over 100 MB; so do we, which also bounds what a
// hostile header length can make us allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Far beyond any real tensor; bounds the shape vectors a header can make us build.
constexpr size_t kMaxRank = 64;

// Names come from the file: quote and escape them so a message stays on one line.
std::string quote_name(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string reason(int err) {
  return std::error_code(err, std::generic_category()).message();
}

struct TensorInfo {
  std::string name;
  const Dtype* dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;  // byte range in the data buffer, end exclusive
};

struct Header {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Checked before anything is allocated: `n` may be any 64-bit value.
void check_header_length(uint64_t n, uint64_t file_size, const std::string& file) {
  SEQLAB_CHECK(n <= file_size - 8,
               "{}: header length {} is past the end of the file ({} bytes, so at most {})", file,
               n, file_size, file_size - 8);
  SEQLAB_CHECK(n <= kMaxHeaderBytes, "{}: header length {} exceeds the {}-byte limit", file, n,
               kMaxHeaderBytes);
}

// A non-negative JSON integer that fits in 64 bits, or a one-line error naming `what`.
uint64_t get_u64(const json& v, const std::string& what, const std::string& file) {
  SEQLAB_CHECK(v.is_number_integer() && !v.is_number_float(), "{}: {} {} is not an integer", file,
               what, json_for_message(v));
  SEQLAB_CHECK(v.is_number_unsigned(), "{}: {} {} is negative", file, what, json_for_message(v));
  return v.get<uint64_t>();
}

TensorInfo parse_entry(const std::string& name, const json& entry, uint64_t buffer_size,
                       const std::string& file) {
  const std::string q = quote_name(name);
  SEQLAB_CHECK(entry.is_object(), "{}: entry {} is not a JSON object", file, q);
  for (const auto& item : entry.items())
    SEQLAB_CHECK(item.key() == "dtype" || item.key() == "shape" || item.key() == "data_offsets",
                 "{}: tensor {} has unknown field {}", file, q, quote_name(item.key()));
  auto field = [&](const char* key) -> const json& {
    auto it = entry.find(key);
    SEQLAB_CHECK(it != entry.end(), "{}: tensor {} is missing field \"{}\"", file, q, key);
    return *it;
  };

  TensorInfo info;
  info.name = name;
  const json& dtype = field("dtype");
  SEQLAB_CHECK(dtype.is_string(), "{}: tensor {}: \"dtype\" is not a string", file, q);
  info.dtype = dtype_by_name(dtype.get<std::string>());
  SEQLAB_CHECK(info.dtype, "{}: tensor {} has unsupported dtype {} (supported: {})", file, q,
               quote_name(dtype.get<std::string>()), "F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL");

  const json& shape = field("shape");
  SEQLAB_CHECK(shape.is_array(), "{}: tensor {}: \"shape\" is not an array", file, q);
  // Element count and byte size in 64-bit arithmetic with overflow checks: a declared shape of
  // [2^40, 2^40] must be rejected here, not reach an allocator.
  uint64_t nbytes = info.dtype->size;
  bool overflow = false;
  SEQLAB_CHECK(shape.size() <= kMaxRank, "{}: tensor {} has more than {} dimensions ({})", file, q,
               kMaxRank, shape.size());
  for (const json& d : shape) {
    const uint64_t dim = get_u64(d, fmt::format("tensor {}: shape entry", q), file);
    SEQLAB_CHECK(dim <= uint64_t(std::numeric_limits<int64_t>::max()),
                 "{}: tensor {}: shape entry {} is too large", file, q, dim);
    info.shape.push_back(static_cast<int64_t>(dim));
    overflow = overflow || __builtin_mul_overflow(nbytes, dim, &nbytes);
  }

  const json& offsets = field("data_offsets");
  SEQLAB_CHECK(offsets.is_array() && offsets.size() == 2,
               "{}: tensor {}: \"data_offsets\" is not an array of two integers", file, q);
  info.begin = get_u64(offsets[0], fmt::format("tensor {}: data offset", q), file);
  info.end = get_u64(offsets[1], fmt::format("tensor {}: data offset", q), file);
  SEQLAB_CHECK(info.begin <= info.end, "{}: tensor {}: data_offsets [{}, {}] begin after they end",
               file, q, info.begin, info.end);
  SEQLAB_CHECK(info.end <= buffer_size,
               "{}: tensor {}: data_offsets [{}, {}] are out of bounds of the {}-byte data buffer",
               file, q, info.begin, info.end, buffer_size);
  SEQLAB_CHECK(!overflow,
               "{}: tensor {}: shape {} of dtype {} overflows a 64-bit byte count, so it does not "
               "match data_offsets [{}, {}]",
               file, q, shape_str(info.shape), info.dtype->name, info.begin, info.end);
  SEQLAB_CHECK(nbytes == info.end - info.begin,
               "{}: tensor {}: shape {} of dtype {} is {} bytes, which does not match data_offsets "
               "[{}, {}] ({} bytes)",
               file, q, shape_str(info.shape), info.dtype->name, nbytes, info.begin, info.end,
               info.end - info.begin);
  return info;
}

// Parses and validates the JSON header against a data buffer of `buffer_size` bytes.
Header parse_header(std::string_view text, uint64_t buffer_size, const std::string& file) {
  // nlohmann::json keeps one of two equal keys without a word, so duplicates are caught during
  // parsing: one set of seen keys per open object. A well-formed header nests three levels
  // (header, entry, shape); deeper nesting is refused while parsing (core/json_read.h says why).
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  size_t duplicate_depth = 0;
  int depth = 0;
  auto on_event = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start)
      SEQLAB_CHECK(++depth <= kMaxJsonDepth, "{}: header JSON is nested deeper than {} levels",
                   file, kMaxJsonDepth);
    if (event == json::parse_event_t::object_end || event == json::parse_event_t::array_end)
      --depth;
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && duplicate.empty()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second) {
        duplicate = parsed.get<std::string>();
        duplicate_depth = open_objects.size();
      }
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    fail("{}: header is not valid JSON: {}", file, msg);
  }
  if (!duplicate.empty()) {
    if (duplicate_depth == 1 && duplicate != "__metadata__")
      fail("{}: duplicate tensor name {} in the header", file, quote_name(duplicate));
    fail("{}: duplicate key {} in the header", file, quote_name(duplicate));
  }
  SEQLAB_CHECK(j.is_object(), "{}: header is not a JSON object (it is a JSON {})", file,
               j.type_name());

  Header h;
  for (const auto& item : j.items()) {
    if (item.key() == "__metadata__") {
      SEQLAB_CHECK(item.value().is_object(), "{}: \"__metadata__\" is not a JSON object", file);
      for (const auto& kv : item.value().items()) {
        SEQLAB_CHECK(kv.value().is_string(),
                     "{}: \"__metadata__\" value for key {} is not a string", file,
                     quote_name(kv.key()));
        h.metadata[kv.key()] = kv.value().get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(item.key(), item.value(), buffer_size, file));
  }

  // The ranges, in order, must tile the buffer exactly: no overlap and no uncovered byte.
  std::vector<const TensorInfo*> by_offset;
  for (const auto& t : h.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t covered = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo* t : by_offset) {
    SEQLAB_CHECK(t->begin >= covered, "{}: tensors {} [{}, {}] and {} [{}, {}] overlap", file,
                 quote_name(prev->name), prev->begin, prev->end, quote_name(t->name), t->begin,
                 t->end);
    SEQLAB_CHECK(t->begin == covered,
                 "{}: bytes [{}, {}) of the data buffer are not covered by any tensor", file,
                 covered, t->begin);
    covered = t->end;
    prev = t;
  }
  SEQLAB_CHECK(covered == buffer_size,
               "{}: bytes [{}, {}) of the data buffer are not covered by any tensor", file, covered,
               buffer_size);
  return h;
}

// Allocates each tensor and fills it with read(begin, nbytes, dst). Only called after
// parse_header, so every allocation is backed by that many bytes of the file.
template <class ReadFn>
SafetensorsFile materialize(Header&& h, const std::string& file, ReadFn read) {
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const auto& info : h.tensors) {
    auto t = torch::empty(info.shape, torch::TensorOptions().dtype(info.dtype->type));
    const uint64_t nbytes = info.end - info.begin;
    if (nbytes > 0) read(info.begin, nbytes, t.data_ptr());
    if (info.dtype->type == torch::kBool) {
      // Any byte but 0 and 1 in a C++ bool is undefined behaviour later on.
      const auto* p = static_cast<const unsigned char*>(t.data_ptr());
      for (uint64_t i = 0; i < nbytes; ++i)
        SEQLAB_CHECK(p[i] <= 1, "{}: tensor {}: invalid BOOL byte {} at element {}", file,
                     quote_name(info.name), int(p[i]), i);
    }
    out.tensors.emplace(info.name, std::move(t));
  }
  return out;
}

// pread that insists on all `n` bytes: the file shrinking under us is an error, not a short read.
void pread_all(int fd, void* dst, uint64_t n, uint64_t offset, const std::string& file) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got =
        ::pread(fd, p, std::min<uint64_t>(n, uint64_t{1} << 30), static_cast<off_t>(offset));
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      fail("cannot read {}: {}", file, reason(err));
    }
    SEQLAB_CHECK(got > 0, "{}: file ended early (was it truncated while being read?)", file);
    p += got;
    n -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

}  // namespace

std::string save_safetensors_bytes(const TensorMap& tensors,
                                   const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps "__metadata__" first and each entry as dtype, shape, data_offsets, the
  // order the reference writer uses; std::map already gives the tensors in name order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    SEQLAB_CHECK(name != "__metadata__", "cannot save a tensor named \"__metadata__\": reserved");
    SEQLAB_CHECK(tensor.defined(), "cannot save tensor {}: it is undefined", quote_name(name));
    SEQLAB_CHECK(tensor.layout() == torch::kStrided, "cannot save tensor {}: it is not dense",
                 quote_name(name));
    const Dtype* d = dtype_by_type(tensor.scalar_type());
    SEQLAB_CHECK(d, "cannot save tensor {}: dtype {} is not supported", quote_name(name),
                 c10::toString(tensor.scalar_type()));
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t nbytes = uint64_t(t.numel()) * d->size;
    header[name] = {{"dtype", d->name},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", nlohmann::ordered_json::array({offset, offset + nbytes})}};
    offset += nbytes;
    data.push_back(std::move(t));
  }

  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception&) {
    fail("cannot save safetensors: a tensor name or metadata string is not valid UTF-8");
  }
  // Spaces are JSON whitespace, so padding keeps the header valid while aligning the buffer.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out(8 + text.size() + offset, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  std::memcpy(&out[8], text.data(), text.size());
  char* buffer = &out[8 + text.size()];
  for (const auto& t : data) {
    const size_t nbytes = size_t(t.numel()) * t.element_size();
    if (nbytes > 0) std::memcpy(buffer, t.data_ptr(), nbytes);
    buffer += nbytes;
  }
  return out;
}

void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, save_safetensors_bytes(tensors, metadata));
}

SafetensorsFile load_safetensors_bytes(std::string_view bytes,
                                       const std::string& name_for_messages) {
  const std::string& file = name_for_messages;
  const uint64_t size = bytes.size();
  SEQLAB_CHECK(size >= 8, "{}: file is {} bytes, shorter than the 8-byte header length", file,
               size);
  const uint64_t n = read_u64_le(reinterpret_cast<const unsigned char*>(bytes.data()));
  check_header_length(n, size, file);
  Header h = parse_header(bytes.substr(8, n), size - 8 - n, file);
  const char* buffer = bytes.data() + 8 + n;
  return materialize(std::move(h), file, [&](uint64_t begin, uint64_t nbytes, void* dst) {
    std::memcpy(dst, buffer + begin, nbytes);
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  ReadableFile file(path);
  const int fd = file.fd;
  SEQLAB_CHECK(file.regular, "cannot read {}: not a regular file", path);
  const uint64_t size = file.size;
  SEQLAB_CHECK(size >= 8, "{}: file is {} bytes, shorter than the 8-byte header length", path,
               size);
  unsigned char len[8];
  pread_all(fd, len, 8, 0, path);
  const uint64_t n = read_u64_le(len);
  check_header_length(n, size, path);
  std::string text(n, '\0');
  pread_all(fd, text.data(), n, 8, path);
  Header h = parse_header(text, size - 8 - n, path);
  return materialize(std::move(h), path, [&](uint64_t begin, uint64_t nbytes, void* dst) {
    pread_all(fd, dst, nbytes, 8 + n + begin, path);
  });
}

void check_tensor_set(const TensorMap& got, const ShapeList& expected, const std::string& file) {
  std::map<std::string, const std::vector<int64_t>*> want;
  for (const auto& [name, shape] : expected)
    SEQLAB_CHECK(want.emplace(name, &shape).second,
                 "check_tensor_set: tensor {} is expected twice (a bug in the caller)",
                 quote_name(name));

  std::vector<std::string> problems;
  for (const auto& [name, shape] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      problems.push_back(
          fmt::format("missing tensor {} (shape {})", quote_name(name), shape_str(*shape)));
    } else if (!it->second.defined() || it->second.sizes().vec() != *shape) {
      const std::string have = it->second.defined() ? shape_str(it->second.sizes().vec()) : "none";
      problems.push_back(fmt::format("tensor {} has shape {}, expected {}", quote_name(name), have,
                                     shape_str(*shape)));
    }
  }
  for (const auto& [name, t] : got)
    if (!want.count(name)) problems.push_back(fmt::format("extra tensor {}", quote_name(name)));
  if (problems.empty()) return;

  constexpr size_t kShown = 8;
  std::string list = fmt::format(
      "{}",
      fmt::join(problems.begin(), problems.begin() + std::min(kShown, problems.size()), "; "));
  if (problems.size() > kShown) list += fmt::format("; and {} more", problems.size() - kShown);
  fail("{}: tensors do not match the model config: {}", file, list);
}

}  // namespace seqlab
