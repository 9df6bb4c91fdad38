#include <gtest/gtest.h>

#include <cmath>

#include "stoker/doctor/report_samples.h"
#include "stoker/doctor/run_report.h"

namespace stoker::test {
namespace {

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(HtmlReportTest, ShowsEveryPart) {
  const std::string html = render_html_report(sample_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(has(html, "<title>stoker doctor</title>"));
  EXPECT_TRUE(has(html, "stoker doctor --data /data/fmnist --workers 1"));
  EXPECT_TRUE(has(html, "<tr><th>model</th><td>mlp</td></tr>"));
  EXPECT_TRUE(has(html, "<div class=\"verdict data-bound\"><div class=\"word\">data-bound</div>"));
  EXPECT_TRUE(has(html, "The device waited for data 71% of the step."));
  // The split's legend: ms per step and share of each part, and the step's total.
  EXPECT_TRUE(has(html, "<td>data wait</td><td>30.0</td><td>75.0%</td>"));
  EXPECT_TRUE(has(html, "<td>h2d</td><td>0</td><td>0%</td>"));
  EXPECT_TRUE(has(html, "<td>compute</td><td>10.0</td><td>25.0%</td>"));
  EXPECT_TRUE(has(html, "<td>step</td><td>40.0</td><td>100%</td>"));
  // Actions in order; an action without reason or gain shows neither heading.
  const size_t first = html.find("--workers 4");
  ASSERT_NE(first, std::string::npos);
  EXPECT_LT(first, html.find("--uint8"));
  EXPECT_TRUE(has(html, "Why: one worker is busy 100% of the time"));
  EXPECT_TRUE(has(html, "Expected gain: about 2.5x"));
  EXPECT_EQ(count(html, "Expected gain:"), 1u);
  EXPECT_EQ(count(html, "class=\"chart\""), 2u);
  EXPECT_EQ(count(html, "<svg class=\"split\""), 1u);
  // Legend entries name their chart and series for the script.
  EXPECT_TRUE(has(html, "data-chart=\"chart-1\" data-series=\"1\""));
}

TEST(HtmlReportTest, FetchesNothing) {
  const std::string html = render_html_report(sample_report());
  for (const char* outside : {"http:", "https:", "//", "src=", "href=", "url(", "@import"})
    EXPECT_FALSE(has(html, outside)) << outside;
}

TEST(HtmlReportTest, EveryTextIsEscaped) {
  const std::string evil = "<script>alert('x')</script>&\"";
  RunReport r;
  r.title = r.command = r.verdict = r.verdict_reason = evil;
  r.facts = {{evil, evil}};
  r.split = {{evil, 0.5}};
  r.actions = {{evil, evil, evil}};
  r.charts = {{evil, evil, evil, {{evil, {{1, 2}, {2, 3}}}}}};
  const std::string html = render_html_report(r);
  EXPECT_FALSE(has(html, "<script>alert"));
  EXPECT_FALSE(has(html, "alert('x')"));
  EXPECT_TRUE(has(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
  EXPECT_EQ(count(html, "<script>"), 2u);  // the page's own two
  // An unknown verdict is shown, but never becomes a class name.
  EXPECT_TRUE(has(html, "<div class=\"verdict\">"));
}

TEST(HtmlReportTest, LeavesOutWhatIsEmpty) {
  RunReport r;
  r.title = "stoker train";
  const std::string html = render_html_report(r);
  EXPECT_FALSE(has(html, "class=\"verdict"));
  EXPECT_FALSE(has(html, "<svg"));
  EXPECT_FALSE(has(html, "<ol"));
  EXPECT_FALSE(has(html, "<table"));
  EXPECT_TRUE(has(html, "data-report-ready"));  // the script is there all the same
}

TEST(HtmlReportTest, SplitWithoutTimeSaysSo) {
  RunReport r;
  r.split = {{"data wait", 0}, {"compute", std::nan("")}};
  const std::string html = render_html_report(r);
  EXPECT_TRUE(has(html, "No time was measured."));
  EXPECT_FALSE(has(html, "<svg"));
}

}  // namespace
}  // namespace stoker::test
