// The weak-form study of seed 004 called as a library: the certified bounds hold on every layer
// for each distribution, a seed gives the same numbers, and the progress callback.
#include <ebla/experiments/weakform_study.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace ebla;
using namespace ebla::experiments;

WeakformSpec small_weakform(WeakformDistribution d) {
  WeakformSpec s;
  s.ni = 4;
  s.nj = 3;
  s.nk = 2;
  s.n = 9;
  s.unit = weakform_unit(formats::binary16(), formats::binary32());
  s.distribution = d;
  s.seed = 4;
  return s;
}

TEST(WeakformStudy, CertifiedBoundsHoldForEveryDistribution) {
  for (WeakformDistribution d : {WeakformDistribution::uniform, WeakformDistribution::positive,
                                 WeakformDistribution::cancellation, WeakformDistribution::wide,
                                 WeakformDistribution::tiny})
    for (bool in_format : {false, true}) {
      WeakformSpec s = small_weakform(d);
      s.in_format = in_format;
      const WeakformResult r = weakform_study(s);
      ASSERT_EQ(r.layers.size(), 2u);
      EXPECT_EQ(r.violations(), 0) << static_cast<int>(d) << " " << in_format;
      for (std::size_t k = 0; k < 2; ++k) {
        EXPECT_LE(r.layers[k].max_ratio, 1.0);
        EXPECT_LE(r.layers[k].err1, r.bounds.layers[k].bound1);
        EXPECT_LE(r.layers[k].errinf, r.bounds.layers[k].bound_inf);
        EXPECT_LE(r.layers[k].errf, r.bounds.layers[k].bound_f);
      }
    }
}

TEST(WeakformStudy, SameNumbersForASeedAndProgress) {
  WeakformSpec s = small_weakform(WeakformDistribution::uniform);
  std::vector<std::size_t> done;
  s.progress = [&](std::size_t d, std::size_t total, const std::string&) {
    done.push_back(d);
    EXPECT_EQ(total, 3u);
  };
  const WeakformResult a = weakform_study(s), b = weakform_study(small_weakform(WeakformDistribution::uniform));
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a.layers[k].err1, b.layers[k].err1);
    EXPECT_EQ(a.layers[k].errf, b.layers[k].errf);
  }
  EXPECT_EQ(done, (std::vector<std::size_t>{0, 1, 2, 3}));
  const WeakformData x = draw_weakform_data(s), y = draw_weakform_data(s);
  EXPECT_EQ(x.C(2, 8), y.C(2, 8));
}

}  // namespace
