// seqlab.Tokenizer(spec): every tokenizer seqlab reads (text/tokenizer.h: byte, gpt2, bpe:<dir>,
// hf:<tokenizer.json>, or a directory holding either), with encode / decode. Text crosses as
// UTF-8; decode gives str with invalid bytes replaced (U+FFFD) and decode_bytes the exact bytes.
#include "bindings.h"

#include "seqlab/text/tokenizer.h"

#include <torch/extension.h>

namespace seqlab::py {

namespace {

// str (encoded as UTF-8) or bytes, as the tokenizer's input bytes.
std::string text_bytes(const pyb::handle& o) {
  if (pyb::isinstance<pyb::bytes>(o)) return o.cast<std::string>();
  if (pyb::isinstance<pyb::str>(o)) return o.cast<std::string>();
  throw pyb::type_error("expected str or bytes");
}

std::shared_ptr<Tokenizer> make(const std::string& spec) {
  // A spec naming a path ("bpe:<dir>", "hf:<file>", "<dir>/..."): FileNotFoundError when it is
  // absent; an unknown name is a seqlab.Error.
  std::string path = spec.find('/') == std::string::npos ? "" : spec;
  for (const char* prefix : {"bpe:", "hf:"})
    if (spec.rfind(prefix, 0) == 0) path = spec.substr(std::string(prefix).size());
  return on_path(path, [&] { return std::shared_ptr<Tokenizer>(make_tokenizer(spec)); });
}

}  // namespace

pyb::str decode_text(const std::string& bytes) {
  return pyb::reinterpret_steal<pyb::str>(
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "replace"));
}

void bind_tokenizers(pyb::module_& m) {
  pyb::class_<Tokenizer, std::shared_ptr<Tokenizer>>(
      m, "Tokenizer",
      "text <-> token ids: Tokenizer('byte'), Tokenizer('gpt2'), Tokenizer('bpe:<dir>'), "
      "Tokenizer('hf:<tokenizer.json>') or Tokenizer('<dir>'), as the CLI's --tokenizer")
      .def(pyb::init(&make), pyb::arg("spec"))
      .def(
          "encode",
          [](const Tokenizer& t, const pyb::object& text) {
            const auto s = text_bytes(text);
            pyb::gil_scoped_release release;
            return t.encode(s);
          },
          pyb::arg("text"),
          "ids of a prompt (str as UTF-8, or bytes): an HF tokenizer's added tokens and "
          "template apply")
      .def(
          "encode_plain",
          [](const Tokenizer& t, const pyb::object& text) {
            const auto s = text_bytes(text);
            pyb::gil_scoped_release release;
            return t.encode_plain(s);
          },
          pyb::arg("text"), "ids of corpus text: no template, special-token strings are text")
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int64_t>& ids) {
            return decode_text(t.decode(ids));
          },
          pyb::arg("ids"), "the text of ids (bytes that are not UTF-8 become U+FFFD)")
      .def(
          "decode_bytes",
          [](const Tokenizer& t, const std::vector<int64_t>& ids) {
            return pyb::bytes(t.decode(ids));
          },
          pyb::arg("ids"), "the exact bytes of ids")
      .def_property_readonly("spec", &Tokenizer::spec)
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
      .def_property_readonly("eos_id", &Tokenizer::eos_id)
      .def("__repr__", [](const Tokenizer& t) { return "seqlab.Tokenizer('" + t.spec() + "')"; });
}

}  // namespace seqlab::py
