// Cells of the `mae_deq` suite (exp/suites/mae_deq.cpp), kind "mae_deq": train one model (an LM on
// WordNet glosses or the copy_reverse_sort mixture), then measure it.
//
//   {"id", "kind": "mae_deq", "group": "lm" | "mix" | "deq", "label", "model", "task", "train",
//    "eval": {"context", "max_tokens"} (lm tasks), "eval_size" (synthetic tasks)}
//
// Row: {"kind": "mae_deq", cell, group, label, arch, mae, mae_schedule, deq (backward mode or ""),
// deq_solver, depth (blocks, or f applications for DEQ/unrolled), d_model, parameters, steps,
// train_seconds, seed, ppl (lm) | accuracy and accuracy_by_task (mix), and when the model is an
// MAE on the mixture: mi_bits [per layer] (mutual information between the task and the expert the
// gate ranks first at the SEP token, in bits; log2(3) = 1.585 is the most there is),
// experts_by_task [layer][task][expert] counts; memory: rss_start_mb (peak RSS of the worker
// before training: LibTorch, the binary), rss_peak_mb (after training), train_mem_mb (the
// difference: what training added at its peak); deq: deq_trace [[step, iters, residual,
// bwd_iters, bwd_residual], ..] from metrics.jsonl}.
//
// Memory is the worker process's getrusage(RUSAGE_SELF).ru_maxrss: every cell runs in its own
// process (suite.h), so the peak belongs to that one training run and nothing else.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

nlohmann::json run_mae_deq_cell(const nlohmann::json& cell, const std::string& run_dir);

}  // namespace seqlab
