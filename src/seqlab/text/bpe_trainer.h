// Learning a byte-level BPE vocabulary from documents (Sennrich et al. 2016, at the byte level as
// in GPT-2): start from the 256 bytes, then repeatedly merge the most frequent adjacent pair of
// tokens, counting only inside pre-tokenized pieces (pretokenize.h), until the vocabulary has
// `vocab_size` tokens: 256 bytes + the merged tokens + <|endoftext|> (the last id).
//
// Deterministic: the most frequent pair wins; among equally frequent pairs the one with the
// smaller (left id, right id). The byte tokens are ids 0..255 in byte order and merged tokens
// take the next id in the order they were learned. Two different merges may spell the same bytes
// ("a"+"bc", "ab"+"c"); the second then reuses the first's id, so there can be more merges than
// vocab_size - 257.
//
// Cost: one pass to count the pieces of the documents into a word-frequency table, then per merge
// only the words that contain the chosen pair are touched (an index pair -> words), with pair
// counts updated incrementally and the next pair taken from a lazily updated max-heap.
#pragma once

#include "seqlab/text/bpe_tokenizer.h"

#include <string>
#include <vector>

namespace seqlab {

struct BpeTrainOptions {
  int64_t vocab_size = 4000;  // >= 257
  bool progress = true;       // a progress bar on stderr
};

// Learns the merges. Stops early, with a warning, when no pair is left to merge (a corpus too
// small for the vocabulary). Throws seqlab::Error when vocab_size < 257.
BpeModel train_bpe(const std::vector<std::string>& documents, const BpeTrainOptions& options);

// Writes dir/vocab.json and dir/merges.txt (HF's format, readable by BpeTokenizer::load),
// each atomically; creates dir. Only for byte-level models such as train_bpe's (every token
// spelled through GPT-2's byte table, except <|endoftext|>).
void save_bpe(const BpeModel& model, const std::string& dir);

}  // namespace seqlab
