// timm_random_erasing against timm's own RandomErasing (STOKER_PYTHON): each sample's draws
// (timm_random_erasing.h) handed to timm's _erase (random.random / randint / uniform answer
// with stoker's outcomes, _get_pixels with stoker's normal values), on the same float images:
// bit for bit, over every mode, counts 1 to 4, several areas, aspects and probabilities; the
// parameters it refuses.
#include "stoker/pipeline/ops/timm_random_erasing.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stoker/pipeline/op_registry.h"
#include "stoker/testing/pil_reference.h"
#include "stoker/testing/reference_python.h"
#include "stoker/testing/temp_dir.h"

namespace stoker {
namespace {

// Reads argv[1]/jobs.json and each job's float32 input I.in; writes the results to out.
constexpr const char* kTimmErasingScript = R"(
import json, sys
import numpy as np
import torch
from timm.data import random_erasing as R
d = sys.argv[1]

class Draws:  # timm's `random`, answering with stoker's outcomes
    def random(self): return self.randoms.pop(0)
    def randint(self, a, b):
        v = self.ints.pop(0)
        assert a <= v <= b, (a, v, b)
        return v
    def uniform(self, a, b): return self.uniforms.pop(0)

draws = Draws()
R.random = draws
fills = []
R._get_pixels = lambda per_pixel, rand_color, size, dtype, device: fills.pop(0)
with open(d + "/out", "wb") as out:
    for k, job in enumerate(json.load(open(d + "/jobs.json"))):
        shape = job["shape"]
        image = torch.from_numpy(np.fromfile(f"{d}/{k}.in", dtype=np.float32).reshape(shape))
        e = R.RandomErasing(device="cpu", **job["params"])
        draws.randoms = [0.0 if job["erased"] else 1.0]
        draws.ints = ([job["count"]] if job["erased"] and e.min_count != e.max_count else []) + \
            job["places"]
        draws.uniforms = job["uniforms"]
        fills[:] = [torch.tensor(f, dtype=torch.float32).reshape(s) for f, s in job["fills"]]
        e(image)
        assert not draws.ints and not draws.uniforms and not fills, job
        out.write(image.numpy().tobytes())
)";

TEST(TimmRandomErasingTest, IsTimmsForTheSameDraws) {
  struct Case {
    nlohmann::json params;  // timm's keywords, also stoker's
  };
  const std::vector<Case> cases = {
      {{{"probability", 1.0}, {"mode", "const"}}},
      {{{"probability", 0.5}, {"mode", "rand"}, {"max_count", 3}}},
      {{{"probability", 0.9}, {"mode", "pixel"}, {"min_count", 2}, {"max_count", 4}}},
      {{{"probability", 1.0},
        {"mode", "pixel"},
        {"min_area", 0.1},
        {"max_area", 0.9},
        {"min_aspect", 0.5},
        {"max_aspect", 4.0}}},
      {{{"probability", 0.25}, {"mode", "const"}, {"min_count", 3}}},
  };
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 24, 24}, {3, 17, 31}, {1, 9, 5}, {3, 2, 2}, {3, 40, 12}};
  nlohmann::json jobs = nlohmann::json::array();
  std::vector<std::vector<float>> inputs, mine;
  size_t erased = 0, boxes = 0;
  for (const Case& c : cases) {
    std::vector<std::pair<std::string, ParamValue>> given;
    for (const auto& [key, value] : c.params.items()) {
      if (value.is_string()) {
        given.emplace_back(key, value.get<std::string>());
      } else if (value.is_number_integer()) {
        given.emplace_back(key, value.get<int64_t>());
      } else {
        given.emplace_back(key, value.get<double>());
      }
    }
    const OpCall call = make_op_call("timm_random_erasing", given).value();
    for (int64_t i = 0; i < 60; ++i) {
      const std::vector<int64_t>& shape = shapes[static_cast<size_t>(i) % shapes.size()];
      const auto op = call.op->make_float(call.params, {"image", shape}).value();
      std::vector<float> image(static_cast<size_t>(shape[0] * shape[1] * shape[2]));
      CounterRng noise(static_cast<uint64_t>(i), 3);
      for (float& v : image) v = noise.next_float() * 4.0f - 2.0f;
      inputs.push_back(image);
      const SampleInput sample = pil_reference::op_sample(i);
      ASSERT_TRUE(op->apply(sample, image.data()).is_ok());
      mine.push_back(std::move(image));
      // The same draws, as timm's calls answer them.
      ops::TimmErasing e;
      e.probability = call.params.real("probability");
      e.min_area = call.params.real("min_area");
      e.max_area = call.params.real("max_area");
      e.min_aspect = call.params.real("min_aspect");
      e.max_aspect =
          call.params.real("max_aspect") == 0 ? 1.0 / e.min_aspect : call.params.real("max_aspect");
      e.mode = call.params.choice("mode");
      e.min_count = call.params.integer("min_count");
      e.max_count =
          call.params.integer("max_count") == 0 ? e.min_count : call.params.integer("max_count");
      CounterRng rng = sample.rng();
      const ops::TimmEraseDraw draw = ops::draw_timm_erasing(rng, e, shape[0], shape[1], shape[2]);
      erased += draw.erased;
      nlohmann::json uniforms = nlohmann::json::array(), places = nlohmann::json::array(),
                     fills = nlohmann::json::array();
      for (const ops::TimmEraseAttempt& a : draw.attempts) {
        uniforms.push_back(a.area);
        uniforms.push_back(a.log_aspect);
        if (!a.box.found) continue;
        ++boxes;
        places.push_back(a.box.top);
        places.push_back(a.box.left);
        std::vector<float> fill = a.values;
        std::vector<int64_t> fill_shape = {shape[0], a.box.height, a.box.width};
        if (e.mode != "pixel") fill_shape = {shape[0], 1, 1};
        if (e.mode == "const") fill.assign(static_cast<size_t>(shape[0]), 0.0f);
        fills.push_back({fill, fill_shape});
      }
      nlohmann::json params = c.params;
      jobs.push_back({{"shape", shape},
                      {"params", params},
                      {"erased", draw.erased},
                      {"count", draw.count},
                      {"places", places},
                      {"uniforms", uniforms},
                      {"fills", fills}});
    }
  }
  testing::TempDir dir;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::ofstream(dir / (std::to_string(k) + ".in"), std::ios::binary)
        .write(reinterpret_cast<const char*>(inputs[k].data()),
               static_cast<std::streamsize>(inputs[k].size() * sizeof(float)));
  }
  std::ofstream(dir / "jobs.json") << jobs.dump();
  std::ofstream(dir / "timm_erasing.py") << kTimmErasingScript;
  const std::string command =
      stoker::testing::reference_python() + " " + (dir / "timm_erasing.py") + " " + dir.path();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dir / "out", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = 0, changed = 0;
  int failures = 0;
  for (size_t k = 0; k < mine.size(); ++k) {
    const size_t bytes = mine[k].size() * sizeof(float);
    ASSERT_LE(at + bytes, all.size());
    std::vector<float> want(mine[k].size());
    std::memcpy(want.data(), all.data() + at, bytes);
    at += bytes;
    changed += want != inputs[k];
    if (want != mine[k] && ++failures <= 5) ADD_FAILURE() << "job " << k << " unlike timm's";
  }
  EXPECT_EQ(at, all.size());
  EXPECT_EQ(failures, 0);
  EXPECT_GT(changed, mine.size() / 3);
  EXPECT_GT(erased, mine.size() / 2);
  EXPECT_GT(boxes, erased);
}

TEST(TimmRandomErasingTest, RefusesContradictions) {
  const auto made = [](const std::vector<std::pair<std::string, ParamValue>>& given) {
    const OpCall call = make_op_call("timm_random_erasing", given).value();
    return call.op->make_float(call.params, {"image", {3, 8, 8}}).status().message();
  };
  EXPECT_EQ(made({{"min_area", 0.5}, {"max_area", 0.2}}),
            "field 'image': timm_random_erasing: min_area 0.5 is above max_area 0.2");
  EXPECT_EQ(made({{"min_count", int64_t{3}}, {"max_count", int64_t{2}}}),
            "field 'image': timm_random_erasing: min_count 3 is above max_count 2");
  EXPECT_EQ(pil_reference::call_error("timm_random_erasing", {{"mode", std::string("zero")}}),
            "timm_random_erasing: mode must be one of const, rand, pixel, not 'zero'");
  EXPECT_EQ(pil_reference::call_error("timm_random_erasing", {{"probability", 1.5}}),
            "timm_random_erasing: probability must be a number in [0, 1], not 1.5");
}

}  // namespace
}  // namespace stoker
