// Fuzzes the command-line parser: the input, split at '\0' bytes, is argv[1..] (at most 32
// arguments) of `seqlab`, and run_cli(parse_only = true) builds every command's flags and parses
// them, returning before any command runs (so no training, file writing or model loading). A
// clean "error: ..." with exit code 2 is the expected answer to a bad command line.
//
// With SEQLAB_FUZZ_QUIET=1 (scripts/fuzz.sh) stdout and stderr are silenced around each parse,
// because every input prints an error or --help; rerun a crashing input without it to see the
// sanitizer's report.
#include "fuzz_common.h"

#include "../tools/commands.h"

#include <fcntl.h>
#include <unistd.h>

namespace {

// Points fds 1 and 2 at /dev/null for its lifetime.
struct Silence {
  int saved_out = -1, saved_err = -1;
  explicit Silence(bool on) {
    if (!on) return;
    std::fflush(stdout);
    std::fflush(stderr);
    const int null = open("/dev/null", O_WRONLY);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(null, 1);
    dup2(null, 2);
    close(null);
  }
  ~Silence() {
    if (saved_out < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
  }
};

std::string args(std::initializer_list<const char*> a) {
  std::string s;
  for (const char* x : a) s += std::string(x) + '\0';
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  seqlab::fuzz::maybe_write_seeds({
      args({"train", "--task", "parity", "--arch", "linear", "--feature-map", "hedgehog", "--steps",
            "20", "--out", "/tmp/x", "--seed", "3", "--lr", "1e-3"}),
      args({"train", "--out", "d", "--resume", "--json", "--n-layer", "-1", "--threads", "2"}),
      args({"eval", "--model", "m", "--lengths", "8,16", "--n", "4", "--json"}),
      args({"generate", "--model", "m", "--prompt", "hi", "--max-new", "5", "--temperature", "0"}),
      args({"tokenizer", "train", "--corpus", "c.txt", "--vocab-size", "300", "--out", "t"}),
      args({"suite", "copy", "--quick", "--out", "s", "--jobs", "0"}),
      args({"bench", "--help"}),
      args({"--version"}),
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = std::getenv("SEQLAB_FUZZ_QUIET") != nullptr;
  std::vector<std::string> words{"seqlab"};
  std::string cur;
  for (size_t i = 0; i < size && words.size() <= 32; ++i) {
    if (data[i] == '\0') {
      words.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(static_cast<char>(data[i]));
    }
  }
  if (!cur.empty() && words.size() <= 32) words.push_back(cur);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const Silence s(quiet);
  const int rc = seqlab::cli::run_cli(static_cast<int>(words.size()), argv.data(), true);
  if (rc != 0 && rc != 2) seqlab::fuzz::finding(fmt::format("exit code {}", rc));
  return 0;
}
