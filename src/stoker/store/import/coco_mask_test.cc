// COCO's masks against pycocotools itself (STOKER_PYTHON): random polygons (inside, across and
// outside the image, repeated points, several to a mask), plain counts and compact strings
// give pycocotools' pixels; malformed ones are refused in one line.
#include "stoker/store/import/coco_mask.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/testing/temp_dir.h"
#include "stoker/util/rng.h"

namespace stoker {
namespace {

// For each case {"h", "w", "polygons"} or {"h", "w", "counts"}: pycocotools' mask, as
// frPyObjects + merge + decode give it (row-major bytes as a list), and its compact string.
constexpr const char* kCocoScript = R"(
import json, sys
import numpy as np
from pycocotools import mask as M
cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    h, w = c["h"], c["w"]
    if "polygons" in c:
        rle = M.merge(M.frPyObjects(c["polygons"], h, w))
    else:
        rle = M.frPyObjects({"counts": c["counts"], "size": [h, w]}, h, w)
    pixels = M.decode(rle)
    out.append({"pixels": pixels.reshape(-1).tolist(), "string": rle["counts"].decode()})
json.dump(out, open(sys.argv[2], "w"))
)";

nlohmann::json pycocotools_masks(const nlohmann::json& cases) {
  testing::TempDir dir;
  std::ofstream(dir / "coco.py") << kCocoScript;
  std::ofstream(dir / "cases.json") << cases.dump();
  const std::string command = std::string(STOKER_PYTHON) + " " + (dir / "coco.py") + " " +
                              (dir / "cases.json") + " " + (dir / "out.json");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return nlohmann::json::parse(std::ifstream(dir / "out.json"));
}

// Random polygons on an h × w image: points mostly near it (some outside, some repeated, some
// on half and whole pixels), 3 to 9 points, 1 to 3 polygons.
nlohmann::json random_cases(int n) {
  nlohmann::json cases = nlohmann::json::array();
  CounterRng rng(49, 1);
  for (int i = 0; i < n; ++i) {
    const int64_t h = 1 + static_cast<int64_t>(rng.uniform_below(40));
    const int64_t w = 1 + static_cast<int64_t>(rng.uniform_below(40));
    nlohmann::json polygons = nlohmann::json::array();
    const int count = 1 + static_cast<int>(rng.uniform_below(3));
    for (int p = 0; p < count; ++p) {
      std::vector<double> xy;
      const int points = 3 + static_cast<int>(rng.uniform_below(7));
      for (int k = 0; k < points; ++k) {
        if (k > 0 && rng.uniform_below(6) == 0) {  // a repeated point: a zero-length edge
          xy.push_back(xy[xy.size() - 2]);
          xy.push_back(xy[xy.size() - 2]);
          continue;
        }
        for (const int64_t side : {w, h}) {
          double c = (rng.next_double() * 1.4 - 0.2) * static_cast<double>(side);
          if (rng.uniform_below(4) == 0) c = std::round(c * 2) / 2;  // on a half pixel
          xy.push_back(c);
        }
      }
      polygons.push_back(xy);
    }
    cases.push_back({{"h", h}, {"w", w}, {"polygons", polygons}});
  }
  return cases;
}

std::vector<int> painted(const std::vector<RunLengthMask>& masks) {
  std::vector<uint8_t> pixels(masks[0].height * masks[0].width, 0);
  for (const RunLengthMask& mask : masks) paint_mask(mask, pixels.data());
  return {pixels.begin(), pixels.end()};
}

TEST(CocoMaskTest, PolygonsGivePycocotoolsPixels) {
  const nlohmann::json cases = random_cases(300);
  const nlohmann::json expected = pycocotools_masks(cases);
  ASSERT_EQ(expected.size(), cases.size());
  int nonempty = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const int64_t h = cases[i]["h"], w = cases[i]["w"];
    std::vector<RunLengthMask> masks;
    for (const auto& polygon : cases[i]["polygons"]) {
      const auto xy = polygon.get<std::vector<double>>();
      masks.push_back(mask_from_polygon(xy, h, w).value());
    }
    const std::vector<int> pixels = painted(masks);
    ASSERT_EQ(pixels, expected[i]["pixels"].get<std::vector<int>>()) << cases[i].dump();
    nonempty += std::count(pixels.begin(), pixels.end(), 1) > 0;
    // The compact string pycocotools wrote reads back to the same pixels.
    const RunLengthMask read =
        mask_from_string(expected[i]["string"].get<std::string>(), h, w).value();
    ASSERT_EQ(painted({read}), pixels) << cases[i].dump();
  }
  EXPECT_GT(nonempty, 200);  // the cases are not mostly empty masks
}

TEST(CocoMaskTest, PlainCountsGivePycocotoolsPixels) {
  nlohmann::json cases = nlohmann::json::array();
  CounterRng rng(49, 2);
  for (int i = 0; i < 100; ++i) {
    const int64_t h = 1 + static_cast<int64_t>(rng.uniform_below(30));
    const int64_t w = 1 + static_cast<int64_t>(rng.uniform_below(30));
    std::vector<int64_t> counts;
    int64_t left = h * w;
    while (left > 0) {
      const int64_t run = std::min<int64_t>(left, static_cast<int64_t>(rng.uniform_below(h * 3)));
      counts.push_back(run);  // runs of 0 included
      left -= run;
    }
    cases.push_back({{"h", h}, {"w", w}, {"counts", counts}});
  }
  const nlohmann::json expected = pycocotools_masks(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    const int64_t h = cases[i]["h"], w = cases[i]["w"];
    const auto counts = cases[i]["counts"].get<std::vector<int64_t>>();
    const RunLengthMask mask = mask_from_counts(counts, h, w).value();
    EXPECT_EQ(painted({mask}), expected[i]["pixels"].get<std::vector<int>>()) << cases[i].dump();
    const RunLengthMask read =
        mask_from_string(expected[i]["string"].get<std::string>(), h, w).value();
    EXPECT_EQ(painted({read}), painted({mask})) << cases[i].dump();
  }
}

std::string refusal(const Result<RunLengthMask>& result) {
  return result.is_ok() ? "accepted" : result.status().message();
}

TEST(CocoMaskTest, MalformedInputIsOneLine) {
  const std::vector<double> two_points = {1, 1, 5, 5};
  EXPECT_EQ(refusal(mask_from_polygon(two_points, 10, 10)),
            "a polygon is at least 3 points, x and y each, not 4 coordinates");
  const std::vector<double> odd = {1, 1, 5, 5, 3};
  EXPECT_EQ(refusal(mask_from_polygon(odd, 10, 10)),
            "a polygon is at least 3 points, x and y each, not 5 coordinates");
  const std::vector<double> not_a_number = {1, 1, 5, std::nan(""), 3, 3};
  EXPECT_EQ(refusal(mask_from_polygon(not_a_number, 10, 10)),
            "polygon coordinate nan is not a number within ±1048576");
  const std::vector<double> far = {1, 1, 5e9, 5, 3, 3};
  EXPECT_NE(refusal(mask_from_polygon(far, 10, 10)).find("not a number within"), std::string::npos);
  const std::vector<double> triangle = {1, 1, 5, 5, 1, 5};
  EXPECT_EQ(refusal(mask_from_polygon(triangle, 0, 10)),
            "mask size 0x10 is not at least 1x1 and under 2147483648 pixels");
  EXPECT_EQ(refusal(mask_from_polygon(triangle, 1 << 16, 1 << 16)),
            "mask size 65536x65536 is not at least 1x1 and under 2147483648 pixels");

  const std::vector<int64_t> short_counts = {3, 4};
  EXPECT_EQ(refusal(mask_from_counts(short_counts, 3, 3)),
            "run-length counts sum to 7, not 3x3 = 9 pixels");
  const std::vector<int64_t> negative = {12, -3};
  EXPECT_EQ(refusal(mask_from_counts(negative, 3, 3)), "run-length count -3 is not in [0, 2^32)");

  EXPECT_EQ(refusal(mask_from_string("9", 3, 3)), "accepted");  // one run of 9 zeros
  EXPECT_EQ(refusal(mask_from_string("8", 3, 3)), "run-length counts sum to 8, not 3x3 = 9 pixels");
  EXPECT_EQ(refusal(mask_from_string("9 ", 3, 3)),
            "run-length string has byte 0x20 at 1, not one of '0' to 'o'");
  EXPECT_EQ(refusal(mask_from_string("P", 3, 3)), "run-length string ends inside a count");
  EXPECT_EQ(refusal(mask_from_string("PPPPPPP1", 3, 3)),
            "run-length string has a count of more than 7 characters at 7");
  // "3" then "0" then a count of -1 (0x1f with its sign bit): 3 - 1 is fine, but a first count
  // may not be negative.
  EXPECT_EQ(refusal(mask_from_string("O", 3, 3)),
            "run-length string's count 0 is -1, not in [0, 2^32)");
}

}  // namespace
}  // namespace stoker
