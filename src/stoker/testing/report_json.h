#pragma once
// Test helpers for the report a run wrote with --report DIR (stoker/doctor/run_report.h).

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "stoker/util/atomic_file.h"

namespace stoker::testing {

// DIR/report.json, parsed; throws if it cannot be read.
inline nlohmann::json read_report(const std::string& dir) {
  return nlohmann::json::parse(read_file(dir + "/report.json").value_or_throw());
}

// A report's facts as a map, label to value.
inline std::map<std::string, std::string> report_facts(const nlohmann::json& report) {
  std::map<std::string, std::string> facts;
  for (const nlohmann::json& fact : report.at("facts")) facts[fact.at(0)] = fact.at(1);
  return facts;
}

}  // namespace stoker::testing
