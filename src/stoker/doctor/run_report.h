#pragma once
// RunReport: what a run measured, for people — the command, facts about the machine, data and
// model, a verdict on the bottleneck with the numbers behind it, the step-time split, actions,
// and charts (throughput over time, loss, accuracy). `stoker train`, `stoker bench loader` and
// `stoker doctor` fill one and write it with --report DIR: DIR/index.html, one self-contained
// page (inline CSS, SVG and a few lines of JS; nothing fetched), and DIR/report.json, the same
// data. Plain values; the functions are thread-safe (they share no state).

#include <string>
#include <utility>
#include <vector>

#include "stoker/util/status.h"

namespace stoker {

// One part of the step-time split, in seconds per step.
struct ReportSplitPart {
  std::string name;
  double seconds = 0;
};

// A change to make: what, why (the measurement behind it), and what it should gain.
struct ReportAction {
  std::string action;
  std::string why;
  std::string expected_gain;
};

// One point of a chart's series. Non-finite coordinates are skipped when drawn.
struct ReportPoint {
  double x = 0;
  double y = 0;
};

struct ReportSeries {
  std::string name;
  std::vector<ReportPoint> points;
};

// A line chart: one line per series over shared axes.
struct ReportChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ReportSeries> series;
};

struct RunReport {
  std::string title;    // "stoker doctor", "stoker train", "stoker bench loader"
  std::string command;  // the command line as run
  // Label, value (machine, data, model, workers, ...), shown in this order.
  std::vector<std::pair<std::string, std::string>> facts;
  // "" (none) or data-bound / transfer-bound / compute-bound / balanced.
  std::string verdict;
  std::string verdict_reason;          // the numbers behind it, one or two sentences
  std::vector<ReportSplitPart> split;  // the step-time split (may be empty)
  std::vector<ReportAction> actions;   // may be empty
  std::vector<ReportChart> charts;     // throughput over time, loss, accuracy, ...
};

// The report as one JSON document (report.json): the fields above under their names, facts as
// [label, value] pairs, points as [x, y] pairs (a non-finite number is null). Invalid UTF-8 in
// a text is replaced, never thrown.
std::string run_report_json(const RunReport& report);

// What every page render_html_report() writes holds (its footer's first words) and a page
// stoker did not write lacks: how write_report() knows an index.html it may replace.
inline constexpr const char* kReportPageMark = "Written by stoker.";

// Renders `report` as one self-contained HTML page (inline CSS, inline SVG, small inline JS
// at most; nothing fetched: no external URL at all in the page). Every text is HTML-escaped.
std::string render_html_report(const RunReport& report);

// The files write_report() writes in its directory: index.html, report.json.
std::vector<std::string> report_file_names();

// Creates `dir` if needed (not its parent: a missing parent is an error, as for any output
// file) and writes dir/index.html crash-safely (AtomicFile) plus dir/report.json (the same data
// as JSON). Replaces only files of a report stoker wrote (the page with kReportPageMark,
// report.json with a report's keys): a user's index.html or report.json there is
// kInvalidArgument, kept as it is. A Status naming the path on failure.
Status write_report(const RunReport& report, const std::string& dir);

// Whether write_report() can write into `dir`, checked before a run so that it fails before any
// work: creates `dir` if needed (its parent must exist), then checks that the files there are
// a report's and creates and discards both files' temporaries. kInvalidArgument if `dir` (or a
// file's path in it) is not a directory (not a regular file) or holds a file of the report's
// name that stoker did not write, kIoError if it cannot be created or written; the message
// names it.
Status check_report_dir(const std::string& dir);

}  // namespace stoker
