#include "seqlab/exp/suite.h"

#include "seqlab/core/atomic_file.h"
#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/exp/cell.h"
#include "seqlab/exp/grid.h"
#include "seqlab/exp/report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

namespace seqlab {

namespace fs = std::filesystem;

nlohmann::json make_cell(const std::string& id, const nlohmann::json& model,
                         const nlohmann::json& task, const nlohmann::json& train,
                         const std::vector<int64_t>& test_lengths, int64_t eval_size,
                         const nlohmann::json& tags) {
  return {{"id", id},
          {"model", model},
          {"task", task},
          {"train", train},
          {"test_lengths", test_lengths},
          {"eval_size", eval_size},
          {"tags", tags}};
}

SuiteSpec make_suite(const std::string& name, bool quick) {
  std::string names;
  for (const auto& e : suite_registry()) {
    if (e.name == name) {
      auto spec = e.make(quick);
      std::set<std::string> ids;
      for (const auto& c : spec.cells)
        SEQLAB_CHECK(ids.insert(c.at("id").get<std::string>()).second,
                     "suite {}: duplicate cell id {}", name, c.at("id").dump());
      return spec;
    }
    names += (names.empty() ? "" : ", ") + e.name;
  }
  fail("unknown suite '{}' (known: {})", name, names);
}

void keep_cells(SuiteSpec& spec, const std::string& pattern) {
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    fail("--only '{}' is not a valid regular expression ({})", pattern, e.what());
  }
  std::map<std::string, const nlohmann::json*> by_id;
  for (const auto& c : spec.cells) by_id[c.at("id").get<std::string>()] = &c;
  std::set<std::string> keep;
  std::vector<std::string> todo;
  for (const auto& [id, c] : by_id)
    if (std::regex_search(id, re)) todo.push_back(id);
  SEQLAB_CHECK(!todo.empty(),
               "--only '{}' matches none of suite {}'s {} cells (`seqlab suite {} --list` shows "
               "their ids)",
               pattern, spec.name, spec.cells.size(), spec.name);
  while (!todo.empty()) {  // a kept cell keeps what it waits on
    const auto id = todo.back();
    todo.pop_back();
    if (!keep.insert(id).second) continue;
    const auto& c = *by_id.at(id);
    if (c.contains("after"))
      for (const auto& dep : c.at("after")) {
        const auto d = dep.get<std::string>();
        if (by_id.count(d)) todo.push_back(d);
      }
  }
  std::vector<nlohmann::json> kept;
  for (const auto& c : spec.cells)
    if (keep.count(c.at("id").get<std::string>())) kept.push_back(c);
  spec.cells = std::move(kept);
}

namespace {

struct Worker {
  pid_t pid;
  std::string id;
};

// Starts `<exe> suite-cell --cell <spec> --out <run>` with stdout and stderr to <log>.
pid_t spawn_cell(const std::string& exe, const std::string& spec, const std::string& run,
                 const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> args = {exe, "suite-cell", "--cell", spec, "--out",
                                   run, "--threads",  "1",      "-q"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // One thread per worker means one BLAS thread too: OpenBLAS (the pthread build) otherwise
  // starts its own per process, and two workers on two cores then fight (measured: a pair of
  // width-64 LSTM cells took 19-22 s instead of 11 s). A value the user set is kept.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  for (const char* var : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (!std::getenv(var)) env_strings.push_back(std::string(var) + "=1");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  SEQLAB_CHECK(rc == 0, "could not start worker {}: {}", exe, std::strerror(rc));
  return pid;
}

std::string last_line_of(const std::string& path) {
  std::string s;
  try {
    s = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!s.empty() && s.back() == '\n') s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// Whether cell `c` ran (or started) in `cells_dir` under another spec. A finished one is an error
// (its rows must not be mixed into this grid's); an unfinished one is reported so it can restart.
bool ran_with_other_settings(const fs::path& cells_dir, const nlohmann::json& c,
                             const std::string& out) {
  const auto id = c.at("id").get<std::string>();
  const auto spec_file = cells_dir / (id + ".json");
  if (!fs::exists(spec_file) ||
      normalized_cell(nlohmann::json::parse(read_file(spec_file.string()))) == normalized_cell(c))
    return false;
  SEQLAB_CHECK(!fs::exists(cells_dir / (id + ".result.json")),
               "{}: cell {} already ran with other settings (e.g. --quick vs full); use another "
               "--out",
               out, id);
  return true;
}

// Waits for a worker to end, calling `tick` every few seconds meanwhile (the progress line's
// running cells). Returns the pid (< 0 once no child is left) and its wait status.
std::pair<pid_t, int> wait_for_worker(const std::function<void()>& tick) {
  using clock = std::chrono::steady_clock;
  auto last = clock::now();
  for (int status = 0;;) {
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 || (pid < 0 && errno != EINTR)) return {pid, status};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (clock::now() - last >= std::chrono::seconds(5)) {
      tick();
      last = clock::now();
    }
  }
}

// The progress line's status (failures so far, then each running cell's step) and the running
// cells' partial work (the sum of their fractions of their steps), for the eta.
std::pair<std::string, double> running_status(const std::vector<Worker>& running,
                                              const fs::path& runs_dir,
                                              const std::map<std::string, int64_t>& steps_of,
                                              int64_t failed) {
  std::string s = failed ? fmt::format("{} failed", failed) : "";
  double partial = 0;
  for (const auto& w : running) {
    const auto it = steps_of.find(w.id);
    const int64_t steps = it == steps_of.end() ? 0 : it->second;
    const int64_t step = cell_step((runs_dir / w.id).string());
    if (step >= 0 && steps > 0) partial += std::min(1.0, static_cast<double>(step) / steps);
    const auto one = cell_step_status(w.id, step, steps);
    if (!one.empty()) s += (s.empty() ? "" : ", ") + one;
  }
  return {s, partial};
}

// `rows` as JSON Lines, one row a line, written atomically.
void write_jsonl(const std::string& path, const std::vector<nlohmann::json>& rows) {
  std::string jsonl;
  for (const auto& row : rows) jsonl += row.dump() + "\n";
  write_file_atomic(path, jsonl);
}

// Every finished cell's rows, in grid order. A finished cell outside this run's slice is checked
// like the ones it ran.
std::vector<nlohmann::json> finished_rows(const SuiteSpec& full, const std::string& out) {
  const fs::path cells_dir = fs::path(out) / "cells";
  std::vector<nlohmann::json> rows;
  for (const auto& c : full.cells) {
    const auto path = cells_dir / (c.at("id").get<std::string>() + ".result.json");
    if (!fs::exists(path)) continue;
    ran_with_other_settings(cells_dir, c, out);
    auto r = nlohmann::json::parse(read_file(path.string()));
    for (const auto& row : r.at("rows")) rows.push_back(row);
  }
  return rows;
}

}  // namespace

int64_t cell_step(const std::string& run_dir) {
  std::error_code ec;
  fs::path newest;
  fs::file_time_type newest_time{};
  for (fs::recursive_directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 1) it.disable_recursion_pending();
    if (it->path().filename() != "metrics.jsonl") continue;
    const auto t = fs::last_write_time(it->path(), ec);
    if (!ec && (newest.empty() || t > newest_time)) {
      newest = it->path();
      newest_time = t;
    }
  }
  if (newest.empty()) return -1;
  const auto row = nlohmann::json::parse(last_line_of(newest.string()), nullptr, false);
  if (row.is_discarded() || !row.is_object() || !row.contains("step")) return -1;
  return row["step"].get<int64_t>();
}

std::string cell_step_status(const std::string& id, int64_t step, int64_t steps) {
  if (step < 0) return "";
  return steps > 0 ? fmt::format("{} {}/{}", id, step, steps) : fmt::format("{} step {}", id, step);
}

SuiteOutcome run_suite(const SuiteSpec& full, const SuiteOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  // `spec` is what runs; results.jsonl and the report cover every finished cell of `full`.
  SuiteSpec spec = full;
  if (!opt.only.empty()) keep_cells(spec, opt.only);
  SEQLAB_CHECK(!opt.out.empty(), "suite {}: --out is required", spec.name);
  SEQLAB_CHECK(fs::exists(opt.worker_exe), "suite worker binary {} not found", opt.worker_exe);
  const fs::path out(opt.out), cells_dir = out / "cells", runs_dir = out / "runs";
  ensure_dir(cells_dir.string());
  ensure_dir(runs_dir.string());
  const int64_t jobs =
      opt.jobs > 0 ? opt.jobs : std::max<int64_t>(1, std::thread::hardware_concurrency());

  SuiteOutcome res;
  res.cells = static_cast<int64_t>(spec.cells.size());
  std::vector<const nlohmann::json*> pending;
  for (const auto& c : spec.cells) {
    const auto id = c.at("id").get<std::string>();
    const auto result = cells_dir / (id + ".result.json");
    // An unfinished cell that started under another spec starts again.
    if (ran_with_other_settings(cells_dir, c, opt.out)) fs::remove_all(runs_dir / id);
    if (fs::exists(result)) {
      res.skipped += 1;
      continue;
    }
    write_file_atomic((cells_dir / (id + ".json")).string(), c.dump(2) + "\n");
    pending.push_back(&c);
  }
  log_info("suite {}: {} cells, {} already done, {} to run on {} workers", spec.name, res.cells,
           res.skipped, pending.size(), jobs);

  std::map<std::string, int64_t> steps_of;  // train.steps of each cell that has them
  for (const auto& c : spec.cells)
    if (c.contains("train") && c["train"].is_object() && c["train"].contains("steps"))
      steps_of[c.at("id").get<std::string>()] = c["train"]["steps"].get<int64_t>();
  Progress bar("suite " + spec.name, res.cells, res.skipped);
  std::vector<Worker> running;
  int64_t done = res.skipped;
  double resumed = 0;  // the work the cells started in this run had done before it (for the eta)
  // A cell may name cells it needs finished first ("after": [ids], e.g. a conversion needs its
  // teacher); it starts once they have results, and fails without running if one failed.
  auto finished = [&](const std::string& id) {
    return fs::exists(cells_dir / (id + ".result.json"));
  };
  std::set<std::string> failed_ids;
  auto state_of = [&](const nlohmann::json& c) {  // 0 wait, 1 ready, 2 blocked by a failure
    for (const auto& dep : c.value("after", std::vector<std::string>{})) {
      if (failed_ids.count(dep)) return 2;
      if (!finished(dep)) return 0;
    }
    return 1;
  };
  while (!pending.empty() || !running.empty()) {
    for (size_t i = 0; i < pending.size() && static_cast<int64_t>(running.size()) < jobs;) {
      const auto id = pending[i]->at("id").get<std::string>();
      const int st = state_of(*pending[i]);
      if (st == 0) {
        ++i;
        continue;
      }
      pending.erase(pending.begin() + static_cast<long>(i));
      if (st == 2) {
        res.failed += 1;
        failed_ids.insert(id);
        log_warn("cell {} not run: a cell it needs failed", id);
        bar.update(++done, fmt::format("{} failed", res.failed));
        continue;
      }
      // A resumed cell's steps before this run are not this run's rate.
      const auto steps = steps_of.find(id);
      const int64_t before = cell_step((runs_dir / id).string());
      if (steps != steps_of.end() && steps->second > 0 && before > 0)
        resumed += std::min(1.0, static_cast<double>(before) / steps->second);
      running.push_back({spawn_cell(opt.worker_exe, (cells_dir / (id + ".json")).string(),
                                    (runs_dir / id).string(), (cells_dir / (id + ".log")).string()),
                         id});
    }
    if (running.empty()) {
      // Whatever is left waits on cells that are neither running nor finished: a dependency
      // outside the suite, or a cycle.
      for (auto* c : pending)
        log_warn("cell {} not run: it waits on cells that never finish", c->at("id").dump());
      res.failed += static_cast<int64_t>(pending.size());
      break;
    }
    const auto [pid, status] = wait_for_worker([&] {
      const auto [text, partial] = running_status(running, runs_dir, steps_of, res.failed);
      bar.update(done, partial, resumed, text);
    });
    if (pid < 0) break;
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].pid != pid) continue;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                      fs::exists(cells_dir / (running[i].id + ".result.json"));
      if (ok) {
        res.ran += 1;
        // results.jsonl grows as cells finish, so a suite stopped part-way leaves what it
        // finished; the input-blind baselines (dear at long lengths) join at the end, or with
        // --report-only.
        write_jsonl((out / "results.jsonl").string(), finished_rows(full, opt.out));
      } else {
        res.failed += 1;
        failed_ids.insert(running[i].id);
        log_warn("cell {} failed: {} (log: {})", running[i].id,
                 last_line_of((cells_dir / (running[i].id + ".log")).string()),
                 (cells_dir / (running[i].id + ".log")).string());
      }
      running.erase(running.begin() + static_cast<long>(i));
      break;
    }
    const auto [text, partial] = running_status(running, runs_dir, steps_of, res.failed);
    bar.update(++done, partial, resumed, text);
  }
  bar.finish();

  auto rows = finished_rows(full, opt.out);
  add_blind_accuracy(full.cells, rows);
  write_jsonl((out / "results.jsonl").string(), rows);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.report = write_report(full, rows, opt.out, opt.plots, res.failed);
  return res;
}

std::vector<nlohmann::json> read_results(const std::string& out) {
  const auto path = (fs::path(out) / "results.jsonl").string();
  SEQLAB_CHECK(fs::exists(path), "{}: missing (run the suite first)", path);
  std::vector<nlohmann::json> rows;
  std::stringstream ss(read_file(path));
  std::string line;
  for (int n = 1; std::getline(ss, line); ++n) {
    try {
      rows.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      fail("{}:{}: not a JSON row", path, n);
    }
  }
  return rows;
}

std::string rewrite_report(const SuiteSpec& spec, const SuiteOptions& opt) {
  const auto path = (fs::path(opt.out) / "results.jsonl").string();
  auto rows = read_results(opt.out);
  // Rows written before the input-blind baseline existed get it now (no model is needed), and
  // results.jsonl keeps what the report shows.
  if (add_blind_accuracy(spec.cells, rows) > 0) write_jsonl(path, rows);
  return write_report(spec, rows, opt.out, opt.plots, 0);
}

}  // namespace seqlab
