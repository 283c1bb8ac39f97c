// Precompiled header: torch/torch.h is by far the heaviest include in the project.
#pragma once
#include <torch/torch.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
