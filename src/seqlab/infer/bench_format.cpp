// `seqlab bench decode`'s output: the md, csv and json renderings of its rows, and the line that
// names the machine (infer/bench.h).
#include "seqlab/infer/bench.h"

#include "seqlab/core/error.h"
#include "seqlab/core/machine.h"
#include "seqlab/infer/kernels.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace seqlab::infer {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Plain decimals (no exponents), so a spreadsheet reads every cell as a number.
std::string fmt_num(fmt::format_string<double> f, double v) {
  return fmt::format(f, v);
}

}  // namespace

std::string machine_description() {
  const auto m = machine_facts();
  std::string load;
  std::ifstream la("/proc/loadavg");
  la >> load;
  return fmt::format("{}{} cores{}", m.cpu.empty() ? "" : m.cpu + ", ", m.cores,
                     load.empty() ? "" : ", load average " + load);
}

std::string format_decode_bench(const std::vector<DecodeBenchRow>& rows, const std::string& format,
                                const DecodeBenchConfig& cfg) {
  if (format == "json") {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{"model", r.model},     {"arch", r.arch},    {"engine", r.engine},
                          {"weights", r.weights}, {"batch", r.batch},  {"context", r.context},
                          {"test", r.test},       {"tokens", r.tokens}};
      if (r.note.empty()) {
        j.update({{"tokens_per_s", r.tokens_per_s},
                  {"sd", r.sd},
                  {"ms_per_token", r.ms_per_token},
                  {"peak_rss_mb", r.peak_rss_mb},
                  {"state_mb", r.state_mb},
                  {"reps", r.reps},
                  {"threads", r.engine == "torch" ? cfg.threads : cfg.decoder_threads},
                  {r.test + "_tokens_per_s", r.tokens_per_s}});
        if (r.fast_over_torch > 0) j["fast_over_torch"] = r.fast_over_torch;
        if (r.floor_ms > 0) j.update({{"floor_ms", r.floor_ms}, {"x_floor", r.x_floor}});
        if (r.weight_bytes > 0) j["weight_bytes"] = r.weight_bytes;
      } else {
        j["note"] = r.note;
      }
      a.push_back(j);
    }
    return a.dump(1) + "\n";
  }
  if (format == "csv") {
    std::string s =
        "model,arch,engine,context,test,batch,tokens,tokens_per_s,sd,ms_per_token,peak_rss_mb,"
        "state_mb,"
        "reps,threads,fast_over_torch,floor_ms,x_floor,note,weights\n";
    for (const auto& r : rows) {
      const bool ok = r.note.empty();
      s += fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.model),
          csv_field(r.arch), r.engine, r.context, r.test, r.batch, r.tokens,
          ok ? fmt_num("{:.1f}", r.tokens_per_s) : "", ok ? fmt_num("{:.1f}", r.sd) : "",
          ok ? fmt_num("{:.5f}", r.ms_per_token) : "", ok ? fmt_num("{:.1f}", r.peak_rss_mb) : "",
          ok ? fmt_num("{:.5f}", r.state_mb) : "", ok ? std::to_string(r.reps) : "", cfg.threads,
          r.fast_over_torch > 0 ? fmt_num("{:.3f}", r.fast_over_torch) : "",
          r.floor_ms > 0 ? fmt_num("{:.5f}", r.floor_ms) : "",
          r.floor_ms > 0 ? fmt_num("{:.3f}", r.x_floor) : "", csv_field(r.note), r.weights);
    }
    return s;
  }
  SEQLAB_CHECK(format == "md", "--format must be md, csv or json, got '{}'", format);
  std::string s = fmt::format(
      "seqlab bench decode: {}; fast kernel {}, fast threads {}, torch threads {}; pp = prefill "
      "of the context, tg = {} greedy tokens after it (batch B: B sequences generated together, "
      "tokens/s summed over them); tokens/s mean ± sd over {} reps\n\n",
      machine_description(), kernel_name(active_kernel()), cfg.decoder_threads, cfg.threads,
      cfg.gen, cfg.reps);
  s += "| model | arch | context | batch | engine | pp tokens/s | tg tokens/s | tg ms/token | "
       "state MB | "
       "peak RSS MB | tg fast/torch | floor ms | x floor |\n";
  s += "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  // pp and tg rows come in pairs (same model, context, engine).
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    auto pp = rows[i];
    const auto& tg = rows[i + 1];
    if (pp.weights != "f32") pp.engine += " " + pp.weights;  // "fast int8"
    if (!pp.note.empty()) {
      s += fmt::format("| {} | {} | {} | {} | {} | {} | — | — | — | — | — | — | — |\n", pp.model,
                       pp.arch, pp.context, pp.batch, pp.engine, pp.note);
      continue;
    }
    s += fmt::format(
        "| {} | {} | {} | {} | {} | {:.0f} ± {:.0f} | {:.0f} ± {:.0f} | {:.3f} | {:.3g} | "
        "{:.0f} | {} | {} | {} |\n",
        pp.model, pp.arch, pp.context, pp.batch, pp.engine, pp.tokens_per_s, pp.sd, tg.tokens_per_s,
        tg.sd, tg.ms_per_token, tg.state_mb, tg.peak_rss_mb,
        tg.fast_over_torch > 0 && tg.engine == "fast" ? fmt::format("{:.2f}×", tg.fast_over_torch)
                                                      : "",
        tg.floor_ms > 0 ? fmt::format("{:.4f}", tg.floor_ms) : "",
        tg.floor_ms > 0 ? fmt::format("{:.2f}×", tg.x_floor) : "");
  }
  if (std::any_of(rows.begin(), rows.end(), [](const auto& r) { return r.floor_ms > 0; }))
    s += "\nfloor ms: the fast engine's roofline per generated token, max(bytes of weights and "
         "state / read bandwidth measured at that size, FLOPs / peak FMA), one core "
         "(`seqlab bench roofline`); x floor = tg ms/token ÷ floor.\n";
  return s;
}

}  // namespace seqlab::infer
