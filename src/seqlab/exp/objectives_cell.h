// Kept for tools/cmd_objectives.cpp (`seqlab pretrain`): the objectives cell lives in
// exp/cells/objectives.h, with run_objectives.
#pragma once

#include "seqlab/exp/cells/objectives.h"
