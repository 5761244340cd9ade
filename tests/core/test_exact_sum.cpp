// ebla::ExactSum and ebla::exact_dot against hand cases and binary128: cancellation to zero,
// both ends of the range of products (subnormals, products beyond the double range), and
// the single rounding of to_double (ties to even, subnormal and overflowing sums).
#include <ebla/core/exact_sum.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using ebla::ExactSum;
using ebla::float128;

constexpr double dmax = std::numeric_limits<double>::max();
constexpr double inf = std::numeric_limits<double>::infinity();

/// 2^k in binary128 (exact).
float128 pow2q(int k) {
  float128 p = 1;
  for (; k > 0; --k) p *= 2;
  for (; k < 0; ++k) p /= 2;
  return p;
}

/// A finite double with random bits (every exponent, subnormals included).
double random_finite(std::mt19937_64& gen) {
  for (;;) {
    const std::uint64_t b = gen();
    if (((b >> 52) & 0x7ff) == 0x7ff) continue;
    double v;
    std::memcpy(&v, &b, sizeof v);
    return v;
  }
}

/// +-[1, 2) 2^(0 or 1) with a random 53-bit significand.
double random_near_one(std::mt19937_64& gen) {
  return std::ldexp(1.0 + static_cast<double>(gen() >> 12) * 0x1p-52, static_cast<int>(gen() % 2)) *
         (gen() & 1 ? 1.0 : -1.0);
}

TEST(ExactSum, HandCases) {
  ExactSum empty;
  EXPECT_EQ(empty.sign(), 0);
  EXPECT_EQ(empty.to_double(), 0.0);
  EXPECT_TRUE(empty.to_float128() == 0);

  // 2^1000 2^1000 - 2^1000 2^1000 + 2^-1074 2^-1074 = 2^-2148: both ends of the range
  ExactSum ends;
  ends.add_product(0x1p1000, 0x1p1000);
  ends.add_product(0x1p-1074, 0x1p-1074);
  ends.add_product(-0x1p1000, 0x1p1000);
  EXPECT_EQ(ends.sign(), 1);
  EXPECT_TRUE(ends.to_float128() == pow2q(-2148));
  EXPECT_EQ(ends.to_double(), 0.0);  // far below half of 2^-1074

  // (1 + 2^-52)(1 - 2^-52) - 1 = -2^-104
  ExactSum near_one;
  near_one.add_product(1 + 0x1p-52, 1 - 0x1p-52);
  near_one.add_product(-1.0, 1.0);
  EXPECT_EQ(near_one.sign(), -1);
  EXPECT_EQ(near_one.to_double(), -0x1p-104);

  // largest products, beyond the double range: 4 (2 - 2^-52)^2 2^2046 - the same = 0
  ExactSum huge;
  for (int i = 0; i < 4; ++i) huge.add_product(dmax, dmax);
  EXPECT_TRUE(huge.to_float128() == 4 * static_cast<float128>(dmax) * static_cast<float128>(dmax));
  EXPECT_EQ(huge.to_double(), inf);
  for (int i = 0; i < 4; ++i) huge.add_product(-dmax, dmax);
  EXPECT_EQ(huge.sign(), 0);
  EXPECT_EQ(huge.to_double(), 0.0);

  // borrow through every limb and back: -2^-2148 + 2^-2148
  ExactSum borrow;
  borrow.add_product(-0x1p-1074, 0x1p-1074);
  EXPECT_EQ(borrow.sign(), -1);
  EXPECT_TRUE(borrow.to_float128() == -pow2q(-2148));
  borrow.add_product(0x1p-1074, 0x1p-1074);
  EXPECT_EQ(borrow.sign(), 0);

  // 0.1 * 3 = 3 fl(0.1) exactly, which is not fl(0.3)
  ExactSum tenth;
  tenth.add_product(0.1, 3.0);
  for (int i = 0; i < 3; ++i) tenth.add(-0.1);
  EXPECT_EQ(tenth.sign(), 0);
}

TEST(ExactSum, CancelsToZeroAndAgreesWithErrorFreeProducts) {
  std::mt19937_64 gen(2024);
  // x y = p + e exactly, p = fl(x y), e = fma(x, y, -p), when nothing underflows
  for (int trial = 0; trial < 2000; ++trial) {
    const double x = std::ldexp(random_near_one(gen), static_cast<int>(gen() % 800) - 400);
    const double y = std::ldexp(random_near_one(gen), static_cast<int>(gen() % 800) - 400);
    const double p = x * y;
    ExactSum s;
    s.add_product(x, y);
    s.add(-p);
    s.add(-std::fma(x, y, -p));
    ASSERT_EQ(s.sign(), 0) << std::hexfloat << x << " " << y;
  }
  // products over the whole range (subnormals, beyond the double range), added, then
  // subtracted in reverse order: exactly zero
  std::vector<double> xs(2000), ys(2000);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = random_finite(gen);
    ys[i] = random_finite(gen);
  }
  ExactSum s;
  for (std::size_t i = 0; i < xs.size(); ++i) s.add_product(xs[i], ys[i]);
  EXPECT_NE(s.sign(), 0);
  for (std::size_t i = xs.size(); i-- > 0;) s.add_product(-xs[i], ys[i]);
  EXPECT_EQ(s.sign(), 0);
  EXPECT_EQ(s.to_double(), 0.0);
}

TEST(ExactSum, AgreesWithFloat128WhereFloat128IsExact) {
  // factors in +-[1, 4): products are multiples of 2^-104 below 2^4, so sums of at most 4
  // of them need at most 110 bits and binary128 (113 bits) adds them exactly; its
  // conversion to double rounds once, to nearest even
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 20000; ++trial) {
    const std::size_t n = 1 + gen() % 4;
    ExactSum s;
    float128 q = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double x = random_near_one(gen), y = random_near_one(gen);
      s.add_product(x, y);
      q += static_cast<float128>(x) * static_cast<float128>(y);
    }
    ASSERT_TRUE(s.to_float128() == q) << "trial " << trial;
    ASSERT_EQ(s.to_double(), static_cast<double>(q)) << "trial " << trial;
    ASSERT_EQ(s.sign(), q > 0 ? 1 : q < 0 ? -1 : 0);
  }
}

TEST(ExactSum, RoundsOnceToNearestEven) {
  auto sum = [](std::vector<double> terms) {
    ExactSum s;
    for (double t : terms) s.add(t);
    return s.to_double();
  };
  EXPECT_EQ(sum({1, 0x1p-53}), 1.0);                                 // a tie: to even
  EXPECT_EQ(sum({1, 0x1p-53, 0x1p-1000}), 1 + 0x1p-52);              // just above the tie
  EXPECT_EQ(sum({1 + 0x1p-52, 0x1p-53}), 1 + 0x1p-51);               // a tie: to even, up
  EXPECT_EQ(sum({-1, -0x1p-53, -0x1p-1074}), -(1 + 0x1p-52));        // negative, above the tie
  EXPECT_EQ(sum({0x1p200, 1, -0x1p200}), 1.0);                       // cancellation
  EXPECT_EQ(sum({0x1p1000, 0x1p-1000, -0x1p1000, 0x1p-1000}), 0x1p-999);
}

TEST(ExactSum, SubnormalSumsAreRoundedOnce) {
  auto product_sum = [](std::vector<std::pair<double, double>> terms) {
    ExactSum s;
    for (auto [a, b] : terms) s.add_product(a, b);
    return s.to_double();
  };
  const double tiny = 0x1p-1074;  // the least subnormal
  EXPECT_EQ(product_sum({{tiny, 3.0}}), 3 * tiny);
  EXPECT_EQ(product_sum({{tiny, 0.5}}), 0.0);                       // 2^-1075, a tie: to even (0)
  EXPECT_EQ(product_sum({{tiny, 1.5}}), 2 * tiny);                  // 1.5 quanta, a tie: to even (2)
  EXPECT_EQ(product_sum({{tiny, 0.5}, {tiny, tiny}}), tiny);        // above the tie by 2^-2148
  EXPECT_EQ(product_sum({{tiny, 0.75}}), tiny);
  EXPECT_EQ(product_sum({{-tiny, 0.25}}), -0.0);
  EXPECT_TRUE(std::signbit(product_sum({{-tiny, 0.25}})));
  // subnormal products of normal factors, summed exactly
  EXPECT_EQ(product_sum({{0x1p-600, 0x1p-450}, {0x1p-600, 0x1p-450}}), 0x1p-1049);
  EXPECT_EQ(product_sum({{0x1p-1022, 0.5}}), 0x1p-1023);
}

TEST(ExactSum, SumsBeyondTheDoubleRange) {
  auto sum = [](std::vector<double> terms) {
    ExactSum s;
    for (double t : terms) s.add(t);
    return s.to_double();
  };
  const double half_ulp = 0x1p970;  // half a unit in the last place of dmax
  EXPECT_EQ(sum({dmax, half_ulp / 2}), dmax);
  EXPECT_EQ(sum({dmax, half_ulp}), inf);  // the tie rounds to 2^1024: overflow
  EXPECT_EQ(sum({-dmax, -half_ulp}), -inf);
  EXPECT_EQ(sum({dmax, dmax, -dmax}), dmax);  // the partial sum beyond the range is exact
  ExactSum s;
  s.add_product(0x1p1000, 0x1p1000);
  EXPECT_TRUE(s.to_float128() == pow2q(2000));
  s.add_product(-0x1p1000, 0x1p1000);
  s.add_product(0x1p-1074, 0x1p-1000);
  EXPECT_TRUE(s.to_float128() == pow2q(-2074));
}

TEST(ExactSum, NonFiniteTermsAndRelativeErrors) {
  ExactSum s;
  s.add_product(3.0, 1.0);
  EXPECT_EQ(s.relative_error(3.0), 0.0);
  EXPECT_EQ(s.relative_error(3.3), std::fabs(3.3 - 3.0) / 3.0);  // 3.3 - 3 is exact in double
  EXPECT_TRUE(std::isnan(s.relative_error(inf)));
  ExactSum zero;
  EXPECT_EQ(zero.relative_error(0.0), 0.0);
  EXPECT_EQ(zero.relative_error(1e-300), inf);
  ExactSum bad;
  bad.add_product(1.0, inf);
  EXPECT_FALSE(bad.finite());
  EXPECT_TRUE(std::isnan(bad.to_double()));
  EXPECT_TRUE(std::isnan(bad.relative_error(1.0)));
  ExactSum nan;
  nan.add(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(nan.to_double()));
}

TEST(ExactDot, AgreesWithFloat128OnFloatVectors) {
  // products of floats in +-[1, 2) are multiples of 2^-46 below 4; 10^4 of them sum
  // exactly in binary128, with cancellation (random signs)
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<float> unit(1.0f, 2.0f);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 1 + gen() % 10000;
    std::vector<float> x(n), y(n);
    float128 q = 0;
    double plain = 0;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = unit(gen) * (gen() & 1 ? 1.0f : -1.0f);
      y[i] = unit(gen);
      q += static_cast<float128>(x[i]) * static_cast<float128>(y[i]);
      plain += static_cast<double>(x[i]) * y[i];
    }
    EXPECT_EQ(ebla::exact_dot(x.data(), y.data(), n), static_cast<double>(q));
    EXPECT_TRUE(ebla::exact_dot_sum(x.data(), y.data(), n).to_float128() == q);
    const double expected = static_cast<double>(q - plain) / static_cast<double>(q);
    EXPECT_NEAR(ebla::dot_relative_error(x.data(), y.data(), n, plain), std::fabs(expected),
                1e-15 * std::fabs(expected));
  }
  EXPECT_EQ(ebla::exact_dot(static_cast<const double*>(nullptr), nullptr, 0), 0.0);
}

TEST(ExactDot, ExtremeExponentsAndCancellation) {
  // x^T y = 2^-1074 exactly, under terms of 2^2000 that cancel
  const std::vector<double> x = {0x1p1000, 0x1p-537, -0x1p1000, dmax, -dmax};
  const std::vector<double> y = {0x1p1000, 0x1p-537, 0x1p1000, 2.0, 2.0};
  EXPECT_EQ(ebla::exact_dot(x.data(), y.data(), x.size()), 0x1p-1074);
  EXPECT_EQ(ebla::dot_relative_error(x.data(), y.data(), x.size(), 0x1p-1074), 0.0);
  EXPECT_EQ(ebla::dot_relative_error(x.data(), y.data(), x.size(), 0.0), 1.0);
}

}  // namespace
