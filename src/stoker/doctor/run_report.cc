#include "stoker/doctor/run_report.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "stoker/util/atomic_file.h"

namespace stoker {
namespace {

constexpr const char* kPageName = "index.html";
constexpr const char* kDataName = "report.json";

// A non-finite number as null (JSON has no NaN or infinity).
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nullptr; }

// `dir`, created if it is not there (its parent must be); an existing path must be a directory.
Status make_report_dir(const std::string& dir) {
  if (dir.empty()) return invalid_argument("report directory: empty path");
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (std::filesystem::exists(status)) {
    if (!std::filesystem::is_directory(status))
      return invalid_argument(dir + ": not a directory (the report is written into one)");
    return Status::ok();
  }
  if (::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST) return Status::ok();
  const std::string why = std::strerror(errno);
  if (errno != ENOENT) return io_error("cannot create report directory " + dir + ": " + why);
  std::filesystem::path path(dir);
  if (!path.has_filename()) path = path.parent_path();  // "a/b/" names a/b
  return io_error("cannot create report directory " + dir + ": no such directory " +
                  path.parent_path().string());
}

// Whether `text` is a file of a report stoker wrote, named `name`.
bool written_by_stoker(const std::string& name, const std::string& text) {
  if (name == kPageName) return text.find(kReportPageMark) != std::string::npos;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() && j.contains("title") && j.contains("command") && j.contains("charts");
}

// Ok if `dir`'s file `name` is not there or is a report stoker wrote, which a new one may
// replace; kInvalidArgument naming it otherwise (a user's page is never overwritten).
Status check_replaceable(const std::string& dir, const char* name) {
  const std::string path = (std::filesystem::path(dir) / name).string();
  if (!std::filesystem::is_regular_file(path)) return Status::ok();  // AtomicFile checks the rest
  const Result<std::string> text = read_file(path);
  if (text.is_ok() && written_by_stoker(name, text.value())) return Status::ok();
  return invalid_argument(path +
                          ": not a report stoker wrote, so it is kept: give another directory, "
                          "or move the file");
}

}  // namespace

std::string run_report_json(const RunReport& r) {
  nlohmann::json facts = nlohmann::json::array();
  for (const auto& [label, value] : r.facts) facts.push_back({label, value});
  nlohmann::json split = nlohmann::json::array();
  for (const ReportSplitPart& part : r.split)
    split.push_back({{"name", part.name}, {"seconds", number(part.seconds)}});
  nlohmann::json actions = nlohmann::json::array();
  for (const ReportAction& a : r.actions)
    actions.push_back({{"action", a.action}, {"why", a.why}, {"expected_gain", a.expected_gain}});
  nlohmann::json charts = nlohmann::json::array();
  for (const ReportChart& chart : r.charts) {
    nlohmann::json series = nlohmann::json::array();
    for (const ReportSeries& s : chart.series) {
      nlohmann::json points = nlohmann::json::array();
      for (const ReportPoint& p : s.points) points.push_back({number(p.x), number(p.y)});
      series.push_back({{"name", s.name}, {"points", std::move(points)}});
    }
    charts.push_back({{"title", chart.title},
                      {"x_label", chart.x_label},
                      {"y_label", chart.y_label},
                      {"series", std::move(series)}});
  }
  const nlohmann::json doc = {{"title", r.title},
                              {"command", r.command},
                              {"facts", std::move(facts)},
                              {"verdict", r.verdict},
                              {"verdict_reason", r.verdict_reason},
                              {"split", std::move(split)},
                              {"actions", std::move(actions)},
                              {"charts", std::move(charts)}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Status write_report(const RunReport& report, const std::string& dir) {
  STOKER_RETURN_IF_ERROR(make_report_dir(dir));
  for (const char* name : {kPageName, kDataName})
    STOKER_RETURN_IF_ERROR(check_replaceable(dir, name));
  const std::filesystem::path base(dir);
  STOKER_RETURN_IF_ERROR(
      write_file_atomically((base / kDataName).string(), run_report_json(report)));
  return write_file_atomically((base / kPageName).string(), render_html_report(report));
}

std::vector<std::string> report_file_names() { return {kPageName, kDataName}; }

Status check_report_dir(const std::string& dir) {
  STOKER_RETURN_IF_ERROR(make_report_dir(dir));
  for (const char* name : {kPageName, kDataName}) {
    STOKER_RETURN_IF_ERROR(check_replaceable(dir, name));
    // The temporary is removed when `file` goes: nothing is left behind.
    Result<AtomicFile> file = AtomicFile::create((std::filesystem::path(dir) / name).string());
    if (!file.is_ok()) return file.status();
  }
  return Status::ok();
}

}  // namespace stoker
