// Tests for core/safetensors, the format of model.safetensors (docs/DESIGN.md, "Data and file
// formats"; https://github.com/huggingface/safetensors).
//
// Compatibility with the spec is checked both ways without trusting our own code twice: a fixture
// built byte by byte here is read by the reader, and the writer's output is taken apart byte by
// byte here. Every strictness rule has its own test, each asserting that the one-line message
// names the file and the problem, through both load_safetensors and load_safetensors_bytes.
#include "seqlab/core/safetensors.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

using namespace seqlab;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "seqlab-st-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  // Asserts that `bytes`, as a file named `stem`.safetensors and as an in-memory image, is rejected
  // with a one-line message naming the file and containing `phrase`.
  void expect_rejected(const std::string& bytes, const std::string& stem,
                       const std::string& phrase) {
    const std::string file = path(stem + ".safetensors");
    write_file_atomic(file, bytes);
    for (int in_memory = 0; in_memory < 2; ++in_memory) {
      const std::string name = in_memory ? "mem-" + stem : file;
      std::string msg = "<no error>";
      try {
        if (in_memory)
          load_safetensors_bytes(bytes, name);
        else
          load_safetensors(file);
      } catch (const Error& e) {
        msg = e.what();
      }
      EXPECT_NE(msg.find(name), std::string::npos) << msg;
      EXPECT_NE(msg.find(phrase), std::string::npos) << "expected '" << phrase << "' in: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
  std::string dir_;
};

// The 8-byte little-endian header length, written out byte by byte.
std::string le64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

std::string make_file(const std::string& header, const std::string& buffer) {
  return le64(header.size()) + header + buffer;
}

// A header with one F32 tensor "a" of `n` elements at [begin, begin + 4n).
std::string f32_header(int n, int begin = 0) {
  return json{{"a", {{"dtype", "F32"}, {"shape", {n}}, {"data_offsets", {begin, begin + 4 * n}}}}}
      .dump();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_F(Safetensors, RoundTripEveryDtypeAndLayout) {
  torch::manual_seed(3);
  TensorMap m;
  m["f64"] = torch::randn({3, 4}, torch::kFloat64);
  m["f32"] = torch::randn({2, 3, 2});
  m["f32_transposed"] = torch::randn({4, 6}).t();                            // strides (1, 6)
  m["f32_strided"] = torch::arange(20, torch::kFloat32).slice(0, 1, 20, 3);  // offset + step
  m["f16"] = torch::randn({5}).to(torch::kFloat16);
  m["bf16"] = torch::randn({2, 3}).to(torch::kBFloat16).t();
  m["i64"] = torch::randint(-1000000, 1000000, {7}, torch::kInt64);
  m["i32"] = torch::randint(-100000, 100000, {3, 3}, torch::kInt32);
  m["i16"] = torch::randint(-30000, 30000, {4}, torch::kInt16);
  m["i8"] = torch::randint(-128, 128, {6}, torch::kInt8);
  m["u8"] = torch::randint(0, 256, {6}, torch::kUInt8);
  m["bool"] = torch::randn({9}) > 0;
  m["scalar"] = torch::full({}, 3.5, torch::kFloat32);
  m["scalar_i64"] = torch::full({}, -7, torch::kInt64);
  m["empty"] = torch::empty({0, 3});
  m["empty_i64"] = torch::empty({2, 0}, torch::kInt64);
  m["with_grad"] = torch::randn({2}, torch::requires_grad());
  ASSERT_FALSE(m["f32_transposed"].is_contiguous());
  ASSERT_FALSE(m["f32_strided"].is_contiguous());

  const std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "ünï \"q\"\nline"}};
  save_safetensors(path("m.safetensors"), m, meta);
  const auto got = load_safetensors(path("m.safetensors"));
  EXPECT_EQ(got.metadata, meta);
  ASSERT_EQ(got.tensors.size(), m.size());
  for (const auto& [name, want] : m) {
    ASSERT_TRUE(got.tensors.count(name)) << name;
    const auto& t = got.tensors.at(name);
    EXPECT_EQ(t.scalar_type(), want.scalar_type()) << name;
    EXPECT_EQ(t.sizes(), want.sizes()) << name;
    EXPECT_TRUE(t.is_contiguous()) << name;
    EXPECT_FALSE(t.requires_grad()) << name;
    EXPECT_TRUE(torch::equal(t, want.detach())) << name;
  }
  // The file and the in-memory writer agree byte for byte, and so do the two readers.
  const std::string bytes = read_file(path("m.safetensors"));
  EXPECT_EQ(bytes, save_safetensors_bytes(m, meta));
  EXPECT_TRUE(torch::equal(load_safetensors_bytes(bytes, "x").tensors.at("f64"), m["f64"]));
}

TEST_F(Safetensors, EmptyMapRoundTrips) {
  const std::string bytes = save_safetensors_bytes({});
  EXPECT_EQ(bytes.size() % 8, 0u);
  const auto got = load_safetensors_bytes(bytes, "empty");
  EXPECT_TRUE(got.tensors.empty());
  EXPECT_TRUE(got.metadata.empty());
}

TEST_F(Safetensors, HeaderIsPaddedTo8Bytes) {
  // Names of every length mod 8 shift the unpadded header size through all residues.
  for (int len = 1; len <= 9; ++len) {
    TensorMap m{{std::string(len, 'w'), torch::ones({3})}, {"b", torch::ones({1}, torch::kInt8)}};
    const std::string bytes = save_safetensors_bytes(m);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    EXPECT_EQ(n % 8, 0u) << len;
    EXPECT_EQ(bytes.size(), 8 + n + 13) << len;
    EXPECT_TRUE(json::accept(bytes.substr(8, n))) << len;  // padding is JSON whitespace
  }
}

TEST_F(Safetensors, ReadsHandBuiltFixture) {
  // Written per the spec, independently of our writer: unsorted keys, no padding, metadata last.
  const std::string header = R"({"b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("c":{"dtype":"BF16","shape":[],"data_offsets":[16,18]},)"
                             R"("d":{"dtype":"F16","shape":[1,1],"data_offsets":[18,20]},)"
                             R"("e":{"dtype":"BOOL","shape":[0],"data_offsets":[20,20]},)"
                             R"("__metadata__":{"format":"pt"}})";
  std::string bytes;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  bytes += header;
  bytes += std::string("\x00\x00\x80\x3f", 4);  // F32 1.0
  bytes += std::string("\x00\x00\x20\xc0", 4);  // F32 -2.5
  bytes += std::string("\x07\x00\x00\x00", 4);  // I32 7
  bytes += std::string("\xff\xff\xff\xff", 4);  // I32 -1
  bytes += std::string("\x80\x3f", 2);          // BF16 1.0 (0x3F80)
  bytes += std::string("\x00\xc0", 2);          // F16 -2.0 (0xC000)
  write_file_atomic(path("fixture.safetensors"), bytes);

  const auto got = load_safetensors(path("fixture.safetensors"));
  EXPECT_EQ(got.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(got.tensors.size(), 5u);
  const auto& a = got.tensors.at("a");
  EXPECT_EQ(a.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(a, torch::tensor({1.0f, -2.5f})));
  EXPECT_TRUE(torch::equal(got.tensors.at("b"), torch::tensor({7, -1}, torch::kInt32)));
  const auto& c = got.tensors.at("c");
  EXPECT_EQ(c.dim(), 0);
  EXPECT_EQ(c.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(c.item<float>(), 1.0f);
  const auto& d = got.tensors.at("d");
  EXPECT_EQ(d.sizes(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(d.item<float>(), -2.0f);
  EXPECT_EQ(got.tensors.at("e").numel(), 0);
  EXPECT_EQ(got.tensors.at("e").scalar_type(), torch::kBool);
}

TEST_F(Safetensors, WriterOutputMatchesSpecByteByByte) {
  TensorMap m{{"w", torch::tensor({1.0f, -2.5f, 0.5f, 3.0f}).reshape({2, 2})},
              {"b", torch::tensor({1, 2, 258}, torch::kInt64)}};
  const std::string bytes = save_safetensors_bytes(m, {{"k", "v"}});

  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ(n % 8, 0u);
  const json h = json::parse(bytes.substr(8, n));
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(h["__metadata__"], (json{{"k", "v"}}));
  // Sorted by name: "b" first at offset 0, then "w".
  EXPECT_EQ(h["b"]["dtype"], "I64");
  EXPECT_EQ(h["b"]["shape"], json({3}));
  EXPECT_EQ(h["b"]["data_offsets"], json({0, 24}));
  EXPECT_EQ(h["w"]["dtype"], "F32");
  EXPECT_EQ(h["w"]["shape"], json({2, 2}));
  EXPECT_EQ(h["w"]["data_offsets"], json({24, 40}));
  EXPECT_EQ(h["w"].size(), 3u);

  const std::string buffer = bytes.substr(8 + n);
  ASSERT_EQ(buffer.size(), 40u);
  EXPECT_EQ(buffer.substr(0, 24), std::string("\x01\0\0\0\0\0\0\0"
                                              "\x02\0\0\0\0\0\0\0"
                                              "\x02\x01\0\0\0\0\0\0",
                                              24));
  EXPECT_EQ(buffer.substr(24), std::string("\x00\x00\x80\x3f"   // 1.0
                                           "\x00\x00\x20\xc0"   // -2.5
                                           "\x00\x00\x00\x3f"   // 0.5
                                           "\x00\x00\x40\x40",  // 3.0
                                           16));
}

TEST_F(Safetensors, RejectsFileShorterThan8Bytes) {
  expect_rejected("", "empty", "0 bytes, shorter than the 8-byte header length");
  expect_rejected(std::string("\x02\0\0", 3), "short",
                  "3 bytes, shorter than the 8-byte header length");
}

TEST_F(Safetensors, RejectsHeaderLengthPastEnd) {
  expect_rejected(le64(100) + "{}", "past_end", "header length 100 is past the end of the file");
}

TEST_F(Safetensors, RejectsAbsurdHeaderLengthQuickly) {
  // A reader that allocated first would throw std::bad_alloc (not seqlab::Error) or take long.
  const auto start = std::chrono::steady_clock::now();
  expect_rejected(le64(uint64_t{1} << 63) + "{}", "len63", "past the end of the file");
  expect_rejected(le64(~uint64_t{0}) + "{}", "len64", "past the end of the file");
  expect_rejected(le64(~uint64_t{0} - 7) + "{}", "len64wrap", "past the end of the file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(Safetensors, RejectsHeaderThatIsNotJson) {
  expect_rejected(make_file(R"({"a": {"dtype": )", ""), "not_json", "header is not valid JSON");
  expect_rejected(make_file("{\"a\xff\": 1}", ""), "bad_utf8", "header is not valid JSON");
}

TEST_F(Safetensors, RejectsHeaderThatIsNotAnObject) {
  expect_rejected(make_file("[1, 2]", ""), "array", "header is not a JSON object");
}

TEST_F(Safetensors, RejectsEntryThatIsNotAnObject) {
  expect_rejected(make_file(R"({"a": 3})", ""), "entry", "entry \"a\" is not a JSON object");
}

TEST_F(Safetensors, RejectsMissingField) {
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1]}})", "1234"), "missing",
                  "tensor \"a\" is missing field \"data_offsets\"");
}

TEST_F(Safetensors, RejectsFieldsOfTheWrongType) {
  expect_rejected(make_file(R"({"a":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", "1234"),
                  "dtype_type", "\"dtype\" is not a string");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":1,"data_offsets":[0,4]}})", "1234"),
                  "shape_type", "\"shape\" is not an array");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4]}})", "1234"),
                  "offsets_arity", "\"data_offsets\" is not an array of two integers");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})", "1234"),
                  "offsets_type", "data offset \"4\" is not an integer");
}

TEST_F(Safetensors, RejectsUnknownField) {
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", "1234"),
      "unknown_field", "tensor \"a\" has unknown field \"x\"");
}

TEST_F(Safetensors, RejectsUnknownDtype) {
  for (const char* dt : {"F8_E4M3", "U16", "C64", "f32"})
    expect_rejected(
        make_file(fmt::format(R"({{"a":{{"dtype":"{}","shape":[1],"data_offsets":[0,1]}}}})", dt),
                  "1"),
        std::string("dtype_") + dt, fmt::format("unsupported dtype \"{}\"", dt));
}

TEST_F(Safetensors, RejectsNegativeShape) {
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", ""),
                  "negative_shape", "tensor \"a\": shape entry -1 is negative");
}

TEST_F(Safetensors, RejectsNonIntegerShape) {
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "1234"),
                  "float_shape", "shape entry 1.5 is not an integer");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", "1234"),
                  "string_shape", "shape entry \"1\" is not an integer");
}

TEST_F(Safetensors, RejectsNegativeOffset) {
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[-1,0]}})", ""),
                  "negative_offset", "data offset -1 is negative");
}

TEST_F(Safetensors, RejectsShapeThatDoesNotMatchByteRange) {
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"),
      "mismatch", "shape [3] of dtype F32 is 12 bytes, which does not match data_offsets [0, 8]");
}

TEST_F(Safetensors, RejectsHugeShapesQuickly) {
  // [2^40, 2^40] x 4 bytes overflows 64 bits; [2^30, 2^30] x 4 = 2^62 does not, but is no match
  // for 4 bytes. Either way nothing may be allocated.
  const auto start = std::chrono::steady_clock::now();
  expect_rejected(
      make_file(
          R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})",
          "1234"),
      "shape_overflow", "overflows a 64-bit byte count");
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[1073741824,1073741824],"data_offsets":[0,4]}})",
                "1234"),
      "shape_huge", "is 4611686018427387904 bytes, which does not match");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[9223372036854775808],)"
                            R"("data_offsets":[0,4]}})",
                            "1234"),
                  "shape_too_large", "shape entry 9223372036854775808 is too large");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(Safetensors, RejectsDeeplyNestedHeadersWithoutRecursing) {
  // A million '[' as a shape entry: quoting it in the "not an integer" message used to serialize
  // it recursively and overflow the stack (a crash, not an error). Nesting is refused while
  // parsing, whatever the position: in a shape, in metadata, at the top.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[)" + deep + R"(],"data_offsets":[0,4]}})", "1234"),
      "deep_shape", "header JSON is nested deeper than 64 levels");
  expect_rejected(make_file(R"({"__metadata__":{"k":)" + deep + "}}", ""), "deep_metadata",
                  "nested deeper than 64 levels");
  expect_rejected(make_file(deep, ""), "deep_top", "nested deeper than 64 levels");
  // 64 levels are fine as far as nesting goes (the entry is then refused for its shape).
  const std::string ok = std::string(61, '[') + "1" + std::string(61, ']');
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[)" + ok + R"(],"data_offsets":[0,4]}})", "1234"),
      "nested_61", "shape entry an array is not an integer");
}

TEST_F(Safetensors, RejectsTensorsOfAbsurdRank) {
  // 100000 dimensions of size 1 is 4 bytes of data, but a shape vector of 800 KB (and LibTorch's
  // sizes and strides): refused by rank before anything is allocated.
  std::string shape = "1";
  for (int i = 1; i < 100000; ++i) shape += ",1";
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[)" + shape + R"(],"data_offsets":[0,4]}})", "1234"),
      "rank", "tensor \"a\" has more than 64 dimensions");
}

TEST_F(Safetensors, RejectsOffsetsOutOfBounds) {
  expect_rejected(make_file(f32_header(250), "12345678"), "out_of_bounds",
                  "data_offsets [0, 1000] are out of bounds of the 8-byte data buffer");
}

TEST_F(Safetensors, RejectsBeginAfterEnd) {
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[8,4]}})", "12345678"),
                  "begin_after_end", "data_offsets [8, 4] begin after they end");
}

TEST_F(Safetensors, RejectsOverlappingTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_rejected(make_file(header, std::string(12, '\0')), "overlap",
                  "tensors \"a\" [0, 8] and \"b\" [4, 12] overlap");
}

TEST_F(Safetensors, RejectsHoleBetweenTensors) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  expect_rejected(make_file(header, std::string(12, '\0')), "hole",
                  "bytes [4, 8) of the data buffer are not covered by any tensor");
}

TEST_F(Safetensors, RejectsTrailingBytes) {
  expect_rejected(make_file(f32_header(1), std::string(8, '\0')), "trailing",
                  "bytes [4, 8) of the data buffer are not covered by any tensor");
}

TEST_F(Safetensors, RejectsDuplicateNames) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  // nlohmann::json alone would accept this and keep one "a": the check must be ours.
  EXPECT_EQ(json::parse(header).size(), 1u);
  expect_rejected(make_file(header, std::string(8, '\0')), "duplicate",
                  "duplicate tensor name \"a\"");
}

TEST_F(Safetensors, RejectsDuplicateKeysInsideEntries) {
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}})", "1234"),
      "duplicate_key", "duplicate key \"dtype\"");
  expect_rejected(make_file(R"({"__metadata__":{},"__metadata__":{}})", ""), "duplicate_meta",
                  "duplicate key \"__metadata__\"");
}

TEST_F(Safetensors, RejectsMalformedMetadata) {
  expect_rejected(make_file(R"({"__metadata__":{"k":1}})", ""), "meta_value",
                  "\"__metadata__\" value for key \"k\" is not a string");
  expect_rejected(make_file(R"({"__metadata__":["k"]})", ""), "meta_type",
                  "\"__metadata__\" is not a JSON object");
}

TEST_F(Safetensors, RejectsBoolBytesOtherThanZeroAndOne) {
  expect_rejected(make_file(R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                            std::string("\x01\x00\x02", 3)),
                  "bool", "tensor \"a\": invalid BOOL byte 2 at element 2");
}

TEST_F(Safetensors, MissingFileOrDirectoryIsAnError) {
  const std::string missing = path("nope.safetensors");
  std::string msg = error_of([&] { load_safetensors(missing); });
  EXPECT_NE(msg.find(missing + ": No such file or directory"), std::string::npos) << msg;
  msg = error_of([&] { load_safetensors(dir_); });
  EXPECT_NE(msg.find(dir_ + ": not a regular file"), std::string::npos) << msg;
}

TEST_F(Safetensors, WriterRejectsWhatItCannotStore) {
  EXPECT_NE(error_of([] {
              save_safetensors_bytes({{"c", torch::randn({2}, torch::kComplexFloat)}});
            }).find("cannot save tensor \"c\": dtype ComplexFloat is not supported"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              save_safetensors_bytes({{"__metadata__", torch::ones({1})}});
            }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              save_safetensors_bytes({{"u", torch::Tensor()}});
            }).find("undefined"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              save_safetensors_bytes({{"bad\xff", torch::ones({1})}});
            }).find("not valid UTF-8"),
            std::string::npos);
  // A failed save goes through write_file_atomic: no file, no temp file.
  EXPECT_NE(error_of([&] {
              save_safetensors(path("no/dir/m.safetensors"), {});
            }).find("No such file or directory"),
            std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(Safetensors, CheckTensorSetAcceptsAnExactMatch) {
  TensorMap got{{"a", torch::zeros({2, 3})}, {"b", torch::zeros({})}};
  EXPECT_NO_THROW(check_tensor_set(got, {{"a", {2, 3}}, {"b", {}}}, "m.safetensors"));
}

TEST_F(Safetensors, CheckTensorSetNamesMissingExtraAndMismatched) {
  TensorMap got{{"a", torch::zeros({2, 3})}, {"extra", torch::zeros({1})}};
  const std::string msg = error_of([&] {
    check_tensor_set(got, {{"a", {3, 2}}, {"gone", {4}}}, "dir/model.safetensors");
  });
  EXPECT_NE(msg.find("dir/model.safetensors: tensors do not match the model config"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("tensor \"a\" has shape [2, 3], expected [3, 2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing tensor \"gone\" (shape [4])"), std::string::npos) << msg;
  EXPECT_NE(msg.find("extra tensor \"extra\""), std::string::npos) << msg;

  // Only one problem: only that one is reported.
  const std::string one = error_of([&] { check_tensor_set(got, {{"a", {2, 3}}}, "f"); });
  EXPECT_EQ(one, "f: tensors do not match the model config: extra tensor \"extra\"");
}

TEST_F(Safetensors, CheckTensorSetCapsTheList) {
  TensorMap got;
  for (int i = 0; i < 20; ++i) got[fmt::format("t{:02}", i)] = torch::zeros({1});
  const std::string msg = error_of([&] { check_tensor_set(got, {}, "f"); });
  EXPECT_NE(msg.find("extra tensor \"t07\"; and 12 more"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("t08"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] {
              check_tensor_set(got, {{"x", {1}}, {"x", {1}}}, "f");
            }).find("expected twice"),
            std::string::npos);
}
