// Fuzzes the safetensors reader (core/safetensors.h) on arbitrary bytes, both entry points:
// load_safetensors_bytes (memory) and load_safetensors (a file, read with pread), which must agree.
// Oracle: whatever is accepted saves and loads back to the same names, dtypes, shapes, bytes and
// metadata.
#include "fuzz_common.h"

#include "seqlab/core/error.h"
#include "seqlab/core/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

using namespace seqlab;
using seqlab::fuzz::finding;

namespace {

bool same(const SafetensorsFile& a, const SafetensorsFile& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (auto ia = a.tensors.begin(), ib = b.tensors.begin(); ia != a.tensors.end(); ++ia, ++ib) {
    const auto &x = ia->second, &y = ib->second;
    if (ia->first != ib->first || x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes())
      return false;
    const size_t n = x.numel() * x.element_size();
    if (n && std::memcmp(x.data_ptr(), y.data_ptr(), n) != 0) return false;  // NaN-safe
  }
  return true;
}

// The input as a file: an anonymous memory file, opened by its /proc path.
std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("fuzz_safetensors", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0) finding("memfd_create/ftruncate failed");
  for (size_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) finding("pwrite to the memfd failed");
    done += static_cast<size_t>(n);
  }
  return fmt::format("/proc/self/fd/{}", fd);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  TensorMap t;
  t["a"] = torch::arange(6, torch::kFloat32).reshape({2, 3});
  t["b"] = torch::tensor({1, 0, 1}, torch::kBool);
  t["c"] = torch::tensor({-5, 7}, torch::kInt64);
  t["d"] = torch::ones({2}, torch::kBFloat16);
  t["e"] = torch::empty({0, 4}, torch::kFloat16);
  TensorMap one{{"state", torch::zeros({3}, torch::kFloat64)},
                {"u8", torch::ones({1}, torch::kUInt8)}};
  fuzz::maybe_write_seeds({save_safetensors_bytes(t, {{"format", "pt"}}),
                           save_safetensors_bytes(one), save_safetensors_bytes({}),
                           save_safetensors_bytes({{"x", torch::ones({2, 1, 2}, torch::kInt16)}},
                                                  {{"k", "v"}, {"k2", ""}})});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsFile mem, file;
  std::string mem_error, file_error;
  try {
    mem = load_safetensors_bytes(bytes, "fuzz.safetensors");
  } catch (const Error& e) {
    mem_error = e.what();
  }
  try {
    file = load_safetensors(as_file(data, size));
  } catch (const Error& e) {
    file_error = e.what();
  }
  if (mem_error.empty() != file_error.empty())
    finding(fmt::format("the two readers disagree: memory '{}', file '{}'", mem_error, file_error));
  if (!mem_error.empty()) return 0;
  if (!same(mem, file)) finding("the two readers read different contents");

  std::string saved;
  try {
    saved = save_safetensors_bytes(mem.tensors, mem.metadata);
  } catch (const Error& e) {
    finding(fmt::format("an accepted file does not save: {}", e.what()));
  }
  SafetensorsFile again;
  try {
    again = load_safetensors_bytes(saved, "saved.safetensors");
  } catch (const Error& e) {
    finding(fmt::format("a saved file does not load: {}", e.what()));
  }
  if (!same(mem, again)) finding("save + load changed the contents");
  return 0;
}
