#pragma once
// Checks of a Chrome trace document (chrome_trace.h) shared by the trace layer's tests and the
// CLI's: complete events grouped by thread, and whether each thread's spans nest.

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stoker::testing {

// The "X" events of `doc`, by tid.
inline std::map<int64_t, std::vector<nlohmann::json>> spans_by_thread(const nlohmann::json& doc) {
  std::map<int64_t, std::vector<nlohmann::json>> out;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") out[e.at("tid").get<int64_t>()].push_back(e);
  }
  return out;
}

// The thread names of `doc`'s "thread_name" metadata events, by tid.
inline std::map<int64_t, std::string> thread_names(const nlohmann::json& doc) {
  std::map<int64_t, std::string> out;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      out[e.at("tid").get<int64_t>()] = e.at("args").at("name").get<std::string>();
    }
  }
  return out;
}

// Empty when every thread's spans are well nested (two spans of a thread are disjoint or one
// contains the other, to 1 ns); otherwise the first pair that overlaps.
inline std::string nesting_error(const nlohmann::json& doc) {
  constexpr double kSlackUs = 1e-3;
  for (auto& [tid, spans] : spans_by_thread(doc)) {
    std::sort(spans.begin(), spans.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      const double ta = a.at("ts").get<double>(), tb = b.at("ts").get<double>();
      return ta != tb ? ta < tb : a.at("dur").get<double>() > b.at("dur").get<double>();
    });
    std::vector<const nlohmann::json*> open;
    auto end_of = [](const nlohmann::json& e) {
      return e.at("ts").get<double>() + e.at("dur").get<double>();
    };
    for (const nlohmann::json& span : spans) {
      const double start = span.at("ts").get<double>();
      while (!open.empty() && end_of(*open.back()) <= start + kSlackUs) open.pop_back();
      if (!open.empty() && end_of(span) > end_of(*open.back()) + kSlackUs) {
        return "thread " + std::to_string(tid) + ": " + span.dump() + " overlaps " +
               open.back()->dump();
      }
      open.push_back(&span);
    }
  }
  return {};
}

}  // namespace stoker::testing
