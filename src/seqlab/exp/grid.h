// Building blocks for suite definitions: validated configs as JSON, with every default filled in,
// so a cell file says exactly what ran.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace seqlab {

// A model config: `arch` (or a feature-map name), width, depth, heads; positions and KV cache
// sized for max_context. `extra` overrides any field by its JSON key.
nlohmann::json grid_model(const std::string& arch, int64_t d_model, int64_t n_layer,
                          int64_t max_context,
                          const nlohmann::json& extra = nlohmann::json::object());

// A task config training on lengths [min_len, max_len]; `extra` overrides fields by JSON key.
nlohmann::json grid_task(const std::string& task, int64_t min_len, int64_t max_len,
                         const nlohmann::json& extra = nlohmann::json::object());

// A train config; evaluation during training is sparse (suites evaluate at the end).
nlohmann::json grid_train(int64_t steps, int64_t batch, double lr, uint64_t seed);

// A cell spec as the current code reads it: its model, task, train, adapter and convert sections
// go through their config readers, so a field added to a config since the spec was written reads as
// its default and does not make an old spec differ from a new one. A section that does not read as
// its config (another kind of cell) is left as it is.
nlohmann::json normalized_cell(nlohmann::json cell);

}  // namespace seqlab
