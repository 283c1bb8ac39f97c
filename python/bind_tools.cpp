// seqlab.convert, seqlab.finetune and the suites: the library calls `seqlab convert`,
// `seqlab finetune` and `seqlab suite` make (convert/convert_dir.h, train/finetune.h,
// exp/suite.h), with the CLI's options as keyword arguments (the flag with '_' for '-':
// d_feature=32 for --d-feature 32) and the CLI's progress on stderr (quiet=True: none).
#include "bindings.h"

#include "seqlab/convert/convert_dir.h"
#include "seqlab/core/blas_check.h"
#include "seqlab/exp/suite.h"
#include "seqlab/train/finetune.h"

#include <torch/extension.h>

#include <cstdlib>
#include <optional>

namespace seqlab::py {

namespace {

// The keyword quiet=True/False (the CLI's -q), taken out of the options.
bool take_quiet(nlohmann::json& j, std::set<std::string>& used) {
  if (!j.contains("quiet")) return false;
  used.insert("quiet");
  SEQLAB_CHECK(j["quiet"].is_boolean(), "quiet must be True or False");
  return j["quiet"].get<bool>();
}

pyb::dict convert(const Path& model_path, const Path& out_path, const pyb::kwargs& kw) {
  const std::string model = model_path.string(), out = out_path.string();
  auto j = kwargs_json(kw);
  std::set<std::string> used;
  const bool quiet = take_quiet(j, used);
  ConvertConfig cfg;
  apply_fields([&](auto& v) { cfg.visit(v); }, j, "convert()", used);
  reject_unknown(j, used, "convert");
  const auto r = with_quiet(quiet, [&] {
    pyb::gil_scoped_release release;
    return on_path(model, [&] { return convert_model_dir(model, out, cfg); });
  });
  pyb::dict d;
  d["out"] = out;
  d["convert"] = to_python(r.convert);
  d["arch"] = r.arch;
  d["parameters"] = r.parameters;
  return d;
}

pyb::dict finetune(const Path& model_path, const Path& out_path, const pyb::kwargs& kw) {
  const std::string model = model_path.string(), out = out_path.string();
  auto j = kwargs_json(kw);
  std::set<std::string> used;
  const bool quiet = take_quiet(j, used);
  FinetuneRequest r;
  r.model = model;
  r.out = out;
  TaskConfig task;
  std::set<std::string> task_keys;
  apply_fields([&](auto& v) { task.visit(v); }, j, "finetune()", task_keys);
  for (const auto& k : task_keys) r.task_overrides[k] = j[k];
  used.insert(task_keys.begin(), task_keys.end());
  apply_fields([&](auto& v) { r.train.visit(v); }, j, "finetune()", used);
  apply_fields([&](auto& v) { r.start.adapter.visit(v); }, j, "finetune()", used);
  apply_fields([&](auto& v) { r.start.visit_distill(v); }, j, "finetune()", used);
  for (const char* flag : {"merge", "resume"})
    if (j.contains(flag)) {
      SEQLAB_CHECK(j[flag].is_boolean(), "{} must be True or False", flag);
      used.insert(flag);
    }
  r.start.merge = j.value("merge", false);
  r.resume = j.value("resume", false);
  r.steps_override = j.contains("steps") ? r.train.steps : 0;
  reject_unknown(j, used, "finetune");
  const auto o = with_quiet(quiet, [&] {
    pyb::gil_scoped_release release;
    warn_if_reference_blas();
    return on_path(model, [&] { return finetune_model_dir(r, nullptr); });
  });
  // The CLI's --json summary.
  pyb::dict d;
  d["out"] = out;
  d["start_step"] = o.start_step;
  d["steps"] = o.steps;
  d["first_loss"] = o.first_loss;
  d["last_loss"] = o.last_loss;
  d["eval_loss"] = o.eval_loss;
  d["parameters"] = o.parameters;
  d["trainable"] = o.trainable;
  d["eval_ppl"] = o.eval_ppl;
  d["seconds"] = o.seconds;
  d["loop_seconds"] = o.loop_seconds;
  d["eval_seconds"] = o.eval_seconds;
  return d;
}

// The seqlab executable the suite's workers run (`seqlab suite-cell`): `worker`, else
// $SEQLAB_BIN, else the one this module was built beside.
std::string worker_exe(const std::string& worker) {
  if (!worker.empty()) return worker;
  if (const char* env = std::getenv("SEQLAB_BIN"); env && *env) return env;
  return SEQLAB_CLI_PATH;
}

pyb::dict run_suite_py(const std::string& name, const Path& out_path, bool quick, int64_t jobs,
                       const std::string& only, bool plots, bool quiet,
                       const std::optional<Path>& worker) {
  const std::string out = out_path.string();
  auto spec = make_suite(name, quick);
  SuiteOptions opt;
  opt.out = out;
  SEQLAB_CHECK(!opt.out.empty(), "suite: --out is required (except with --list)");
  SEQLAB_CHECK(jobs >= 0, "--jobs must be >= 0, got {}", jobs);
  opt.jobs = jobs;
  opt.only = only;
  opt.plots = plots;
  opt.worker_exe = worker_exe(worker ? worker->string() : "");
  if (!std::filesystem::exists(opt.worker_exe))
    throw MissingPath(
        fmt::format("{}: the seqlab executable the suite's workers run is missing "
                    "(build it, or pass worker= / set SEQLAB_BIN)",
                    opt.worker_exe));
  const auto r = with_quiet(quiet, [&] {
    pyb::gil_scoped_release release;
    warn_if_reference_blas();
    return run_suite(spec, opt);
  });
  pyb::dict d;
  d["cells"] = r.cells;
  d["ran"] = r.ran;
  d["skipped"] = r.skipped;
  d["failed"] = r.failed;
  d["seconds"] = r.seconds;
  d["report"] = r.report;
  d["results"] = (std::filesystem::path(out) / "results.jsonl").string();
  return d;
}

pyb::list suite_cells(const std::string& name, bool quick, const std::string& only) {
  auto spec = make_suite(name, quick);
  if (!only.empty()) keep_cells(spec, only);
  pyb::list ids;
  for (const auto& c : spec.cells) ids.append(c.at("id").get<std::string>());
  return ids;
}

}  // namespace

void bind_tools(pyb::module_& m) {
  m.def("convert", &convert, pyb::arg("model"), pyb::arg("out"),
        "seqlab convert: the softmax model directory `model` as linear attention (to='t2r', "
        "'hedgehog', ..., or 'hybrid') in `out`; every other CLI flag as a keyword "
        "(distill_steps=..., window=...); returns the summary (out, convert, arch, parameters)");
  m.def("finetune", &finetune, pyb::arg("model"), pyb::arg("out"),
        "seqlab finetune: train the model directory `model` further into `out`; the CLI's task, "
        "training, adapter and distillation flags as keywords (steps=..., adapter='lora', "
        "merge=True, resume=True); returns the CLI's --json summary");
  m.def("run_suite", &run_suite_py, pyb::arg("name"), pyb::arg("out"), pyb::arg("quick") = false,
        pyb::arg("jobs") = 0, pyb::arg("only") = "", pyb::arg("plots") = true,
        pyb::arg("quiet") = false, pyb::arg("worker") = pyb::none(),
        "seqlab suite NAME --out OUT: runs the unfinished cells, writes results.jsonl and "
        "report.md; returns the counts and paths");
  m.def("suite_cells", &suite_cells, pyb::arg("name"), pyb::arg("quick") = false,
        pyb::arg("only") = "", "seqlab suite NAME --list: the grid's cell ids");
  m.def(
      "suites",
      [] {
        pyb::dict d;
        for (const auto& e : suite_registry()) d[pyb::str(e.name)] = e.description;
        return d;
      },
      "every suite's name and one-line description");
  m.def(
      "read_results",
      [](const Path& out) {
        const auto rows =
            on_path((out / "results.jsonl").string(), [&] { return read_results(out.string()); });
        pyb::list l;
        for (const auto& r : rows) l.append(to_python(r));
        return l;
      },
      pyb::arg("out"), "a suite's <out>/results.jsonl as a list of dicts");
}

}  // namespace seqlab::py
