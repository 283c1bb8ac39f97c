#include "seqlab/core/own_memory.h"

#include <fstream>

namespace seqlab {

int64_t proc_status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    try {
      return std::stoll(line.substr(field.size() + 1));  // "VmHWM:\t  123456 kB"
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

}  // namespace seqlab
