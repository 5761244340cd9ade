// The stored, quantized vector of <ebla/kernels/qdot_stored.hpp> against exact dot products.
//
// Reference: x^T y exact (ebla::ExactSum, the superaccumulator of test_qdot.cpp).
//
// What is checked, on every case (one x, one tolerance, several y):
//  - the certified bound: |value - x^T y| <= bound, decided exactly;
//  - the selection's guarantee on x alone (qdot_stored.hpp, (S1)-(S2)): the stored values
//    x~ (qdot_stored_values) satisfy sum |x_i - x~_i| <= tolerance ||x||_1, in binary128,
//    and sum |x_i - x~_i| <= error_l1 (the reported figure is an upper bound);
//  - the contract for the value: |value - x^T y| <= tolerance ||x||_1 ||y||_inf +
//    accumulation_bound + u_d sum |x~_i y_i| + m 2^-1074, decided exactly;
//  - components per level add up to n, bytes held against 8 n.
// Data: seed 002's distribution B (s 2^p, p ~ N(0, t/2)) for several t, exponents spread
// over the whole double range, subnormals, values at the edges of binary16's and binary32's
// ranges inside one tile, cancelling sums, zeros; y from the same families.
#include <ebla/core/error.hpp>
#include <ebla/core/exact_sum.hpp>
#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/qdot_stored.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>
#include <quadmath.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "checks.hpp"

namespace {

using ebla::ExactSum;
using ebla::QdotOptions;
using ebla::QdotResult;
using ebla::QdotStored;
using ebla_test::bits_of;
using ebla_test::expect_invalid;
using ebla_test::Tally;

constexpr double u_d = 0x1p-53;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

const std::vector<double> tolerances = {1e-18, 1e-15, 1e-12, 1e-9, 1e-7, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 0.5, 3};

/// Whether |exact - value| <= bound, decided exactly.
bool within(const ExactSum& exact, double value, double bound) {
  ExactSum above = exact, below = exact;
  above.add(-value);
  above.add(-bound);
  below.add(-value);
  below.add(bound);
  return above.sign() <= 0 && below.sign() >= 0;
}

std::string hex(double v) { return ebla_test::hex(v); }

// ---- data -----------------------------------------------------------------------------

/// s 2^p, s ~ U[0.5, 1), p ~ N(0, sigma) rounded and clamped to [lo, hi], random signs.
std::vector<double> spread(std::size_t n, double sigma, int lo, int hi, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> s(0.5, 1.0);
  std::normal_distribution<double> p(0.0, sigma);
  std::vector<double> v(n);
  for (auto& x : v) {
    const int e = std::clamp(static_cast<int>(std::lround(p(gen))), lo, hi);
    x = (gen() & 1 ? -1 : 1) * std::ldexp(s(gen), e);
  }
  return v;
}

/// Exponents uniform in [lo, hi] (the whole double range for -1074, 1023), random signs,
/// some exact zeros.
std::vector<double> uniform_exponents(std::size_t n, int lo, int hi, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> s(1.0, 2.0);
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) {
    const int k = e(gen);
    x = gen() % 17 == 0 ? 0.0 : (gen() & 1 ? -1 : 1) * std::ldexp(s(gen), k);
    if (!std::isfinite(x)) x = std::ldexp(1.0, hi);
  }
  return v;
}

/// Tiles that mix one large value with values at the bottom of binary16's and binary32's
/// ranges below it (2^-12 .. 2^-30 and 2^-120 .. 2^-160 relative): the tile's format must
/// widen or the bin narrow.
std::vector<double> range_edges(std::size_t n, std::mt19937_64& gen) {
  std::uniform_real_distribution<double> s(1.0, 2.0);
  std::uniform_int_distribution<int> pick(0, 5);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = pick(gen);
    const int e = k == 0 ? 0 : k == 1 ? -12 - static_cast<int>(gen() % 20) : k == 2 ? -120 - static_cast<int>(gen() % 40)
                 : k == 3 ? 15 : k == 4 ? -24 : -1070;
    v[i] = (gen() & 1 ? -1 : 1) * std::ldexp(s(gen), e);
  }
  return v;
}

/// Pairs a, -a (the sum cancels to the small remainder of one extra term).
std::vector<double> cancelling(std::size_t n, std::mt19937_64& gen) {
  std::vector<double> v = spread(n, 10.0, -60, 60, gen);
  for (std::size_t i = 1; i < n; i += 2) v[i] = -v[i - 1];
  return v;
}

// ---- checks -----------------------------------------------------------------------------

struct Checked {
  Tally bound, contract, x_error;
  std::size_t narrower = 0;  ///< cases whose storage holds fewer bytes than 8 n
};

/// qdot_store(x) at tolerance tol and the dot products with each y; every check above.
void check_case(const std::vector<double>& x, const std::vector<std::vector<double>>& ys, const QdotOptions& o,
                Checked& out, const std::string& what) {
  const std::size_t n = x.size();
  const QdotStored s = ebla::qdot_store(x.data(), n, o);
  const std::vector<double> xs = ebla::qdot_stored_values(s);
  // (S1)-(S2): sum |x_i - x~_i| <= tol ||x||_1, in binary128 (each difference exact there)
  __float128 err = 0, l1 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    err += fabsq(static_cast<__float128>(x[i]) - static_cast<__float128>(xs[i]));
    l1 += fabsq(static_cast<__float128>(x[i]));
  }
  ++out.x_error.cases;
  if (!(err <= static_cast<__float128>(o.tolerance) * l1 * (1 + static_cast<__float128>(0x1p-100))) || !(err <= s.error_l1) || !(l1 <= s.l1))
    out.x_error.mismatch(what + ": sum |x - x~| = " + hex(static_cast<double>(err)) + ", error_l1 = " + hex(s.error_l1) +
                         ", tol ||x||_1 = " + hex(o.tolerance * static_cast<double>(l1)));
  std::size_t per_level = 0;
  for (auto c : s.count_per_level) per_level += c;
  EXPECT_EQ(per_level, n) << what;
  if (s.bytes() < 8 * n) ++out.narrower;
  for (std::size_t k = 0; k < ys.size(); ++k) {
    const auto& y = ys[k];
    const QdotResult r = ebla::qdot(s, y.data(), n);
    ExactSum exact;
    double ymax = 0;
    __float128 q = 0;
    std::size_t multiplied = 0;
    for (std::size_t i = 0; i < n; ++i) {
      exact.add_product(x[i], y[i]);
      ymax = std::max(ymax, std::fabs(y[i]));
      q += fabsq(static_cast<__float128>(xs[i]) * y[i]);
      multiplied += xs[i] != 0;
    }
    const std::string tag = what + " y" + std::to_string(k) + ": value " + hex(r.value) + ", bound " + hex(r.bound);
    ++out.bound.cases;
    if (std::isfinite(r.bound) && !within(exact, r.value, r.bound)) out.bound.mismatch(tag);
    // the contract, each term rounded up (a contract below double's range becomes 2^-1074)
    const __float128 wide = (static_cast<__float128>(o.tolerance) * l1 * ymax + r.accumulation_bound + u_d * q +
                             static_cast<__float128>(multiplied) * static_cast<__float128>(0x1p-1074)) *
                            (1 + static_cast<__float128>(0x1p-60));
    double contract = static_cast<double>(wide);
    if (static_cast<__float128>(contract) < wide) contract = std::nextafter(contract, inf);
    ++out.contract.cases;
    if (std::isfinite(r.bound) && std::isfinite(contract) && !within(exact, r.value, contract)) out.contract.mismatch(tag + ", contract " + hex(contract));
  }
}

/// y of each family, for x of length n.
std::vector<std::vector<double>> partners(std::size_t n, std::mt19937_64& gen) {
  return {spread(n, 4.5, -1000, 1000, gen), spread(n, 20.0, -1000, 1000, gen), uniform_exponents(n, -300, 300, gen),
          std::vector<double>(n, 1.0), range_edges(n, gen)};
}

const std::size_t lengths[] = {1, 7, 511, 512, 513, 1500, 4096};

TEST(QdotStored, RandomDistributionsHoldTheirBounds) {
  std::mt19937_64 gen(20261129);
  Checked c;
  for (const std::size_t n : lengths)
    for (const double sigma : {2.5, 4.5, 6.5, 12.0, 40.0}) {
      const auto x = spread(n, sigma, -1000, 1000, gen);
      const auto ys = partners(n, gen);
      for (const double tol : tolerances) {
        QdotOptions o;
        o.tolerance = tol;
        check_case(x, ys, o, c, "B sigma " + std::to_string(sigma) + " n " + std::to_string(n) + " tol " + std::to_string(tol));
      }
    }
  c.bound.report("bound");
  c.contract.report("contract");
  c.x_error.report("x error");
  EXPECT_GT(c.narrower, 100u);
}

TEST(QdotStored, AdversarialDataHoldTheirBounds) {
  std::mt19937_64 gen(77);
  Checked c;
  for (const std::size_t n : {1ul, 33ul, 512ul, 1025ul, 3000ul})
    for (int family = 0; family < 5; ++family) {
      std::vector<double> x = family == 0   ? uniform_exponents(n, -1074, 1023, gen)
                              : family == 1 ? uniform_exponents(n, -1074, -1000, gen)  // subnormals and near
                              : family == 2 ? range_edges(n, gen)
                              : family == 3 ? cancelling(n, gen)
                                            : uniform_exponents(n, 900, 1023, gen);  // near overflow
      std::vector<std::vector<double>> ys = partners(n, gen);
      ys.push_back(cancelling(n, gen));
      ys.push_back(uniform_exponents(n, -1074, -900, gen));  // products underflow
      if (family == 3) ys.push_back(std::vector<double>(n, 1.0));
      // x against itself: cancellation-free, the largest products
      ys.push_back(x);
      for (const double tol : tolerances) {
        QdotOptions o;
        o.tolerance = tol;
        for (const char* ladder : {"", "binary64,binary32,bfloat16,perforate", "binary64,binary16", "binary64"}) {
          o.ladder = ebla::qdot_ladder_by_names(ladder);
          check_case(x, ys, o, c, "family " + std::to_string(family) + " n " + std::to_string(n) + " tol " +
                                      std::to_string(tol) + " ladder '" + ladder + "'");
        }
      }
    }
  c.bound.report("bound");
  c.contract.report("contract");
  c.x_error.report("x error");
}

TEST(QdotStored, OverflowingProductsGiveAnInfiniteBound) {
  std::vector<double> x(100, 1e300), y(100, 1e300);
  QdotOptions o;
  o.tolerance = 1e-3;
  const QdotStored s = ebla::qdot_store(x.data(), x.size(), o);
  const QdotResult r = ebla::qdot(s, y.data(), y.size());
  EXPECT_TRUE(std::isinf(r.value));
  EXPECT_TRUE(std::isinf(r.bound));
}

TEST(QdotStored, NarrowTolerancesStoreNarrowFormats) {
  std::mt19937_64 gen(5);
  const std::size_t n = 100000;
  const auto x = spread(n, 4.5, -60, 60, gen);
  QdotOptions o;
  // tolerance 1e-18: every bin binary64, the words of binary64 alone
  o.tolerance = 1e-18;
  const QdotStored exact = ebla::qdot_store(x.data(), n, o);
  EXPECT_EQ(exact.count_per_level[0], n);
  EXPECT_EQ(exact.error_l1, 0.0);
  EXPECT_GE(exact.bytes(), 8 * n);
  EXPECT_LT(exact.bytes(), 8 * n + n / 10);
  // 1e-6: binary32 and narrower, at most half the bytes
  o.tolerance = 1e-6;
  const QdotStored single = ebla::qdot_store(x.data(), n, o);
  EXPECT_EQ(single.count_per_level[0], 0u);
  EXPECT_LE(single.bytes(), 4 * n + n / 10);
  // 1e-2: binary16 and perforation for nearly every tile
  o.tolerance = 1e-2;
  const QdotStored half = ebla::qdot_store(x.data(), n, o);
  EXPECT_EQ(half.count_per_level[0] + half.count_per_level[1], 0u) << half.to_string();
  EXPECT_LE(half.bytes(), 2 * n + n / 10);
  std::cout << half.to_string();
}

TEST(QdotStored, AsAccurateAsQdotAtBinary64) {
  // with the ladder {binary64} both keep every component: the stored dot's bound is at most
  // qdot's (the same product term u_d/(1 - u_d) |q_i|, fewer TwoSums once n passes a few
  // tiles; for the shortest vectors the tiles' own terms make it larger by 1e-14 or so)
  std::mt19937_64 gen(9);
  Tally t;
  for (const std::size_t n : lengths)
    for (int k = 0; k < 20; ++k) {
      const auto x = spread(n, 8.0, -500, 500, gen), y = spread(n, 8.0, -500, 500, gen);
      QdotOptions o;
      o.tolerance = 1e-6;
      o.ladder = ebla::qdot_ladder_by_names("binary64");
      const QdotResult a = ebla::qdot(ebla::qdot_store(x.data(), n, o), y.data(), n);
      const QdotResult b = ebla::qdot(x.data(), y.data(), n, o);
      ++t.cases;
      if (!(a.bound <= b.bound * (1 + 1e-12))) t.mismatch("n " + std::to_string(n) + ": stored " + hex(a.bound) + " > qdot " + hex(b.bound));
      ExactSum exact;
      for (std::size_t i = 0; i < n; ++i) exact.add_product(x[i], y[i]);
      ++t.cases;
      if (!within(exact, a.value, a.bound)) t.mismatch("n " + std::to_string(n) + ": bound");
    }
  t.report("binary64 against qdot");
}

TEST(QdotStored, ViewsAndPointersGiveTheSameBits) {
  std::mt19937_64 gen(11);
  const std::size_t n = 20000;
  const auto x = spread(n, 6.0, -200, 200, gen), y = spread(n, 6.0, -200, 200, gen);
  Kokkos::View<double*> vx("x", n), vy("y", n);
  auto hx = Kokkos::create_mirror_view(vx);
  auto hy = Kokkos::create_mirror_view(vy);
  for (std::size_t i = 0; i < n; ++i) {
    hx(i) = x[i];
    hy(i) = y[i];
  }
  Kokkos::deep_copy(vx, hx);
  Kokkos::deep_copy(vy, hy);
  QdotOptions o;
  o.tolerance = 1e-5;
  const QdotStored a = ebla::qdot_store(x.data(), n, o);
  const QdotStored b = ebla::qdot_store(Kokkos::View<const double*>(vx), o);
  const QdotResult ra = ebla::qdot(a, y.data(), n), rb = ebla::qdot(b, Kokkos::View<const double*>(vy));
  EXPECT_EQ(bits_of(ra.value), bits_of(rb.value));
  EXPECT_EQ(bits_of(ra.bound), bits_of(rb.bound));
  EXPECT_EQ(a.bytes(), b.bytes());
  const QdotResult again = ebla::qdot(a, y.data(), n);
  EXPECT_EQ(bits_of(ra.value), bits_of(again.value));
}

TEST(QdotStored, TheTopBinIsKeptOnRequest) {
  std::vector<double> x = {1.0, 0.5, 0.25}, y = {1.0, 1.0, 1.0};
  QdotOptions o;
  o.tolerance = 3;  // (S1) lets every bin go
  const QdotResult all = ebla::qdot(ebla::qdot_store(x.data(), 3, o), y.data(), 3);
  EXPECT_EQ(all.value, 0.0);
  EXPECT_GE(all.bound, 1.75);
  o.perforate_all = false;
  const QdotStored kept = ebla::qdot_store(x.data(), 3, o);
  EXPECT_TRUE(kept.plan.kept_top_bin);
  const QdotResult r = ebla::qdot(kept, y.data(), 3);
  EXPECT_NE(r.value, 0.0);
  EXPECT_TRUE(r.stats.kept_top_bin);
}

TEST(QdotStored, EmptyVector) {
  QdotOptions o;
  const QdotStored s = ebla::qdot_store(static_cast<const double*>(nullptr), 0, o);
  const QdotResult r = ebla::qdot(s, static_cast<const double*>(nullptr), 0);
  EXPECT_EQ(r.value, 0.0);
  EXPECT_EQ(r.bound, 0.0);
}

TEST(QdotStored, BadInputIsRefused) {
  std::vector<double> x = {1, 2, 3}, y = {1, 2, 3};
  QdotOptions o;
  o.tolerance = 1e-3;
  o.policy = ebla::QdotPolicy::paper;
  expect_invalid([&] { ebla::qdot_store(x.data(), 3, o); }, {"ebla::qdot_store", "paper"});
  o.policy = ebla::QdotPolicy::budget;
  o.tolerance = -1;
  expect_invalid([&] { ebla::qdot_store(x.data(), 3, o); }, {"ebla::qdot_store", "tolerance = -1"});
  o.tolerance = 1e-3;
  o.ladder = ebla::qdot_ladder_by_names("binary64,custom:t=8,emin=-6,emax=7");
  expect_invalid([&] { ebla::qdot_store(x.data(), 3, o); }, {"ebla::qdot_store", "cannot be stored"});
  o.ladder.clear();
  expect_invalid([&] { ebla::qdot_store(static_cast<const double*>(nullptr), 3, o); }, {"ebla::qdot_store", "x is null"});
  x[1] = nan;
  expect_invalid([&] { ebla::qdot_store(x.data(), 3, o); }, {"ebla::qdot_store", "x[1] = nan"});
  x[1] = 2;
  const QdotStored s = ebla::qdot_store(x.data(), 3, o);
  expect_invalid([&] { ebla::qdot(s, y.data(), 2); }, {"ebla::qdot(stored)", "2 elements", "3"});
  y[2] = inf;
  expect_invalid([&] { ebla::qdot(s, y.data(), 3); }, {"ebla::qdot(stored)", "y[2] = inf"});
  y[2] = nan;
  expect_invalid([&] { ebla::qdot(s, y.data(), 3); }, {"ebla::qdot(stored)", "y[2] = nan"});
  expect_invalid([&] { ebla::qdot(s, static_cast<const double*>(nullptr), 3); }, {"ebla::qdot(stored)", "y is null"});
}

}  // namespace
