#include "stoker/util/param_json.h"

#include <optional>

namespace stoker {
namespace {

// A bound as JSON: null when there is none, an integer for an integer parameter.
nlohmann::ordered_json bound_json(const ParamSpec& p, const std::optional<double>& bound) {
  if (!bound) return nlohmann::ordered_json();
  return p.type == ParamType::kInt ? nlohmann::ordered_json(static_cast<int64_t>(*bound))
                                   : nlohmann::ordered_json(*bound);
}

}  // namespace

nlohmann::ordered_json to_json(const ParamValue& value) {
  return std::visit([](const auto& v) { return nlohmann::ordered_json(v); }, value);
}

nlohmann::ordered_json to_json(const ParamSpec& p) {
  return {{"name", p.name},
          {"type", to_string(p.type)},
          {"default", to_json(p.default_value)},
          {"doc", p.doc},
          {"min", bound_json(p, p.min)},
          {"max", bound_json(p, p.max)},
          {"min_open", p.min_open},
          {"min_count", p.min_count},
          {"max_count", p.max_count == ParamSpec::kAnyCount ? nlohmann::ordered_json()
                                                            : nlohmann::ordered_json(p.max_count)},
          {"choices", p.choices}};
}

nlohmann::ordered_json to_json(const std::vector<ParamSpec>& specs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ParamSpec& p : specs) out.push_back(to_json(p));
  return out;
}

}  // namespace stoker
