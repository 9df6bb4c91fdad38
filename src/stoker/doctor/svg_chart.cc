#include "stoker/doctor/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stoker/doctor/html_text.h"

namespace stoker::report {
namespace {

// The line chart's canvas and plot area, in SVG units.
constexpr double kChartWidth = 860;
constexpr double kChartHeight = 320;
constexpr double kPlotLeft = 78;
constexpr double kPlotRight = kChartWidth - 20;
constexpr double kPlotTop = 16;
constexpr double kPlotBottom = kChartHeight - 52;
// Series with at most this many points get a marker on every point (one point is a marker).
constexpr size_t kMaxMarkedPoints = 60;

constexpr double kBarWidth = 860;
constexpr double kBarHeight = 48;

// 1, 2, 5 or 10 times a power of ten near `x` (> 0): rounded, or the next one up.
double nice_number(double x, bool round) {
  const double power = std::pow(10.0, std::floor(std::log10(x)));
  const double f = x / power;
  double nice;
  if (round)
    nice = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else
    nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nice * power;
}

// A tick's label on `axis`: as many decimals as the step needs; thousands as "k" and millions
// as "M" on an axis that reaches 10,000 or a million (so that labels stay short).
std::string tick_label(double value, const NiceAxis& axis) {
  const double reach = std::max(std::fabs(axis.lo), std::fabs(axis.hi));
  if (axis.step < 1e-6 || reach >= 1e12) return fmt::format("{:g}", value);
  const double unit = reach >= 1e6 ? 1e6 : reach >= 1e4 ? 1e3 : 1;
  const char* suffix = unit == 1e6 ? "M" : unit == 1e3 ? "k" : "";
  const double step = axis.step / unit;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return value == 0 && unit > 1 ? "0" : fixed(value / unit, decimals) + suffix;
}

// The finite points of a series, in order.
std::vector<ReportPoint> finite_points(const ReportSeries& series) {
  std::vector<ReportPoint> points;
  for (const ReportPoint& p : series.points)
    if (std::isfinite(p.x) && std::isfinite(p.y)) points.push_back(p);
  return points;
}

// Maps data coordinates onto the plot area.
struct Scale {
  NiceAxis x;
  NiceAxis y;
  double px(double v) const {
    return kPlotLeft + (v - x.lo) / (x.hi - x.lo) * (kPlotRight - kPlotLeft);
  }
  double py(double v) const {
    return kPlotBottom - (v - y.lo) / (y.hi - y.lo) * (kPlotBottom - kPlotTop);
  }
};

// The values of an axis's ticks, lo to hi.
std::vector<double> tick_values(const NiceAxis& axis) {
  std::vector<double> values;
  const int steps = static_cast<int>(std::lround((axis.hi - axis.lo) / axis.step));
  for (int i = 0; i <= steps; ++i) values.push_back(axis.lo + i * axis.step);
  return values;
}

// Grid lines, tick marks and labels of both axes, the axes and their titles.
std::string axes(const ReportChart& chart, const Scale& s) {
  std::string svg;
  for (double v : tick_values(s.x)) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{2}\" x2=\"{0:.1f}\" y2=\"{3}\"/>"
        "<text class=\"tick-label\" x=\"{0:.1f}\" y=\"{4}\" text-anchor=\"middle\">{5}</text>",
        s.px(v), kPlotTop, kPlotBottom, kPlotBottom + 5, kPlotBottom + 19,
        html_escape(tick_label(v, s.x)));
  }
  for (double v : tick_values(s.y)) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>"
        "<line class=\"tick\" x1=\"{3}\" y1=\"{0:.1f}\" x2=\"{1}\" y2=\"{0:.1f}\"/>"
        "<text class=\"tick-label\" x=\"{4}\" y=\"{5:.1f}\" text-anchor=\"end\">{6}</text>",
        s.py(v), kPlotLeft, kPlotRight, kPlotLeft - 5, kPlotLeft - 8, s.py(v) + 4,
        html_escape(tick_label(v, s.y)));
  }
  svg += fmt::format(
      "<line class=\"axis\" x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\"/>"
      "<line class=\"axis\" x1=\"{0}\" y1=\"{3}\" x2=\"{0}\" y2=\"{2}\"/>",
      kPlotLeft, kPlotRight, kPlotBottom, kPlotTop);
  svg += fmt::format(
      "<text class=\"axis-label\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
      (kPlotLeft + kPlotRight) / 2, kChartHeight - 8, html_escape(chart.x_label));
  svg += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(16 {:.1f}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      (kPlotTop + kPlotBottom) / 2, html_escape(chart.y_label));
  return svg;
}

// One series: its line and, when it has few points, a marker (with a tooltip) on each.
std::string series_svg(const ReportSeries& series, const std::vector<ReportPoint>& points,
                       size_t index, const Scale& s) {
  const char* colour = series_colour(index);
  std::string svg = fmt::format("<g class=\"series\" data-series=\"{}\">", index);
  if (points.size() > 1) {
    std::string coordinates;
    for (const ReportPoint& p : points)
      coordinates += fmt::format("{:.1f},{:.1f} ", s.px(p.x), s.py(p.y));
    coordinates.pop_back();
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
                       colour, coordinates);
  }
  if (points.size() <= kMaxMarkedPoints) {
    for (const ReportPoint& p : points) {
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{}: {:g}, {:g}"
          "</title></circle>",
          s.px(p.x), s.py(p.y), colour, html_escape(series.name), p.x, p.y);
    }
  }
  return svg + "</g>";
}

}  // namespace

NiceAxis nice_axis(double min, double max, int ticks, bool whole) {
  if (!(max > min)) {  // one value: a range around it
    const double pad = min == 0 || whole ? 1 : std::fabs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const double range = nice_number(max - min, false);
  const double step =
      std::max(whole ? 1.0 : 0.0, nice_number(range / std::max(1, ticks - 1), true));
  const NiceAxis axis{std::floor(min / step) * step, std::ceil(max / step) * step, step};
  // Values too large for their spread to show in a double: one step over the whole range.
  if (!(axis.hi > axis.lo) || (axis.hi - axis.lo) / step > 4 * ticks) return {min, max, max - min};
  return axis;
}

const char* series_colour(size_t index) {
  static const char* const kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  return kColours[index % (sizeof(kColours) / sizeof(kColours[0]))];
}

std::string svg_line_chart(const ReportChart& chart, const std::string& id) {
  std::string svg = fmt::format(
      "<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
      html_escape(id), kChartWidth, kChartHeight, html_escape(chart.title));
  std::vector<std::vector<ReportPoint>> points;
  double x_min = INFINITY, x_max = -INFINITY, y_min = INFINITY, y_max = -INFINITY;
  bool whole_x = true;
  for (const ReportSeries& series : chart.series) {
    points.push_back(finite_points(series));
    for (const ReportPoint& p : points.back()) {
      whole_x = whole_x && p.x == std::round(p.x);
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y);
      y_max = std::max(y_max, p.y);
    }
  }
  // No finite point anywhere, or a spread no double holds.
  if (!std::isfinite(x_max - x_min) || !std::isfinite(y_max - y_min)) {
    svg += fmt::format(
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>"
        "<text class=\"no-data\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no data</text>",
        kPlotLeft, kPlotTop, kPlotRight - kPlotLeft, kPlotBottom - kPlotTop,
        (kPlotLeft + kPlotRight) / 2, (kPlotTop + kPlotBottom) / 2);
    return svg + "</svg>";
  }
  const Scale scale{nice_axis(x_min, x_max, 5, whole_x), nice_axis(y_min, y_max)};
  svg += axes(chart, scale);
  for (size_t i = 0; i < chart.series.size(); ++i)
    svg += series_svg(chart.series[i], points[i], i, scale);
  return svg + "</svg>";
}

bool has_time(const ReportSplitPart& part) {
  return std::isfinite(part.seconds) && part.seconds > 0;
}

double split_total(const std::vector<ReportSplitPart>& split) {
  double total = 0;
  for (const ReportSplitPart& part : split)
    if (has_time(part)) total += part.seconds;
  return total;
}

std::string svg_split_bar(const std::vector<ReportSplitPart>& split) {
  const double total = split_total(split);
  if (!(total > 0)) return "";
  std::string svg = fmt::format(
      "<svg class=\"split\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"step-time split\">",
      kBarWidth, kBarHeight);
  double x = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    const ReportSplitPart& part = split[i];
    if (!has_time(part)) continue;
    const double width = part.seconds / total * kBarWidth;
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"0\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"><title>{}: {} ms "
        "({}%)</title></rect>",
        x, width, kBarHeight, series_colour(i), html_escape(part.name), milliseconds(part.seconds),
        fixed(100 * part.seconds / total, 1));
    if (width >= 48) {
      svg += fmt::format(
          "<text class=\"split-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}%</text>",
          x + width / 2, kBarHeight / 2 + 5, fixed(100 * part.seconds / total, 0));
    }
    x += width;
  }
  return svg + "</svg>";
}

}  // namespace stoker::report
