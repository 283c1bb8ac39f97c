// HfTokenizer's state (private to text/): what hf_tokenizer.cpp reads from a tokenizer.json and
// what hf_tokenizer_run.cpp encodes and decodes with.
#pragma once

#include "seqlab/text/hf_pipeline.h"
#include "seqlab/text/hf_tokenizer.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace seqlab {

struct HfTokenizer::Impl {
  std::string spec, source;
  hf::Normalizer normalizer;
  hf::PreTokenizer pre;
  std::unique_ptr<hf::BpeModel> model;
  std::vector<hf::AddedToken> added, added_normalized;  // the latter: contents normalized
  hf::AddedTokenMatcher raw_all, raw_plain, norm_all, norm_plain;  // plain: no special tokens
  hf::PostProcessor post;
  std::unordered_map<std::string, int64_t> added_ids;  // content -> id
  std::vector<std::string> decoded;                    // id -> bytes
  std::vector<uint8_t> special;                        // id -> is a special added token
  int64_t vocab_size = 0, eos = -1, bos = -1;
  std::string eos_error;
};

}  // namespace seqlab
