#include "seqlab/exp/suites/suites.h"

namespace seqlab {

const std::vector<SuiteEntry>& suite_registry() {
  static const std::vector<SuiteEntry> r = {
      {"hierarchy", "RNN formal hierarchy: counting languages, saturation (Merrill+ 2020)",
       hierarchy_suite},
      {"separations",
       "Transformer vs recurrent: index lookup, bounded Dyck, equality, nearest neighbour "
       "(Bhattamishra+ 2024)",
       separations_suite},
      {"chomsky", "length generalisation across the Chomsky hierarchy (Deletang+ 2023)",
       chomsky_suite},
      {"recall", "associative recall (MQAR), flip-flop, copying", recall_suite},
      {"mqar",
       "MQAR (Zoology): accuracy against key-value pairs 4-64 and state size, learning rate "
       "swept per cell and chosen on validation, 3 seeds (Arora+ 2023)",
       mqar_suite},
      {"flipflop",
       "flip-flop error rates on a log scale over 20 seeds: 1-layer LSTM vs Transformer (Liu+ "
       "2023)",
       flipflop_suite},
      {"conversion",
       "swap-then-finetune: softmax teacher LM -> T2R / Hedgehog / ELU / RFA RNNs, LoRA, "
       "Tied-LoRA; speed and memory (Kasai+ 2021, Zhang+ 2024)",
       conversion_suite},
      {"conversion_full",
       "the conversion grid on the shipped teacher (models/teacher-en): every method x3 seeds, "
       "control and scratch baselines, test perplexity, by position to 4x context (issue 33)",
       conversion_full_suite},
      {"exit_swag",
       "early exit with calibrated confidence and SWAG uncertainty on supersense, pair_nli and "
       "difficulty (Schwartz+ 2020, Maddox+ 2019, Talman+ 2023)",
       exit_swag_suite},
      {"mae_deq",
       "mixture of attentive experts vs multi-head attention; deep equilibrium LM vs unrolled and "
       "stacked: perplexity, expert specialisation, training memory (Peng+ 2020, Bai+ 2019)",
       mae_deq_suite},
      {"objectives",
       "multilingual pretraining objectives (clm, mlm, clm on translation pairs, denoising, "
       "translation) on equal data and compute; probing and finetuning on POS and sentence "
       "classification in three synthetic languages (Li+ 2024)",
       objectives_suite},
      {"defsent",
       "sentence embeddings from WordNet definitions: DefSent and DefSent+ against the masked-LM "
       "encoder; reverse dictionary, Wu-Palmer similarity proxy, isotropy (Tsukagoshi+ 2021, "
       "Liu 2024)",
       defsent_suite},
      {"attention_shape",
       "Hedgehog's spikiness and monotonicity: attention-row entropy and Spearman rho with softmax "
       "for every feature map, untrained and trained, on models/teacher-en (Zhang+ 2024)",
       attention_shape_suite},
      {"tied_lora",
       "Tied-LoRA configurations (which of A, B are shared across layers; which of A, B, u, v "
       "train) against LoRA and full finetuning on a converted 4-layer model, 3 seeds, with a "
       "learning-rate check (Renduchintala+ 2023)",
       tied_lora_suite},
  };
  return r;
}

}  // namespace seqlab
