#pragma once
// The report's drawings as inline SVG (no xmlns or any other URL: HTML needs none): a line
// chart with axes, ticks and labels, and the step-time split as one horizontal stacked bar.
// Stateless.

#include <string>
#include <vector>

#include "stoker/doctor/run_report.h"

namespace stoker::report {

// An axis range with round tick marks: lo, lo + step, ..., hi.
struct NiceAxis {
  double lo = 0;
  double hi = 1;
  double step = 1;
};

// Round ticks (1, 2 or 5 times a power of ten) covering [min, max] in about `ticks` steps. An
// empty range (min == max) is widened around its value; `min` and `max` must be finite.
// `whole`: ticks on whole numbers only (epochs).
NiceAxis nice_axis(double min, double max, int ticks = 5, bool whole = false);

// The colour of series (or split part) `index`, as "#rrggbb"; repeats after a few.
const char* series_colour(size_t index);

// `chart` as an <svg> element with id `id`: a polyline (and a marker per point when there are
// few) per series in a <g data-series="k">, non-finite points skipped; "no data" when no series
// has a finite point. A single x or y value gets a widened axis; whole x values, whole ticks.
std::string svg_line_chart(const ReportChart& chart, const std::string& id);

// Whether a split part has time to show: finite and positive seconds.
bool has_time(const ReportSplitPart& part);

// The seconds of the parts that have time: the whole step.
double split_total(const std::vector<ReportSplitPart>& split);

// The split as a stacked bar (<svg>), each part as wide as its share of the step; parts with
// no time (zero, negative or non-finite seconds) are left out. Empty when no part has time.
std::string svg_split_bar(const std::vector<ReportSplitPart>& split);

}  // namespace stoker::report
