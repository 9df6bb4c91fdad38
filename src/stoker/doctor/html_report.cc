// render_html_report: the report page. One file, nothing fetched: the style sheet, the charts
// (SVG) and a few lines of script are inline. The script only lets a click on a legend entry
// hide or show its series; the page reads the same without it (and printed).
#include <fmt/format.h>

#include "stoker/doctor/diagnosis.h"
#include "stoker/doctor/html_text.h"
#include "stoker/doctor/run_report.h"
#include "stoker/doctor/svg_chart.h"

namespace stoker {
namespace {

using report::html_escape;

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       max-width: 960px; margin: 24px auto; padding: 0 16px; line-height: 1.45; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.2em; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
code.command { display: block; background: #f4f4f6; padding: 8px 10px; border-radius: 4px;
               white-space: pre-wrap; word-break: break-all; }
table { border-collapse: collapse; }
table.facts th { text-align: left; font-weight: 600; padding: 3px 18px 3px 0; vertical-align: top; }
table.facts td { padding: 3px 0; }
table.split-legend td, table.split-legend th { padding: 3px 12px 3px 0; text-align: right; }
table.split-legend td:nth-child(2), table.split-legend th:nth-child(2) { text-align: left; }
table.split-legend tr.total td { border-top: 1px solid #ccc; font-weight: 600; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
          vertical-align: -1px; }
.verdict { margin: 20px 0; padding: 14px 18px; border-radius: 6px; border-left: 8px solid #777;
           background: #f2f2f2; }
.verdict .word { font-size: 1.5em; font-weight: 700; }
.verdict p { margin: 6px 0 0; }
.verdict.data-bound { border-color: #d9480f; background: #fff0e6; }
.verdict.transfer-bound { border-color: #7048e8; background: #f1edff; }
.verdict.compute-bound { border-color: #1c7ed6; background: #e7f3ff; }
.verdict.balanced { border-color: #2b8a3e; background: #ebfbee; }
ol.actions li { margin-bottom: 10px; }
ol.actions .action { font-weight: 600; }
ol.actions .gain { color: #2b8a3e; }
svg { display: block; width: 100%; height: auto; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .axis, svg .tick { stroke: #444; stroke-width: 1; }
svg .frame { fill: none; stroke: #ccc; }
svg text { font-size: 12px; fill: #333; }
svg .axis-label { font-size: 13px; }
svg .no-data { font-size: 16px; fill: #888; }
svg .split-label { fill: #fff; font-size: 13px; font-weight: 600; }
.legend { margin: 4px 0 0 78px; font-size: 0.9em; }
.legend .item { margin-right: 16px; cursor: pointer; user-select: none; }
.legend .item.off { opacity: 0.35; }
footer { margin-top: 32px; font-size: 0.8em; color: #888; }
* { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
@media print { body { margin: 0; } section { break-inside: avoid; } }
)";

// Runs first: an error in any later script leaves its message on <html data-report-error>.
constexpr const char* kErrorScript =
    "window.onerror = function (message) {"
    " document.documentElement.setAttribute('data-report-error', String(message)); };";

// A click on a legend entry hides or shows its series; at the end <html data-report-ready="1">
// says the script ran through.
constexpr const char* kScript = R"(
(function () {
  var items = document.querySelectorAll('.legend .item');
  Array.prototype.forEach.call(items, function (item) {
    item.addEventListener('click', function () {
      var chart = document.getElementById(item.getAttribute('data-chart'));
      var series = chart.querySelector('[data-series="' + item.getAttribute('data-series') + '"]');
      if (!series) return;
      var hide = series.style.display !== 'none';
      series.style.display = hide ? 'none' : '';
      item.classList.toggle('off', hide);
    });
  });
  document.documentElement.setAttribute('data-report-ready', '1');
})();
)";

std::string swatch(const char* colour) {
  return fmt::format("<span class=\"swatch\" style=\"background:{}\"></span>", colour);
}

std::string facts_html(const RunReport& r) {
  if (r.facts.empty()) return "";
  std::string html = "<section><h2>Run</h2><table class=\"facts\">";
  for (const auto& [label, value] : r.facts)
    html += "<tr><th>" + html_escape(label) + "</th><td>" + html_escape(value) + "</td></tr>";
  return html + "</table></section>";
}

std::string verdict_html(const RunReport& r) {
  if (r.verdict.empty()) return "";
  const std::string kind = kVerdictNames.find(r.verdict) ? " " + r.verdict : "";
  std::string html =
      "<div class=\"verdict" + kind + "\"><div class=\"word\">" + html_escape(r.verdict) + "</div>";
  if (!r.verdict_reason.empty()) html += "<p>" + html_escape(r.verdict_reason) + "</p>";
  return html + "</div>";
}

// The stacked bar and its legend: each part's ms per step and share.
std::string split_html(const std::vector<ReportSplitPart>& split) {
  if (split.empty()) return "";
  std::string html = "<section><h2>Where a step's time goes</h2>";
  const std::string bar = report::svg_split_bar(split);
  if (bar.empty()) return html + "<p>No time was measured.</p></section>";
  const double total = report::split_total(split);
  html += bar +
          "<table class=\"split-legend\"><tr><th></th><th>part</th><th>ms/step</th>"
          "<th>share</th></tr>";
  for (size_t i = 0; i < split.size(); ++i) {
    const ReportSplitPart& part = split[i];
    const bool timed = report::has_time(part);
    html += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}%</td></tr>",
                        swatch(report::series_colour(i)), html_escape(part.name),
                        timed ? report::milliseconds(part.seconds) : "0",
                        timed ? report::fixed(100 * part.seconds / total, 1) : "0");
  }
  html += fmt::format("<tr class=\"total\"><td></td><td>step</td><td>{}</td><td>100%</td></tr>",
                      report::milliseconds(total));
  return html + "</table></section>";
}

std::string actions_html(const std::vector<ReportAction>& actions) {
  if (actions.empty()) return "";
  std::string html = "<section><h2>What to change</h2><ol class=\"actions\">";
  for (const ReportAction& a : actions) {
    html += "<li><div class=\"action\">" + html_escape(a.action) + "</div>";
    if (!a.why.empty()) html += "<div class=\"why\">Why: " + html_escape(a.why) + "</div>";
    if (!a.expected_gain.empty())
      html += "<div class=\"gain\">Expected gain: " + html_escape(a.expected_gain) + "</div>";
    html += "</li>";
  }
  return html + "</ol></section>";
}

// A chart's section: title, drawing, and a legend whose entries toggle their series.
std::string chart_html(const ReportChart& chart, size_t index) {
  const std::string id = fmt::format("chart-{}", index);
  std::string html = "<section><h2>" + html_escape(chart.title) + "</h2>" +
                     report::svg_line_chart(chart, id) + "<div class=\"legend\">";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    html += fmt::format("<span class=\"item\" data-chart=\"{}\" data-series=\"{}\">{} {}</span>",
                        id, i, swatch(report::series_colour(i)), html_escape(chart.series[i].name));
  }
  return html + "</div></section>";
}

}  // namespace

std::string render_html_report(const RunReport& r) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  html += "<title>" + html_escape(r.title) + "</title>";
  html += std::string("<script>") + kErrorScript + "</script>";
  html += std::string("<style>") + kStyle + "</style></head><body>";
  html += "<h1>" + html_escape(r.title) + "</h1>";
  if (!r.command.empty()) html += "<code class=\"command\">" + html_escape(r.command) + "</code>";
  html += verdict_html(r);
  html += facts_html(r);
  html += split_html(r.split);
  html += actions_html(r.actions);
  for (size_t i = 0; i < r.charts.size(); ++i) html += chart_html(r.charts[i], i);
  html += std::string("<footer>") + kReportPageMark +
          " report.json beside this page holds the same data.</footer>";
  html += std::string("<script>") + kScript + "</script></body></html>\n";
  return html;
}

}  // namespace stoker
