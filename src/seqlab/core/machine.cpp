#include "seqlab/core/machine.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace seqlab {

namespace {

// The value after "key<tabs>: " on a /proc/cpuinfo line that starts with exactly that key.
bool field(const std::string& line, const std::string& key, std::string& value) {
  if (line.rfind(key, 0) != 0) return false;
  const auto colon = line.find(':');
  if (colon == std::string::npos || line.find_first_not_of(" \t", key.size()) != colon)
    return false;
  value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(' '));
  return true;
}

std::string openblas_string(const char* name) {
  auto f = reinterpret_cast<char* (*)()>(dlsym(RTLD_DEFAULT, name));
  const char* s = f ? f() : nullptr;
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

}  // namespace

MachineFacts machine_facts() {
  MachineFacts m;
  std::ifstream in("/proc/cpuinfo");
  std::string line, v;
  bool family = false, model = false;
  while (std::getline(in, line) && line.find_first_not_of(" \t") != std::string::npos) {
    if (m.cpu.empty() && field(line, "model name", v)) m.cpu = v;
    if (!family && field(line, "cpu family", v)) family = true, m.cpu_family = std::atoi(v.c_str());
    if (!model && field(line, "model", v)) model = true, m.cpu_model = std::atoi(v.c_str());
  }
  m.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.blas_core = openblas_string("openblas_get_corename");
  m.blas_config = openblas_string("openblas_get_config");
  return m;
}

nlohmann::json MachineFacts::to_json() const {
  return {{"cpu", cpu},     {"cpu_family", cpu_family}, {"cpu_model", cpu_model},
          {"cores", cores}, {"blas_core", blas_core},   {"blas_config", blas_config}};
}

std::string MachineFacts::summary() const {
  std::string s = cpu.empty() ? "unknown CPU" : cpu;
  if (cpu_family >= 0) s += fmt::format(" (family {}, model {})", cpu_family, cpu_model);
  s += fmt::format(", {} cores", cores);
  if (!blas_core.empty()) s += ", OpenBLAS core " + blas_core;
  return s;
}

}  // namespace seqlab
