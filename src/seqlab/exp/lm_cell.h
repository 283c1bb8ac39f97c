// Cells of language-model suites (conversion): run by the same workers as the synthetic grids,
// selected by the cell's "kind". Every cell writes its model to <run_dir>/model; "from" names a
// model directory relative to the suite's runs/ folder (e.g. "teacher/model"), and the cell lists
// the cells it needs in "after".
//
//   lm_train     {"model", "task", "train", "eval"}: train from random initialisation.
//   lm_finetune  {"from", "convert" (ConvertConfig, optional), "adapter" (AdapterConfig),
//                 "train", "eval"}: convert the "from" model into <run_dir>/converted (with
//                 attention transfer when convert.distill_steps > 0), then finetune it (fully or
//                 with adapters). Without "convert", finetunes "from" itself.
//   lm_bench     {"models": [{"label", "from"}], "contexts": [..]}: generation speed and state
//                memory of each model, token by token through its recurrent form (the teacher's
//                is its KV cache), batch 1, at growing context lengths.
// "eval": {"context": C, "max_tokens": N}: validation perplexity over consecutive windows of C
// tokens of the first N tokens of the valid split (train/evaluate_lm.h).
//
// Rows: lm_train / lm_finetune give one row {"kind": "lm", label, init, arch, feature_map,
// distill_steps, adapter, ppl, nll, ppl_converted (before finetuning), trainable, parameters,
// steps, train_seconds, curve [[step, eval_ppl], ..], distill_before/after}; lm_bench one row per
// (model, context) {"kind": "bench", label, context, tokens_per_s, state_bytes}.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

nlohmann::json run_lm_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
