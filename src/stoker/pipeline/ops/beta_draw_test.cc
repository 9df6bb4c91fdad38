// beta_draw against the Beta distribution: 20,000 draws of each shape (MixUp's 0.2, CutMix's 1,
// lopsided ones) not rejected by a one-sample Kolmogorov-Smirnov test against SciPy's Beta CDF
// at p = 0.01, and a wrong parameter rejected (the test has power).
#include "stoker/pipeline/ops/beta_draw.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "stoker/testing/batch_reference.h"

namespace stoker {
namespace {

constexpr const char* kBetaKs = R"(
import sys
import numpy as np
from scipy import stats
d = sys.argv[1]
for line in open(d + "/shapes.txt"):
    name, a, b = line.split()
    x = np.loadtxt(f"{d}/{name}.txt")
    print(stats.kstest(x, stats.beta(float(a), float(b)).cdf).pvalue, file=open(f"{d}/{name}.p", "w"))
)";

TEST(BetaDrawTest, DrawsFollowTheBetaDistribution) {
  struct Shape {
    const char* name;
    double a, b, tested_a;  // drawn with (a, b), tested against (tested_a, b)
    bool same;
  };
  const Shape shapes[] = {{"mixup", 0.2, 0.2, 0.2, true},
                          {"cutmix", 1, 1, 1, true},
                          {"lopsided", 2.5, 0.7, 2.5, true},
                          {"large", 8, 3, 8, true},
                          {"wrong", 0.2, 0.2, 0.25, false}};
  testing::TempDir dir;
  std::ofstream list(dir / "shapes.txt");
  for (const Shape& s : shapes) {
    list << s.name << " " << s.tested_a << " " << s.b << "\n";
    std::ofstream out(dir / (std::string(s.name) + ".txt"));
    out.precision(17);
    for (int i = 0; i < 20000; ++i) {
      CounterRng rng(99, batch_stream(0, i, 0));
      const double x = ops::beta_draw(rng, s.a, s.b);
      ASSERT_TRUE(x >= 0 && x <= 1) << x;
      out << x << "\n";
    }
  }
  list.close();
  for (const double tiny : {1e-300, 4.9e-324}) {  // the logs underflow: still in [0, 1]
    CounterRng rng(1, 2);
    for (int i = 0; i < 100; ++i) {
      const double x = ops::beta_draw(rng, tiny, tiny);
      ASSERT_TRUE(x >= 0 && x <= 1) << tiny << " " << x;
    }
  }
  ASSERT_TRUE(batch_reference::run_reference(dir, kBetaKs));
  for (const Shape& s : shapes) {
    std::ifstream in(dir / (std::string(s.name) + ".p"));
    double p = -1;
    in >> p;
    std::printf("%s: p = %g\n", s.name, p);
    if (s.same) {
      EXPECT_GE(p, 0.01) << s.name;
    } else {
      EXPECT_LT(p, 0.01) << s.name;
    }
  }
}

}  // namespace
}  // namespace stoker
