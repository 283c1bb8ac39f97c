// seqlab.load(dir) -> Model: SeqModel's parallel form (forward -> logits) and recurrent form
// (init_state / step over a State), its parameters as the very tensors the model computes with
// (torch.Tensor objects over the same storage, trainable with torch.optim), and save.
#include "bindings.h"

#include "seqlab/model/model_dir.h"
#include "seqlab/model/model_task.h"
#include "seqlab/text/tokenizer.h"

#include <torch/extension.h>

namespace seqlab::py {

namespace {

struct Model {
  LoadedModel lm;
  std::string dir;
};

struct State {
  ModelState s;
  int64_t batch = 1;
};

// Token ids as an int64 tensor: a torch.Tensor of int64 passes through as it is (no copy), another
// integer dtype is converted, a (nested) list of ints becomes a tensor.
torch::Tensor as_ids(const pyb::handle& o, const char* what) {
  torch::Tensor t;
  if (THPVariable_Check(o.ptr())) {
    t = THPVariable_Unpack(o.ptr());
  } else {
    try {
      t = torch::tensor(o.cast<std::vector<int64_t>>(), torch::kLong);
    } catch (const pyb::cast_error&) {
      try {
        const auto rows = o.cast<std::vector<std::vector<int64_t>>>();
        std::vector<torch::Tensor> ts;
        for (const auto& r : rows) ts.push_back(torch::tensor(r, torch::kLong));
        SEQLAB_CHECK(!ts.empty(), "{}: no token ids", what);
        for (const auto& r : ts)
          SEQLAB_CHECK(r.size(0) == ts[0].size(0), "{}: rows of different lengths", what);
        t = torch::stack(ts);
      } catch (const pyb::cast_error&) {
        throw pyb::type_error(
            fmt::format("{}: expected a torch.Tensor or a list of token ids", what));
      }
    }
  }
  SEQLAB_CHECK(!t.is_floating_point() && !t.is_complex() && t.scalar_type() != torch::kBool,
               "{}: token ids must be integers, got {}", what, c10::toString(t.scalar_type()));
  return t.scalar_type() == torch::kLong ? t : t.to(torch::kLong);
}

void check_range(const torch::Tensor& ids, int64_t V, const char* what) {
  if (ids.numel() == 0) return;
  const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
  SEQLAB_CHECK(lo >= 0 && hi < V, "{}: token {} is outside the vocabulary [0, {})", what,
               lo < 0 ? lo : hi, V);
}

torch::Tensor forward(Model& m, const pyb::object& ids_in) {
  auto ids = as_ids(ids_in, "forward");
  SEQLAB_CHECK(ids.dim() == 1 || ids.dim() == 2, "forward: ids must be [T] or [B,T], got {} dims",
               ids.dim());
  check_range(ids, m.lm.config.vocab_size, "forward");
  const bool single = ids.dim() == 1;
  torch::Tensor out;
  {
    pyb::gil_scoped_release release;
    out = m.lm.model->forward(single ? ids.unsqueeze(0) : ids);
  }
  return single ? out.squeeze(0) : out;
}

torch::Tensor step(Model& m, const pyb::object& tokens_in, State& st) {
  const bool scalar = pyb::isinstance<pyb::int_>(tokens_in);
  auto tokens =
      scalar ? torch::tensor({tokens_in.cast<int64_t>()}, torch::kLong) : as_ids(tokens_in, "step");
  SEQLAB_CHECK(tokens.dim() == 1 && tokens.size(0) == st.batch,
               "step: expected {} token(s), one per sequence of the state, got shape {}", st.batch,
               c10::str(tokens.sizes()));
  check_range(tokens, m.lm.config.vocab_size, "step");
  torch::Tensor out;
  {
    pyb::gil_scoped_release release;
    out = m.lm.model->step(tokens, st.s);
  }
  return scalar ? out.squeeze(0) : out;
}

// The state's tensors by name, "layers.<l>.<name>" (MixerState::for_each), shared, not copied.
pyb::dict state_tensors(State& st) {
  pyb::dict d;
  for (size_t l = 0; l < st.s.layers.size(); ++l)
    st.s.layers[l]->for_each([&](const std::string& name, torch::Tensor& t) {
      if (t.defined()) d[pyb::str(fmt::format("layers.{}.{}", l, name))] = t;
    });
  return d;
}

pyb::dict named_tensors(torch::nn::Module& m, bool parameters) {
  pyb::dict d;
  if (parameters)
    for (auto& p : m.named_parameters()) d[pyb::str(p.key())] = p.value();
  else
    for (auto& b : m.named_buffers()) d[pyb::str(b.key())] = b.value();
  return d;
}

void save(Model& m, const Path& out_path) {
  const std::string out = out_path.string();
  nlohmann::json sections = m.lm.sections.is_object() ? m.lm.sections : nlohmann::json::object();
  sections.erase("adapters");  // save_model_dir describes the saved model's adapters itself
  pyb::gil_scoped_release release;
  save_model_dir(out, *m.lm.model, sections);
}

}  // namespace

void bind_models(pyb::module_& m) {
  pyb::class_<State, std::shared_ptr<State>>(
      m, "State", "the recurrent state of a Model (every layer's state and the position)")
      .def_property_readonly("pos", [](const State& s) { return s.s.pos; })
      .def_property_readonly("batch", [](const State& s) { return s.batch; })
      .def(
          "clone",
          [](const State& s) {
            return std::make_shared<State>(State{s.s.clone(), s.batch});
          },
          "a deep copy (branch a generation)")
      .def("tensors", &state_tensors,
           "the state's tensors by name, 'layers.<l>.<name>' (shared with the state, not copied)");

  pyb::class_<Model>(m, "Model", "a model directory loaded with seqlab.load (SeqModel)")
      .def("forward", &forward, pyb::arg("ids"),
           "token ids [T] or [B,T] (torch.Tensor or list) -> logits [T,V] or [B,T,V] (lm head); "
           "autograd records it unless torch.no_grad() is active")
      .def("__call__", &forward, pyb::arg("ids"))
      .def(
          "init_state",
          [](Model& md, int64_t batch) {
            SEQLAB_CHECK(batch >= 1, "init_state: batch must be >= 1, got {}", batch);
            return std::make_shared<State>(State{md.lm.model->init_state(batch), batch});
          },
          pyb::arg("batch") = 1)
      .def("step", &step, pyb::arg("tokens"), pyb::arg("state"),
           "one token per sequence (an int, or [B]) -> next-token logits [V] or [B,V]; advances "
           "the state")
      .def(
          "named_parameters", [](Model& md) { return named_tensors(*md.lm.model, true); },
          "every parameter by its stable name (the model's own tensors: training them in "
          "Python trains the model)")
      .def("parameters", [](Model& md) { return md.lm.model->parameters(); })
      .def("named_buffers", [](Model& md) { return named_tensors(*md.lm.model, false); })
      .def(
          "train", [](Model& md, bool on) { md.lm.model->train(on); }, pyb::arg("mode") = true)
      .def("eval", [](Model& md) { md.lm.model->eval(); })
      .def("save", &save, pyb::arg("out"),
           "write the model directory `out` (config.json with this model's sections, "
           "model.safetensors)")
      .def_property_readonly("dir", [](const Model& md) { return md.dir; })
      .def_property_readonly("config",
                             [](const Model& md) { return to_python(md.lm.config.to_json()); })
      .def_property_readonly("sections", [](const Model& md) { return to_python(md.lm.sections); })
      .def_property_readonly("vocab_size", [](const Model& md) { return md.lm.config.vocab_size; })
      .def_property_readonly(
          "tokenizer",
          [](const Model& md) -> pyb::object {
            std::shared_ptr<Tokenizer> tok = model_tokenizer(md.lm, md.dir);
            if (!tok) return pyb::none();
            return pyb::cast(tok);
          },
          "the model's tokenizer (its lm task's), or None");

  m.def(
      "load",
      [](const Path& path) {
        const std::string dir = path.string();
        auto lm = on_path(dir, [&] { return load_model_dir(dir); });
        return Model{std::move(lm), dir};
      },
      pyb::arg("dir"), "load a model directory (config.json + model.safetensors), in eval mode");
  m.def(
      "_data_ptr",
      [](const torch::Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()); },
      "the tensor's data pointer as the C++ side sees it (tests check that nothing is copied)");
}

}  // namespace seqlab::py
