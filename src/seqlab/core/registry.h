// Registry<Entry>: the storage behind seqlab's self-registering name tables (architectures,
// feature maps). Entries are created by name from static registrars in the files that own them,
// possibly in several halves from several files (whichever half registers first creates the
// entry), and are kept sorted by (order, name) for listings.
//
// Entry needs `std::string name` and `int order`. Registration happens during static
// initialisation, single-threaded, before main(); after that the registry is only read, which is
// safe from any thread.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

// A unique name for a registrar object: SEQLAB_REGISTRY_NAME(arch_) -> arch_<line>.
#define SEQLAB_REGISTRY_CONCAT2(a, b) a##b
#define SEQLAB_REGISTRY_CONCAT(a, b) SEQLAB_REGISTRY_CONCAT2(a, b)
#define SEQLAB_REGISTRY_NAME(prefix) SEQLAB_REGISTRY_CONCAT(prefix, __LINE__)

namespace seqlab {

template <class Entry>
class Registry {
 public:
  // The one registry of this entry type (a function-local static, so it exists before any
  // registrar in any translation unit runs).
  static Registry& instance() {
    static Registry r;
    return r;
  }
  // The entry named `name`, created empty when it does not exist yet.
  Entry& slot(const std::string& name) {
    for (auto& e : entries_)
      if (e.name == name) return e;
    entries_.push_back(Entry{});
    entries_.back().name = name;
    return entries_.back();
  }
  // Call after changing an entry's order.
  void sort() {
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return a.order != b.order ? a.order < b.order : a.name < b.name;
    });
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(const std::string& name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  // "a, b, c": the names, for error messages.
  std::string names() const {
    std::string out;
    for (const auto& e : entries_) out += (out.empty() ? "" : ", ") + e.name;
    return out;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace seqlab
