// The report page as a browser shows it: Debian's Chromium, headless, renders a realistic
// report; its screenshot must show the page (not a blank one) and its scripts must have run
// without an error. Fails, never skips, without `chromium` (scripts/setup.sh installs it).
#include <gtest/gtest.h>
#include <spng.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>

#include "stoker/doctor/run_report.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/util/atomic_file.h"
#include "stoker/util/subprocess.h"

namespace stoker::test {
namespace {

using stoker::testing::TempDir;

constexpr int kWidth = 1200;
constexpr int kHeight = 1600;

// A doctor's report as it would be for a data-bound run, with the charts' edge cases: a
// series with a non-finite value, a chart of one point.
RunReport realistic_report() {
  RunReport r;
  r.title = "stoker doctor";
  r.command = "stoker doctor --data data/fashion-mnist --workers 1 --sample-cost-us 200";
  r.facts = {{"machine", "2 cores, 7.8 GB"},
             {"data", "data/fashion-mnist (60000 samples)"},
             {"model", "mlp (109386 parameters)"},
             {"batch", "64"},
             {"workers", "1"},
             {"device", "cpu"}};
  r.verdict = "data-bound";
  r.verdict_reason =
      "The training loop waited for the loader 78% of each step (12.8 ms of 16.4 ms); the "
      "loader alone delivers 5100 samples/s, the model alone trains 29000 samples/s.";
  r.split = {{"data wait", 0.0128},
             {"host to device", 0.0004},
             {"forward", 0.0011},
             {"backward", 0.0016},
             {"optimizer", 0.0005}};
  r.actions = {{"--workers 2", "one worker is busy 99% of the time; 2 cores", "about 1.9x"},
               {"--prefetch 8", "the queue is empty at 94% of the steps", "up to 5%"},
               {"store images as uint8 and normalise on the device", "4x fewer bytes", "small"}};
  ReportChart throughput{"Throughput over time", "seconds since start", "samples/s", {}};
  ReportSeries loop{"training loop", {}}, loader{"loader alone", {}};
  for (int i = 0; i < 120; ++i) {
    const double t = 0.25 * i;
    loop.points.push_back({t, 3900 + 250 * std::sin(i * 0.7) + (i < 4 ? -2000 : 0)});
    loader.points.push_back({t, 5100 + 120 * std::cos(i * 0.3)});
  }
  loop.points[50].y = std::nan("");
  throughput.series = {loop, loader};
  ReportChart loss{"Loss",
                   "epoch",
                   "loss per sample",
                   {{"train", {{1, 0.52}, {2, 0.38}, {3, 0.34}, {4, 0.31}, {5, 0.29}}},
                    {"test", {{1, 0.44}, {2, 0.40}, {3, 0.37}, {4, 0.36}, {5, 0.35}}}}};
  ReportChart accuracy{"Test accuracy", "epoch", "accuracy", {{"test", {{1, 0.842}}}}};
  r.charts = {throughput, loss, accuracy};
  return r;
}

// `chromium --headless` on `page` with `extra` arguments, a fresh profile and HOME in `tmp`, at
// most a minute; stdout and stderr.
ProcessResult run_chromium(const TempDir& tmp, const std::string& page,
                           const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {
      "env",
      "HOME=" + tmp / "home",
      "timeout",
      "-k",
      "5",
      "60",
      "chromium",
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--user-data-dir=" + tmp / "profile",
      "--window-size=" + std::to_string(kWidth) + "," + std::to_string(kHeight)};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("file://" + page);
  Result<ProcessResult> run = run_process(argv);
  if (!run.is_ok()) ADD_FAILURE() << run.status().message();
  ProcessResult result = run.is_ok() ? std::move(run).value() : ProcessResult{};
  EXPECT_NE(result.exit_code, 127) << "chromium not found: scripts/setup.sh installs it";
  EXPECT_NE(result.exit_code, 124) << "chromium did not finish within 60 s";
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result;
}

// The page's DOM after its scripts ran, and the console lines Chromium logged.
struct LoadedPage {
  std::string dom;
  std::string console;
};

LoadedPage load(const TempDir& tmp, const std::string& page) {
  const ProcessResult r =
      run_chromium(tmp, page, {"--dump-dom", "--enable-logging=stderr", "--v=0"});
  LoadedPage loaded{r.out, ""};
  size_t start = 0;
  while (start < r.err.size()) {
    size_t end = r.err.find('\n', start);
    if (end == std::string::npos) end = r.err.size();
    const std::string line = r.err.substr(start, end - start);
    if (line.find(":CONSOLE") != std::string::npos) loaded.console += line + "\n";
    start = end + 1;
  }
  return loaded;
}

// The <html ...> start tag of a dumped DOM, where the page's scripts leave their marks.
std::string html_tag(const std::string& dom) {
  const size_t at = dom.find("<html");
  if (at == std::string::npos) return "";
  return dom.substr(at, dom.find('>', at) - at + 1);
}

struct Rgba {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;
};

Rgba decode_png(const std::string& bytes) {
  Rgba image;
  std::unique_ptr<spng_ctx, void (*)(spng_ctx*)> ctx(spng_ctx_new(0), spng_ctx_free);
  spng_ihdr ihdr{};
  size_t size = 0;
  if (spng_set_png_buffer(ctx.get(), bytes.data(), bytes.size()) != 0 ||
      spng_get_ihdr(ctx.get(), &ihdr) != 0 ||
      spng_decoded_image_size(ctx.get(), SPNG_FMT_RGBA8, &size) != 0) {
    ADD_FAILURE() << "the screenshot is not a PNG";
    return image;
  }
  image.pixels.resize(size);
  if (spng_decode_image(ctx.get(), image.pixels.data(), size, SPNG_FMT_RGBA8, 0) != 0) {
    ADD_FAILURE() << "the screenshot does not decode";
    return image;
  }
  image.width = static_cast<int>(ihdr.width);
  image.height = static_cast<int>(ihdr.height);
  return image;
}

// Pixels within 3 levels of #rrggbb in each channel.
int64_t pixels_near(const Rgba& image, uint32_t rgb) {
  int64_t n = 0;
  for (size_t i = 0; i + 3 < image.pixels.size(); i += 4) {
    const int r = image.pixels[i], g = image.pixels[i + 1], b = image.pixels[i + 2];
    if (std::abs(r - static_cast<int>(rgb >> 16)) <= 3 &&
        std::abs(g - static_cast<int>((rgb >> 8) & 0xff)) <= 3 &&
        std::abs(b - static_cast<int>(rgb & 0xff)) <= 3)
      ++n;
  }
  return n;
}

TEST(ReportChromiumTest, ScreenshotShowsThePage) {
  TempDir tmp;
  ASSERT_TRUE(write_report(realistic_report(), tmp / "report").is_ok());
  const std::string shot = tmp / "shot.png";
  run_chromium(tmp, tmp / "report/index.html", {"--screenshot=" + shot});
  Result<std::string> bytes = read_file(shot);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message();
  const Rgba image = decode_png(bytes.value());
  ASSERT_EQ(image.width, kWidth);
  ASSERT_EQ(image.height, kHeight);
  int64_t not_white = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 3 < image.pixels.size(); i += 4) {
    const uint32_t rgb = image.pixels[i] << 16 | image.pixels[i + 1] << 8 | image.pixels[i + 2];
    colours.insert(rgb);
    if (rgb != 0xffffff) ++not_white;
  }
  const double total = static_cast<double>(kWidth) * kHeight;
  EXPECT_GT(not_white / total, 0.03) << "mostly blank";
  EXPECT_GT(colours.size(), 100u) << "too few colours for text, charts and the banner";
  // The verdict banner's background, and the split bar's first three parts.
  EXPECT_GT(pixels_near(image, 0xfff0e6), 20000) << "no data-bound banner";
  for (uint32_t part : {0x1f77b4u, 0xff7f0eu, 0x2ca02cu})
    EXPECT_GT(pixels_near(image, part), 300) << std::hex << part;
}

TEST(ReportChromiumTest, ScriptsRunWithoutErrors) {
  TempDir tmp;
  ASSERT_TRUE(write_report(realistic_report(), tmp / "report").is_ok());
  const LoadedPage page = load(tmp, tmp / "report/index.html");
  const std::string tag = html_tag(page.dom);
  EXPECT_NE(tag.find("data-report-ready=\"1\""), std::string::npos) << tag;
  EXPECT_EQ(tag.find("data-report-error"), std::string::npos) << tag;
  EXPECT_EQ(page.console, "");
  EXPECT_NE(page.dom.find("data-bound"), std::string::npos);
}

// The check above can fail: a page whose script throws is caught by it.
TEST(ReportChromiumTest, AScriptErrorIsSeen) {
  TempDir tmp;
  std::string html = render_html_report(realistic_report());
  html.insert(html.rfind("</body>"), "<script>no_such_function();</script>");
  ASSERT_TRUE(write_file_atomically(tmp / "broken.html", html).is_ok());
  const LoadedPage page = load(tmp, tmp / "broken.html");
  EXPECT_NE(html_tag(page.dom).find("data-report-error=\"Uncaught ReferenceError"),
            std::string::npos)
      << html_tag(page.dom);
  EXPECT_NE(page.console.find("no_such_function"), std::string::npos) << page.console;
}

}  // namespace
}  // namespace stoker::test
