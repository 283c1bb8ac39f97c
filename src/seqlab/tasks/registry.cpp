#include "seqlab/tasks/registry.h"

#include "seqlab/core/error.h"
#include "seqlab/tasks/parity.h"
#include "seqlab/tasks/l5.h"
#include "seqlab/tasks/lm.h"
#include "seqlab/tasks/anbn_prefix.h"
#include "seqlab/tasks/anbn.h"
#include "seqlab/tasks/index_lookup.h"
#include "seqlab/tasks/dyck_bounded.h"
#include "seqlab/tasks/string_equality.h"
#include "seqlab/tasks/nearest_neighbor.h"
#include "seqlab/tasks/mqar.h"
#include "seqlab/tasks/bucket_sort.h"
#include "seqlab/tasks/copy.h"
#include "seqlab/tasks/copy_reverse_sort.h"
#include "seqlab/tasks/cycle_navigation.h"
#include "seqlab/tasks/duplicate_string.h"
#include "seqlab/tasks/even_pairs.h"
#include "seqlab/tasks/flip_flop.h"
#include "seqlab/tasks/modular_arithmetic.h"
#include "seqlab/tasks/reverse_string.h"
#include "seqlab/tasks/stack_manipulation.h"
#include "seqlab/tasks/supersense.h"
#include "seqlab/tasks/pair_nli.h"
#include "seqlab/tasks/difficulty.h"
#include "seqlab/tasks/pointer_chase.h"

namespace seqlab {

namespace {
template <class T>
std::unique_ptr<Task> make(const TaskConfig& c) {
  return std::make_unique<T>(c);
}
}  // namespace

const std::vector<TaskEntry>& task_registry() {
  static const std::vector<TaskEntry> r = {
      {"parity", "bit string; tag each position with the parity of the bits so far",
       make<ParityTask>},
      {"l5", "a/b string; tag each prefix with |#a - #b| < 5 (one counter, Merrill+ 2020)",
       make<L5Task>},
      {"anbn_prefix", "a/b string; tag whether an a^n b^n prefix is complete (Merrill+ 2020)",
       make<AnbnPrefixTask>},
      {"anbn", "LM on BOS a^n b^n EOS, n = (T-2)/2; extra: accepted at --threshold (Merrill+ 2020)",
       make<AnbnTask>},
      {"anbncn", "LM on BOS a^n b^n c^n EOS, n = (T-2)/3; extra: accepted at --threshold",
       make<AnbncnTask>},
      {"index_lookup", "N symbols, SEP, index i; output x_i (Bhattamishra+ 2024)",
       make<IndexLookupTask>},
      {"dyck_bounded", "Dyck-(--n-types, --depth) or not; negatives one edit away (classify)",
       make<DyckBoundedTask>},
      {"string_equality", "w SEP w'; equal? negatives differ in 1-2 places (Bhattamishra+ 2024)",
       make<StringEqualityTask>},
      {"nearest_neighbor", "labelled 2-d grid points, query; nearest label (Bhattamishra+ 2024)",
       make<NearestNeighborTask>},
      {"mqar", "multi-query associative recall: key-value pairs, then keys (Arora+ 2023)",
       make<MqarTask>},
      {"even_pairs", "bits, SEP, ?: even number of ab/ba pairs? n = T-2 (regular, Deletang+ 2023)",
       make<EvenPairsTask>},
      {"cycle_navigation",
       "-1/0/+1 moves on a --modulus cycle, SEP, ?: final state; n = T-2 (regular, Deletang+ 2023)",
       make<CycleNavigationTask>},
      {"modular_arithmetic",
       "d op .. d, + - x mod --modulus, SEP, ?: value; n = odd <= T-2 (regular, Deletang+ 2023)",
       make<ModularArithmeticTask>},
      {"reverse_string",
       "bits, SEP, n blanks: the bits reversed; n = (T-1)/2 (DCF, Deletang+ 2023)",
       make<ReverseStringTask>},
      {"stack_manipulation",
       "stack, POP/PUSH actions, SEP, n+1 blanks: final stack; n = (T-2)/2 (DCF, Deletang+ 2023)",
       make<StackManipulationTask>},
      {"duplicate_string", "bits w, SEP, 2n blanks: ww; n = (T-1)/3 (CS, Deletang+ 2023)",
       make<DuplicateStringTask>},
      {"bucket_sort",
       "--vocab symbols (default 5), SEP, n blanks: sorted; n = (T-1)/2 (CS, Deletang+ 2023)",
       make<BucketSortTask>},
      {"copy_reverse_sort",
       "task token, --vocab symbols (default 8), SEP, m blanks: copied, reversed or sorted as the "
       "token says; m = (T-2)/2 (the MAE task mixture, Peng+ 2020)",
       make<CopyReverseSortTask>},
      {"flip_flop", "LM on w/r/i-bit pairs, FFL(0.8); scored: the bit after each r (Liu+ 2023)",
       make_flip_flop},
      {"flip_flop_dense",
       "flip_flop at FFL(0.1): dense writes/reads, out-of-distribution test (Liu+ 2023)",
       make_flip_flop_dense},
      {"flip_flop_sparse",
       "flip_flop at FFL(0.98): sparse writes/reads, out-of-distribution test (Liu+ 2023)",
       make_flip_flop_sparse},
      {"copy", "LM: --vocab letters (default 26), SEP, their copy; n = T/2 (Jelassi+ 2024)",
       make<CopyTask>},
      {"lm", "language modelling: windows of T tokens of a --corpus (wordnet) by --tokenizer",
       make<LmTask>},
      {"supersense",
       "WordNet definition -> its lexicographer file, 45 classes (noun.animal, ..; classify)",
       make_supersense},
      {"supersense_pos", "WordNet definition -> part of speech, 4 classes (classify)",
       make_supersense_pos},
      {"pair_nli",
       "definition pairs: entailment (hypernym) / neutral / contradiction (antonym), from WordNet",
       make<PairNliTask>},
      {"difficulty",
       "--vocab classes (default 3) by indicator counts; known p*(y|x), annotators, difficulty",
       make<DifficultyTask>},
      {"pointer_chase",
       "N = T-1 position symbols, query (k, p): follow the pointers k times from p; k = 1..--depth "
       "(default 2), each hop one attention layer; known difficulty (classify, early exit)",
       make<PointerChaseTask>},
  };
  return r;
}

std::unique_ptr<Task> make_task(const TaskConfig& cfg) {
  for (const auto& e : task_registry()) {
    if (e.name != cfg.task) continue;
    auto t = e.make(cfg);
    SEQLAB_CHECK(cfg.min_len == 0 || cfg.min_len >= t->min_length(),
                 "task {}: --min-len {} is below its minimum ({})", cfg.task, cfg.min_len,
                 t->min_length());
    SEQLAB_CHECK(cfg.min_len >= 0, "task {}: --min-len must be >= 0", cfg.task);
    const int64_t shortest = std::max(cfg.min_len, t->min_length());
    SEQLAB_CHECK(cfg.max_len >= shortest,
                 "task {}: --max-len {} is below the shortest training length {}", cfg.task,
                 cfg.max_len, shortest);
    return t;
  }
  std::string names;
  for (const auto& e : task_registry()) names += (names.empty() ? "" : ", ") + e.name;
  fail("unknown task '{}' (known: {})", cfg.task, names);
}

}  // namespace seqlab
