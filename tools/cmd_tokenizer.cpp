// seqlab tokenizer train | encode | decode: learn a byte-level BPE from a corpus, and turn text
// into ids and back with any tokenizer spec (byte, gpt2, bpe:<dir>, hf:<tokenizer.json>, <dir>).
//
// encode reads all of stdin as bytes and prints the ids on one line, space-separated; decode
// reads whitespace-separated ids from stdin and writes the bytes they spell, nothing added.
// A Hugging Face tokenizer.json encodes as transformers' tokenizer.encode(text) does (special
// tokens in the text recognized, the post-processor's template applied); --no-template and
// --split-special-tokens turn either off (the other tokenizers never do either).
// Logs go to stderr; stdout carries only the result.
#include "commands.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/text/bpe_trainer.h"
#include "seqlab/text/corpus.h"
#include "seqlab/text/hf_tokenizer.h"
#include "seqlab/text/tokenizer.h"

#include <charconv>
#include <chrono>
#include <cstdio>

namespace seqlab::cli {
namespace {

struct TokenizerArgs {
  std::string corpus, out, tokenizer;
  int64_t vocab_size = 4000;
  bool quiet = false;
  bool no_template = false, split_special_tokens = false;  // encode, HF tokenizers
};

std::string read_stdin() {
  std::string s;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) s.append(buf, n);
  SEQLAB_CHECK(!std::ferror(stdin), "cannot read stdin");
  return s;
}

void write_stdout(std::string_view s) {
  SEQLAB_CHECK(std::fwrite(s.data(), 1, s.size(), stdout) == s.size() && std::fflush(stdout) == 0,
               "cannot write stdout");
}

int cmd_train(const TokenizerArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  SEQLAB_CHECK(a.vocab_size >= 257,
               "--vocab-size {} is too small: 256 bytes + <|endoftext|> need at least 257",
               a.vocab_size);
  const auto docs = load_corpus(a.corpus, Split::train);
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  log_info("corpus {} (train split): {} documents, {:.1f} MB", a.corpus, docs.size(), bytes / 1e6);
  BpeTrainOptions opt;
  opt.vocab_size = a.vocab_size;
  opt.progress = log_level() >= 1;
  const BpeModel model = train_bpe(docs, opt);
  save_bpe(model, a.out);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log_info("wrote {}/vocab.json + merges.txt: {} tokens, {} merges, {:.1f} s", a.out,
           model.tokens.size(), model.merges.size(), secs);
  return 0;
}

int cmd_encode(const TokenizerArgs& a) {
  const auto tok = make_tokenizer(a.tokenizer);
  const std::string text = read_stdin();
  const auto* hf = dynamic_cast<const HfTokenizer*>(tok.get());
  const auto ids =
      hf ? hf->encode(text, {!a.no_template, a.split_special_tokens}) : tok->encode(text);
  fmt::memory_buffer out;
  for (size_t i = 0; i < ids.size(); ++i)
    fmt::format_to(std::back_inserter(out), i ? " {}" : "{}", ids[i]);
  out.push_back('\n');
  write_stdout(std::string_view(out.data(), out.size()));
  return 0;
}

int cmd_decode(const TokenizerArgs& a) {
  const auto tok = make_tokenizer(a.tokenizer);
  const std::string in = read_stdin();
  std::vector<int64_t> ids;
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  for (size_t i = 0; i < in.size();) {
    if (space(in[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < in.size() && !space(in[j])) ++j;
    int64_t id = 0;
    const auto r = std::from_chars(in.data() + i, in.data() + j, id);
    SEQLAB_CHECK(r.ec == std::errc() && r.ptr == in.data() + j,
                 "tokenizer decode: '{}' is not a token id",
                 in.substr(i, std::min<size_t>(j - i, 40)));
    ids.push_back(id);
    i = j;
  }
  write_stdout(tok->decode(ids));
  return 0;
}

}  // namespace

void add_tokenizer_commands(CLI::App& app, Actions& actions) {
  auto a = std::make_shared<TokenizerArgs>();
  auto* tok = app.add_subcommand("tokenizer", "train a BPE tokenizer; encode and decode text");
  tok->require_subcommand(1);

  auto* train = tok->add_subcommand(
      "train", "learn a byte-level BPE from a corpus; writes vocab.json + merges.txt (HF format)");
  train->add_option("--corpus", a->corpus, "comma-separated sources: wordnet, text files, directories of *.txt (train split)")
      ->required();
  train->add_option("--vocab-size", a->vocab_size, "tokens: 256 bytes + merges + <|endoftext|>")
      ->capture_default_str();
  train->add_option("--out", a->out, "output directory")->required();

  auto* encode = tok->add_subcommand("encode", "text on stdin -> token ids on stdout, one line");
  auto* decode = tok->add_subcommand("decode", "token ids on stdin -> text on stdout");
  for (auto* sub : {encode, decode})
    sub->add_option("--tokenizer", a->tokenizer,
                    "byte, gpt2, bpe:<dir>, hf:<tokenizer.json or its dir>, or a directory")
        ->required();
  encode->add_flag("--no-template", a->no_template,
                   "HF tokenizer.json: leave out the post-processor's tokens (e.g. Llama 3's "
                   "<|begin_of_text|>)");
  encode->add_flag("--split-special-tokens", a->split_special_tokens,
                   "HF tokenizer.json: read special tokens in the text (<|endoftext|>, ...) as "
                   "ordinary text");
  for (auto* sub : {train, encode, decode})
    sub->add_flag("-q,--quiet", a->quiet, "no progress or info lines on stderr");

  actions.push_back({tok, [a, train, encode, decode] {
                       if (a->quiet) log_level() = 0;
                       if (*train) return cmd_train(*a);
                       if (*encode) return cmd_encode(*a);
                       if (*decode) return cmd_decode(*a);
                       return 2;
                     }});
}

}  // namespace seqlab::cli
