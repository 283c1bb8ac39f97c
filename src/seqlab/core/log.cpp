#include "seqlab/core/log.h"

namespace seqlab {

int& log_level() {
  static int level = 1;
  return level;
}

}  // namespace seqlab
