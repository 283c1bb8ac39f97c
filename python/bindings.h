// What the files of the Python module share (python/seqlab_module.cpp registers each area:
// bind_models.cpp, bind_fast.cpp, bind_tokenizers.cpp, bind_tools.cpp). The bindings call the
// library the CLI calls; nothing here decides what a command does.
#pragma once

#include "seqlab/core/error.h"
#include "seqlab/core/fields.h"
#include "seqlab/core/log.h"

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>

namespace seqlab::py {

namespace pyb = pybind11;
// Paths arrive as str or os.PathLike (pybind11/stl/filesystem.h).
using Path = std::filesystem::path;

void bind_models(pyb::module_& m);
void bind_fast(pyb::module_& m);
void bind_tokenizers(pyb::module_& m);
void bind_tools(pyb::module_& m);

// A seqlab::Error about a file or directory that does not exist: raised as FileNotFoundError
// (seqlab_module.cpp translates the exceptions), with the library's message.
class MissingPath : public Error {
 public:
  using Error::Error;
};

// Runs f(); a seqlab::Error it throws while `path` does not exist becomes a MissingPath with the
// same message, so Python sees FileNotFoundError carrying the CLI's `error:` text.
template <class F>
auto on_path(const std::string& path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const MissingPath&) {
    throw;
  } catch (const Error& e) {
    if (!path.empty() && !std::filesystem::exists(path)) throw MissingPath(e.what());
    throw;
  }
}

// Bytes as str, invalid UTF-8 replaced by U+FFFD (bind_tokenizers.cpp).
pyb::str decode_text(const std::string& bytes);

// JSON <-> Python objects (dicts, lists, str, int, float, bool, None), through Python's json.
pyb::object to_python(const nlohmann::json& j);
nlohmann::json to_json(const pyb::handle& o);

// Keyword arguments as the JSON a config's field list reads (keys are the CLI flags with '-' as
// '_': d_feature for --d-feature).
nlohmann::json kwargs_json(const pyb::kwargs& kw);

// Sets a config's fields from the keys of `j` that its field list knows (strict types, messages
// naming `source`), and records those keys in `used`: visit(v) runs the list, e.g.
// [&](auto& v) { cfg.visit(v); }. Fields not in `j` keep their values.
template <class Visit>
void apply_fields(Visit&& visit, const nlohmann::json& j, const std::string& source,
                  std::set<std::string>& used) {
  FromJsonVisitor v{j, source, {}};
  visit(v);
  for (const auto& k : v.known)
    if (j.contains(k)) used.insert(k);
}

// The keys of `j` that no field list took: a TypeError naming the first, as Python does for an
// unexpected keyword argument.
void reject_unknown(const nlohmann::json& j, const std::set<std::string>& used,
                    const std::string& function);

// Runs f() with the library's stderr logging off when `quiet` (as the CLI's -q), then restores it.
template <class F>
auto with_quiet(bool quiet, F&& f) -> decltype(f()) {
  const int saved = log_level();
  struct Restore {
    int level;
    ~Restore() { log_level() = level; }
  } restore{saved};
  if (quiet) log_level() = 0;
  return f();
}

}  // namespace seqlab::py
