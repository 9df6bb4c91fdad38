#include "stoker/doctor/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "stoker/doctor/report_samples.h"

namespace stoker::test {
namespace {

using report::nice_axis;
using report::svg_line_chart;
using report::svg_split_bar;

// The values of attribute `name` on every `element` of `svg`, in order.
std::vector<double> attribute_values(const std::string& svg, const std::string& element,
                                     const std::string& name) {
  std::vector<double> values;
  const std::regex pattern("<" + element + "[^>]* " + name + "=\"([-0-9.e]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pattern);
       it != std::sregex_iterator(); ++it)
    values.push_back(std::stod((*it)[1].str()));
  return values;
}

// The step is 1, 2 or 5 times a power of ten.
bool round_step(double step) {
  const double f = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  return std::fabs(f - 1) < 1e-9 || std::fabs(f - 2) < 1e-9 || std::fabs(f - 5) < 1e-9;
}

TEST(NiceAxisTest, CoversTheRangeWithRoundSteps) {
  const std::vector<std::pair<double, double>> ranges = {
      {0, 1}, {0.13, 0.91}, {-3, 17}, {1234, 98765}, {0.0001, 0.0003}, {-5e6, -1e6}, {2.5, 2.6}};
  for (const auto& [min, max] : ranges) {
    const report::NiceAxis axis = nice_axis(min, max);
    EXPECT_LE(axis.lo, min) << min << ".." << max;
    EXPECT_GE(axis.hi, max) << min << ".." << max;
    EXPECT_TRUE(round_step(axis.step)) << axis.step;
    const double ticks = (axis.hi - axis.lo) / axis.step;
    EXPECT_GE(ticks, 2) << min << ".." << max;
    EXPECT_LE(ticks, 12) << min << ".." << max;
    EXPECT_NEAR(ticks, std::round(ticks), 1e-6);
  }
}

TEST(NiceAxisTest, OneValueGetsARangeAroundIt) {
  for (double v : {0.0, 1.0, -250.0, 1e-9, 3e12}) {
    const report::NiceAxis axis = nice_axis(v, v);
    EXPECT_LT(axis.lo, v);
    EXPECT_GT(axis.hi, v);
    EXPECT_GT(axis.step, 0);
  }
}

TEST(NiceAxisTest, WholeTicksForWholeValues) {
  report::NiceAxis axis = nice_axis(1, 3, 5, true);
  EXPECT_EQ(axis.lo, 1);
  EXPECT_EQ(axis.hi, 3);
  EXPECT_EQ(axis.step, 1);
  axis = nice_axis(1, 1, 5, true);
  EXPECT_EQ(axis.lo, 0);
  EXPECT_EQ(axis.hi, 2);
  EXPECT_EQ(axis.step, 1);
  EXPECT_EQ(nice_axis(1, 100, 5, true).step, nice_axis(1, 100).step);
}

ReportChart chart_of(std::vector<ReportSeries> series) {
  return ReportChart{"loss", "epoch", "loss per sample", std::move(series)};
}

TEST(LineChartTest, PointsLieInThePlotInOrder) {
  const ReportChart chart = chart_of(
      {{"train", {{1, 0.9}, {2, 0.5}, {3, 0.4}, {4, 0.35}}}, {"test", {{1, 1.0}, {4, 0.6}}}});
  const std::string svg = svg_line_chart(chart, "c0");
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 6u);
  const std::vector<double> cx = attribute_values(svg, "circle", "cx");
  const std::vector<double> cy = attribute_values(svg, "circle", "cy");
  ASSERT_EQ(cx.size(), 6u);
  for (size_t i = 0; i < cx.size(); ++i) {
    EXPECT_GE(cx[i], 78);
    EXPECT_LE(cx[i], 840);
    EXPECT_GE(cy[i], 16);
    EXPECT_LE(cy[i], 268);
  }
  // x grows to the right, a smaller loss is drawn lower on the page (larger y).
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_GT(cx[i], cx[i - 1]);
    EXPECT_GT(cy[i], cy[i - 1]);
  }
  EXPECT_DOUBLE_EQ(cx[0], cx[4]);  // both series start at epoch 1
  EXPECT_LT(cy[4], cy[0]);         // test loss 1.0 above train loss 0.9
  EXPECT_NE(svg.find(">epoch</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss per sample</text>"), std::string::npos);
  EXPECT_GE(count(svg, "class=\"tick-label\""), 6u);
}

// The text of every tick label, in order (x axis first).
std::vector<std::string> tick_labels(const std::string& svg) {
  std::vector<std::string> labels;
  const std::regex pattern("class=\"tick-label\"[^>]*>([^<]*)<");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pattern);
       it != std::sregex_iterator(); ++it)
    labels.push_back((*it)[1].str());
  return labels;
}

TEST(LineChartTest, TickLabelsAreShort) {
  // x 0..2 s in steps of 0.5; y 3.5M..5.5M samples/s in steps of 0.5M.
  const std::string svg =
      svg_line_chart(chart_of({{"rate", {{0.05, 3.6e6}, {1.0, 3.5e6}, {2.0, 5.4e6}}}}), "c");
  EXPECT_EQ(tick_labels(svg), (std::vector<std::string>{"0.0", "0.5", "1.0", "1.5", "2.0", "3.5M",
                                                        "4.0M", "4.5M", "5.0M", "5.5M"}));
  const std::string thousands =
      svg_line_chart(chart_of({{"rate", {{1, 0}, {2, 40000}, {3, 61000}}}}), "c");
  EXPECT_EQ(tick_labels(thousands),
            (std::vector<std::string>{"1", "2", "3", "0", "20k", "40k", "60k", "80k"}));
}

TEST(LineChartTest, NoPointsSaysNoData) {
  for (const ReportChart& chart :
       {chart_of({}), chart_of({{"empty", {}}}),
        chart_of({{"nan", {{std::nan(""), 1}, {2, std::numeric_limits<double>::infinity()}}}})}) {
    const std::string svg = svg_line_chart(chart, "c");
    EXPECT_NE(svg.find("no data"), std::string::npos);
    EXPECT_EQ(count(svg, "<polyline"), 0u);
    EXPECT_EQ(count(svg, "<circle"), 0u);
  }
}

TEST(LineChartTest, OnePointIsAMarker) {
  const std::string svg = svg_line_chart(chart_of({{"accuracy", {{1, 0.83}}}}), "c");
  EXPECT_EQ(count(svg, "<polyline"), 0u);
  EXPECT_EQ(count(svg, "<circle"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(LineChartTest, NonFinitePointsAreSkipped) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  const std::string svg = svg_line_chart(
      chart_of({{"rate", {{0, 10}, {1, nan}, {2, 12}, {inf, 3}, {3, -inf}, {4, 11}}}}), "c");
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // The y axis spans the finite values only: 10..12, not 3 or infinity.
  for (double y : attribute_values(svg, "circle", "cy")) {
    EXPECT_GE(y, 16);
    EXPECT_LE(y, 268);
  }
}

TEST(LineChartTest, AllEqualValuesAreDrawnMidway) {
  const std::string svg = svg_line_chart(chart_of({{"flat", {{0, 5}, {1, 5}, {2, 5}}}}), "c");
  const std::vector<double> cy = attribute_values(svg, "circle", "cy");
  ASSERT_EQ(cy.size(), 3u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  for (double y : cy) {
    EXPECT_DOUBLE_EQ(y, cy[0]);
    EXPECT_GT(y, 16);
    EXPECT_LT(y, 268);
  }
}

TEST(LineChartTest, ManyPointsAreALineWithoutMarkers) {
  ReportSeries series{"rate", {}};
  for (int i = 0; i < 500; ++i) series.points.push_back({i * 0.1, 1000.0 + i % 7});
  const std::string svg = svg_line_chart(chart_of({series}), "c");
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  EXPECT_EQ(count(svg, "<circle"), 0u);
}

TEST(SplitBarTest, PartsAreAsWideAsTheirShare) {
  const std::string svg = svg_split_bar({{"data wait", 0.030}, {"h2d", 0.0}, {"compute", 0.010}});
  const std::vector<double> widths = attribute_values(svg, "rect", "width");
  ASSERT_EQ(widths.size(), 2u);  // the empty part is left out
  EXPECT_NEAR(widths[0], 0.75 * 860, 0.01);
  EXPECT_NEAR(widths[1], 0.25 * 860, 0.01);
  const std::vector<double> xs = attribute_values(svg, "rect", "x");
  EXPECT_NEAR(xs[1], widths[0], 0.01);
  EXPECT_NE(svg.find("data wait: 30.0 ms (75.0%)"), std::string::npos);
}

TEST(SplitBarTest, NoTimeIsNoBar) {
  EXPECT_EQ(svg_split_bar({}), "");
  EXPECT_EQ(svg_split_bar({{"a", 0}, {"b", -1}, {"c", std::nan("")}}), "");
  const std::string svg =
      svg_split_bar({{"a", std::numeric_limits<double>::infinity()}, {"b", 0.002}});
  EXPECT_EQ(attribute_values(svg, "rect", "width"), std::vector<double>{860});
}

}  // namespace
}  // namespace stoker::test
