// ebla::norm2, norm2_upper and norm2_lower against the exact 2-norm: the squares of doubles
// are exact in __float128 (106 bits), their sum is rounded with at most m 2^-113 relative
// error, and sqrtq rounds once; the comparisons allow that much and nothing more.
#include <ebla/core/norm2.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using quad = __float128;

struct Exact {
  quad norm;   // sqrt(sum v^2), to within (m + 1) 2^-112 relative
  quad slack;  // that relative error
};

Exact exact_norm(const std::vector<double>& v) {
  quad sum = 0;
  for (double x : v) sum += static_cast<quad>(x) * x;
  return {sqrtq(sum), static_cast<quad>(v.size() + 2) * static_cast<quad>(0x1p-112)};
}

auto visit(const std::vector<double>& v) {
  return [&v](auto add) {
    for (double x : v) add(x);
  };
}

// Counts the vectors whose bounds do not hold, and checks norm2's relative error.
struct Tally {
  long cases = 0, violations = 0;
  void check(const std::vector<double>& v, const char* what) {
    ++cases;
    const Exact e = exact_norm(v);
    const double upper = ebla::norm2_upper(visit(v)), lower = ebla::norm2_lower(visit(v));
    const double value = ebla::norm2(visit(v));
    const bool ok = static_cast<quad>(upper) >= e.norm * (1 - e.slack) &&
                    static_cast<quad>(lower) <= e.norm * (1 + e.slack) && lower <= value && value <= upper;
    // norm2 itself: (m + 2) 2^-53 relative, and an absolute m 2^-1074 in the scaled domain
    const quad rel = static_cast<quad>(v.size() + 3) * static_cast<quad>(0x1p-53);
    const quad diff = static_cast<quad>(value) - e.norm;
    // (and one subnormal spacing where the norm itself is subnormal)
    const bool close = (diff < 0 ? -diff : diff) <= rel * e.norm + static_cast<quad>(0x1p-1074);
    if (!ok || !close) {
      ++violations;
      ADD_FAILURE() << what << ": m = " << v.size() << ", lower " << lower << ", norm2 " << value
                    << ", upper " << upper << ", exact " << static_cast<double>(e.norm);
    }
  }
};

TEST(Norm2, BoundsHoldOnRandomVectorsOverTheWholeExponentRange) {
  std::mt19937_64 gen(20261127);
  std::uniform_real_distribution<double> sig(1.0, 2.0);
  std::uniform_int_distribution<int> len(1, 300), coin(0, 1);
  Tally t;
  for (int c = 0; c < 4000; ++c) {
    // a window of exponents anywhere from the subnormals to the largest doubles whose norm
    // (at most 2^1019 sqrt(300) here) is a double
    std::uniform_int_distribution<int> centre(-1074, 1018), width(0, 200);
    const int mid = centre(gen), w = width(gen);
    std::uniform_int_distribution<int> expo(std::max(-1074, mid - w), std::min(1018, mid + w));
    std::vector<double> v(static_cast<std::size_t>(len(gen)));
    for (double& x : v) x = (coin(gen) ? -1 : 1) * std::ldexp(sig(gen), expo(gen));
    t.check(v, "random");
  }
  EXPECT_EQ(t.cases, 4000);
  EXPECT_EQ(t.violations, 0);
}

TEST(Norm2, BoundsHoldWhereTheDirectSumOfSquaresOverflowsOrUnderflows) {
  Tally t;
  const double big = 0x1.fffffffffffffp1017, least = std::numeric_limits<double>::denorm_min();
  t.check(std::vector<double>(1000, big), "1000 x 2^1018 (less an ulp)");
  t.check(std::vector<double>(1000, least), "1000 x the least subnormal");
  t.check(std::vector<double>(7, 1e160), "7 x 1e160");
  t.check(std::vector<double>(7, 1e-170), "7 x 1e-170");
  std::vector<double> mixed(500, least);
  mixed[250] = 0x1.fffffffffffffp1023;  // the subnormals vanish next to it, within the allowance
  t.check(mixed, "DBL_MAX among subnormals");
  t.check({3 * least, 4 * least}, "a subnormal norm, 5 times the least subnormal");
  t.check({0x1p-1060, 0x1.8p-1061, least}, "a subnormal norm");
  std::vector<double> ones(100000, 1.0);
  ones[0] = 0x1.fffffffffffffp-1;  // the scale 2^0 with sums of 1e5 terms
  t.check(ones, "1e5 ones");
  EXPECT_EQ(t.violations, 0);
  // the direct sum overflows here; the scaled one is 1e160 sqrt(7)
  EXPECT_NEAR(ebla::norm2(visit(std::vector<double>(7, 1e160))) / 1e160, std::sqrt(7.0), 1e-15);
  EXPECT_TRUE(std::isinf(1e160 * 1e160 * 7));
  // a norm beyond the largest double: +infinity, as an upper bound must be
  const std::vector<double> two_max(2, 0x1.fffffffffffffp1023);
  EXPECT_TRUE(std::isinf(ebla::norm2_upper(visit(two_max))));
}

TEST(Norm2, ZerosEmptyAndNonFiniteValues) {
  const std::vector<double> none, zeros(5, 0.0);
  EXPECT_EQ(ebla::norm2(visit(none)), 0.0);
  EXPECT_EQ(ebla::norm2_lower(visit(zeros)), 0.0);
  // upper on zeros: the absolute allowance m 2^-1074 (scale 2^0), no more than a few of it
  EXPECT_LE(ebla::norm2_upper(visit(zeros)), 1e-160);
  const std::vector<double> inf{1.0, std::numeric_limits<double>::infinity()};
  const std::vector<double> nan{std::numeric_limits<double>::quiet_NaN(), 2.0};
  EXPECT_TRUE(std::isinf(ebla::norm2_upper(visit(inf))));
  EXPECT_TRUE(std::isinf(ebla::norm2_upper(visit(nan))));
  EXPECT_TRUE(std::isnan(ebla::norm2(visit(nan))));
}

}  // namespace
