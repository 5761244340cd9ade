#include <ebla/experiments/statistics.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using ebla::experiments::Sample;

TEST(Sample, OrderStatisticsOfOddAndEvenCounts) {
  const Sample odd({5, 1, 4, 2, 3});
  EXPECT_EQ(odd.min(), 1);
  EXPECT_EQ(odd.max(), 5);
  EXPECT_EQ(odd.median(), 3);
  EXPECT_EQ(odd.mean(), 3);
  const Sample even({4, 1, 3, 2});
  EXPECT_EQ(even.median(), 2.5);  // the mean of the two middle values
  EXPECT_EQ(even.quantile(0), 1);
  EXPECT_EQ(even.quantile(1), 4);
  EXPECT_DOUBLE_EQ(even.quantile(1.0 / 3), 2);
}

TEST(Sample, MedianAgreesWithSortingOnRandomSamples) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> d;
  for (int n = 1; n <= 60; ++n) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = d(rng);
    const Sample s(v);
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    const double expected = v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
    EXPECT_EQ(s.median(), expected) << "n = " << n;
    EXPECT_EQ(s.max(), v.back());
    EXPECT_EQ(s.min(), v.front());
  }
}

TEST(Sample, EmptyHasNaNStatisticsAndNaNSortsLast) {
  const Sample empty;
  EXPECT_TRUE(std::isnan(empty.median()));
  EXPECT_TRUE(std::isnan(empty.max()));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Sample s({2, nan, 1});
  EXPECT_EQ(s.min(), 1);
  EXPECT_EQ(s.median(), 2);
  EXPECT_TRUE(std::isnan(s.max()));
}
