// The MAC study of seed 000 (section 4.1) called as a library: DBEA holds on every sample of
// every operation, a seed gives the same samples and numbers, and the progress callback.
#include <ebla/experiments/mac_study.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace ebla;
using namespace ebla::experiments;

MacSpec small_mac() {
  MacSpec s;
  s.samples = 2000;
  s.seed = 5;
  return s;
}

TEST(MacStudy, DbeaHoldsOnEverySample) {
  for (Rounding mode : {Rounding::nearest_even, Rounding::toward_zero, Rounding::stochastic}) {
    MacSpec s = small_mac();
    s.rounding = mode;
    const MacResult r = mac_study(s);
    ASSERT_EQ(r.outcomes.size(), 3u);
    EXPECT_EQ(r.violations(), 0) << to_string(mode);
    for (const MacOutcome& o : r.outcomes) {
      ASSERT_EQ(o.error.size(), 2000u);
      for (std::size_t i = 0; i < o.error.size(); ++i) EXPECT_LE(o.error.values()[i], o.dbea.values()[i]);
    }
  }
}

TEST(MacStudy, SameNumbersForASeed) {
  const MacResult a = mac_study(small_mac()), b = mac_study(small_mac());
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(a.outcomes[k].error.values(), b.outcomes[k].error.values());
    EXPECT_EQ(a.outcomes[k].vibea.values(), b.outcomes[k].vibea.values());
  }
  const MacSamples s = draw_mac_samples(small_mac());
  for (double x : s.a) {
    EXPECT_GE(x, 1.0);
    EXPECT_LT(x, 2.0);
  }
}

TEST(MacStudy, ProgressAfterSamplesAndEachOperation) {
  MacSpec s = small_mac();
  std::vector<std::string> steps;
  s.progress = [&](std::size_t done, std::size_t total, const std::string& step) {
    EXPECT_EQ(total, 4u);
    EXPECT_EQ(done, steps.size() + 1);
    steps.push_back(step);
  };
  mac_study(s);
  EXPECT_EQ(steps, (std::vector<std::string>{"samples", "mac", "fma", "mpfma"}));
}

}  // namespace
