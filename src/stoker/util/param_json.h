#pragma once
// ParamSpecs and values as JSON, the one form Python and the docs read a schema in
// (`stoker._stoker.operations()`, `sources()`): {"name", "type", "default", "doc", "min", "max",
// "min_open", "min_count", "max_count", "choices"}, a missing bound or count null.

#include <nlohmann/json.hpp>
#include <vector>

#include "stoker/util/param_spec.h"

namespace stoker {

nlohmann::ordered_json to_json(const ParamValue& value);
nlohmann::ordered_json to_json(const ParamSpec& spec);
nlohmann::ordered_json to_json(const std::vector<ParamSpec>& specs);

}  // namespace stoker
