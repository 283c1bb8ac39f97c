// The extension module _seqlab, re-exported by python/seqlab/__init__.py as `seqlab`: the error
// contract and the helpers every area shares; each area's classes and functions live in their
// own file (bindings.h).
//
// Errors: the CLI prints "error: <message>" for a seqlab::Error (the first line for a LibTorch
// error); Python gets the same message as seqlab.Error (a ValueError), or FileNotFoundError when
// the file or directory the call names does not exist (on_path in bindings.h). Nothing aborts.
#include "bindings.h"

#include <torch/extension.h>

namespace seqlab::py {

pyb::object to_python(const nlohmann::json& j) {
  return pyb::module_::import("json").attr("loads")(
      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

nlohmann::json to_json(const pyb::handle& o) {
  const std::string s = pyb::str(pyb::module_::import("json").attr("dumps")(o));
  return nlohmann::json::parse(s);
}

nlohmann::json kwargs_json(const pyb::kwargs& kw) {
  nlohmann::json j = nlohmann::json::object();
  for (auto item : kw) {
    // Paths may come as pathlib.Path: their str.
    auto v = item.second;
    if (pyb::isinstance(v, pyb::module_::import("os").attr("PathLike")))
      j[pyb::str(item.first).cast<std::string>()] = pyb::str(v).cast<std::string>();
    else
      j[pyb::str(item.first).cast<std::string>()] = to_json(v);
  }
  return j;
}

void reject_unknown(const nlohmann::json& j, const std::set<std::string>& used,
                    const std::string& function) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!used.count(it.key()))
      throw pyb::type_error(
          fmt::format("{}() got an unexpected keyword argument '{}'", function, it.key()));
}

namespace {

// The first line of a LibTorch error, without its C++ backtrace (as the CLI prints it).
std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

}  // namespace

}  // namespace seqlab::py

PYBIND11_MODULE(_seqlab, m) {
  using namespace seqlab::py;
  m.doc() = "seqlab: sequence models on LibTorch (docs/python.md)";
  m.attr("__version__") = SEQLAB_VERSION;
  // seqlab.Error: every error the library reports about its input (a ValueError).
  static pyb::exception<seqlab::Error> error(m, "Error", PyExc_ValueError);
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const MissingPath& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const seqlab::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const c10::Error& e) {
      PyErr_SetString(error.ptr(), first_line(e.what_without_backtrace()).c_str());
    }
  });
  bind_models(m);
  bind_fast(m);
  bind_tokenizers(m);
  bind_tools(m);
}
