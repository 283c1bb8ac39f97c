// seqlab embed: sentence embeddings from an encoder directory (methods/encoder.h), one per input
// line, as JSONL (a JSON array per line) or a float32 .npy [N, D]; and seqlab embed-eval: the
// WordNet measures of methods/embed_eval.h (reverse dictionary, Wu–Palmer proxy, isotropy).
#include "commands.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/text/dictionary.h"
#include "seqlab/methods/embed_eval.h"
#include "seqlab/methods/encoder.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>

namespace seqlab::cli {

namespace {

namespace fs = std::filesystem;

struct EmbedArgs {
  std::string model, input, output, format = "auto", pooling;
  int64_t batch = 64;
  Common common;
};

struct EmbedEvalArgs {
  std::string model, pooling;
  int64_t max_queries = 1000, pairs = 2000, batch = 64;
  bool json = false;
  Common common;
};

// Lines of a text: split at '\n', a trailing '\r' dropped; no line after a final '\n'.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    start = end + 1;
  }
  return out;
}

std::string to_jsonl(const torch::Tensor& E) {
  auto X = E.contiguous();
  const int64_t N = X.size(0), D = X.size(1);
  const float* p = X.data_ptr<float>();
  std::string out;
  for (int64_t i = 0; i < N; ++i) {
    out += '[';
    for (int64_t j = 0; j < D; ++j)
      fmt::format_to(std::back_inserter(out), "{}{:.9g}", j ? "," : "", p[i * D + j]);
    out += "]\n";
  }
  return out;
}

// NumPy's .npy format, version 1.0: magic, header length (u16 LE), a Python dict literal padded
// with spaces and a newline so that the data starts at a multiple of 64 bytes, then the data.
std::string to_npy(const torch::Tensor& E) {
  auto X = E.contiguous();
  std::string header = fmt::format(
      "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", X.size(0), X.size(1));
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto n = static_cast<uint16_t>(header.size());
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>(n >> 8);
  out += header;
  const auto bytes = static_cast<size_t>(X.numel()) * sizeof(float);
  const size_t at = out.size();
  out.resize(at + bytes);
  std::memcpy(out.data() + at, X.data_ptr<float>(), bytes);  // x86-64 and aarch64: little endian
  return out;
}

int cmd_embed(const EmbedArgs& a) {
  a.common.apply();
  std::string format = a.format;
  SEQLAB_CHECK(format == "auto" || format == "jsonl" || format == "npy",
               "unknown --format '{}' (auto, jsonl, npy)", format);
  if (format == "auto")
    format =
        a.output.size() > 4 && a.output.substr(a.output.size() - 4) == ".npy" ? "npy" : "jsonl";
  SEQLAB_CHECK(format != "npy" || !a.output.empty(),
               "--format npy writes binary: give --output FILE.npy");
  SEQLAB_CHECK(a.batch >= 1, "--batch must be >= 1, got {}", a.batch);
  if (!a.pooling.empty()) check_pooling(a.pooling);
  auto enc = load_encoder(a.model, a.pooling);
  std::string text;
  if (a.input.empty() || a.input == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    SEQLAB_CHECK(fs::is_regular_file(a.input), "--input {}: no such file", a.input);
    text = read_file(a.input);
  }
  const auto lines = split_lines(text);
  auto E = enc.embed(lines, a.batch, a.common.quiet ? "" : "embed");  // [N,D]
  const std::string out = format == "npy" ? to_npy(E) : to_jsonl(E);
  if (a.output.empty() || a.output == "-") {
    std::cout << out;
    std::cout.flush();
  } else {
    write_file_atomic(a.output, out);
  }
  log_info("embedded {} lines into {} dimensions ({})", lines.size(), E.size(1), format);
  return 0;
}

int cmd_embed_eval(const EmbedEvalArgs& a) {
  a.common.apply();
  if (!a.pooling.empty()) check_pooling(a.pooling);
  SEQLAB_CHECK(a.max_queries >= 1 && a.pairs >= 3 && a.batch >= 1,
               "--max-queries >= 1, --pairs >= 3 and --batch >= 1 are required");
  auto enc = load_encoder(a.model, a.pooling);
  Dictionary dict(load_wordnet());
  const WuPalmer wp(dict.wordnet());
  const auto rd = reverse_dictionary_set(dict, a.max_queries);
  const auto sim = similarity_set(dict, wp, a.pairs);
  const auto r = evaluate_embeddings(enc, rd, sim, a.batch);
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"pooling", enc.spec().pooling},
                        {"mrr", r.retrieval.mrr},
                        {"recall10", r.retrieval.recall},
                        {"queries", r.retrieval.queries},
                        {"candidates", r.candidates},
                        {"spearman_wup", r.spearman},
                        {"pairs", r.pairs},
                        {"mean_cos", r.iso.mean_cos},
                        {"partition", r.iso.partition},
                        {"top_pc", r.iso.top_pc}};
    std::cout << j.dump() << "\n";
  } else {
    fmt::print("reverse dictionary  MRR {:.4f}  recall@10 {:.4f}  ({} queries, {} candidates)\n",
               r.retrieval.mrr, r.retrieval.recall, r.retrieval.queries, r.candidates);
    fmt::print("Wu-Palmer proxy     Spearman {:.4f}  ({} pairs; a proxy for STS)\n", r.spearman,
               r.pairs);
    fmt::print("isotropy            mean cos {:.4f}  partition ratio {:.4g}  top-PC var {:.4f}\n",
               r.iso.mean_cos, r.iso.partition, r.iso.top_pc);
  }
  return 0;
}

}  // namespace

void add_embed_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<EmbedArgs>();
  auto* embed = app.add_subcommand(
      "embed", "sentence embeddings: one line in, one embedding out (JSONL or .npy)");
  embed->add_option("--model", a->model, "encoder directory (seqlab suite defsent writes them)")
      ->required();
  embed->add_option("--input", a->input, "text file, one sentence a line (default: stdin)");
  embed->add_option("--output", a->output, "output file (default: stdout); .npy means npy");
  embed->add_option("--format", a->format, "auto (by --output's extension) | jsonl | npy")
      ->capture_default_str();
  embed->add_option("--pooling", a->pooling, "override the encoder's pooling: cls | mean | max");
  embed->add_option("--batch", a->batch, "lines per forward pass (same-length groups)")
      ->capture_default_str();
  a->common.add(embed);
  actions.push_back({embed, [a] { return cmd_embed(*a); }});

  auto e = std::make_shared<EmbedEvalArgs>();
  auto* ev = app.add_subcommand(
      "embed-eval",
      "measure an encoder on WordNet: reverse dictionary on held-out entries (MRR, recall@10), "
      "Wu-Palmer similarity proxy (Spearman), isotropy");
  ev->add_option("--model", e->model, "encoder directory")->required();
  ev->add_option("--pooling", e->pooling, "override the encoder's pooling: cls | mean | max");
  ev->add_option("--max-queries", e->max_queries, "reverse-dictionary queries")
      ->capture_default_str();
  ev->add_option("--pairs", e->pairs, "similarity pairs")->capture_default_str();
  ev->add_option("--batch", e->batch, "texts per forward pass")->capture_default_str();
  ev->add_flag("--json", e->json, "one JSON object on stdout");
  e->common.add(ev);
  actions.push_back({ev, [e] { return cmd_embed_eval(*e); }});
}

}  // namespace seqlab::cli
