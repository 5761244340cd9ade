// The weak-form study of seed 004 called as a library: the certified bounds hold on every layer
// for each distribution, a seed gives the same numbers, and the progress callback.
#include <ebla/experiments/weakform_study.hpp>

#include <gtest/gtest.h>

#include <cmath>
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

// Wide data in binary64 have entries up to about 2^500, whose squares overflow: the Frobenius
// norms of the errors and the bounds must still be finite, and no violation reported where
// every entry's error is within its bound.
TEST(WeakformStudy, WideDataNearTheEndsOfTheRangeReportNoFalseViolation) {
  const Format f64 = formats::binary64(), f32 = formats::binary32();
  for (const MatrixUnit& unit : {weakform_unit(f64, f64), weakform_unit(f32, f64), weakform_unit(f32, f32),
                                 weakform_unit(formats::binary16(), f32)})
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      WeakformSpec s = small_weakform(WeakformDistribution::wide);
      s.ni = s.nj = 8;
      s.nk = 4;
      s.n = 16;
      s.unit = unit;
      s.seed = seed;
      const WeakformResult r = weakform_study(s);
      EXPECT_EQ(r.violations(), 0) << format_name(unit.input) << " seed " << seed;
      for (std::size_t k = 0; k < s.nk; ++k) {
        EXPECT_LE(r.layers[k].max_ratio, 1.0);
        EXPECT_TRUE(std::isfinite(r.layers[k].errf)) << format_name(unit.input) << " seed " << seed;
        EXPECT_TRUE(std::isfinite(r.bounds.layers[k].bound_f)) << format_name(unit.input) << " seed " << seed;
        EXPECT_LE(r.layers[k].errf, r.bounds.layers[k].bound_f);
        // ||E||_1 / sqrt(ni) <= ||E||_F <= sqrt(nj) ||E||_1 (ni = nj = 8)
        EXPECT_LE(r.layers[k].errf, r.layers[k].err1 * std::sqrt(8.0) * (1 + 1e-12));
        EXPECT_GE(r.layers[k].errf * std::sqrt(8.0) * (1 + 1e-12), r.layers[k].err1);
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
