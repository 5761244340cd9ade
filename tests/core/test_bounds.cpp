// The error-bound constants of <ebla/core/bounds.hpp> against independent evidence.
//
// Every reference value is computed here from the mathematics, in __float128
// (libquadmath), never copied from the implementation:
//  - gamma_n against n u / (1 - n u) and against products of worst-case and random
//    rounding errors (Higham 2002 Lemma 3.1 = seed 000 Lemma 2.1);
//  - gamma~_n(lambda) with the Higham-Mary probability P(lambda) (Higham & Mary 2019,
//    Theorem 2.4) and the variance-informed p_b (seed 000 Lemma 2.2) by Monte Carlo:
//    the observed frequency of |prod (1 + delta_i)^(rho_i) - 1| > gamma~_n(lambda)
//    must not exceed the stated failure probability beyond sampling noise;
//  - sigma^2 = n Var(log(1 + delta)), delta ~ U[-u, u], against the closed form,
//    a power series of the moments of delta and a quadrature;
//  - hm_lambda / vibea_lambda as inverses of the probabilities;
//  - p_b >= P(lambda) (the variance-informed bound is the sharper) where the bound
//    is not trivially certain, and the exact point beyond which it is not.
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../quad_vector.hpp"

namespace {

namespace bounds = ebla::bounds;

__extension__ typedef __float128 quad;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();
constexpr double eps = std::numeric_limits<double>::epsilon();

quad abs_q(quad x) { return x < 0 ? -x : x; }

std::string pow2_name(double u) { return "2^" + std::to_string(std::ilogb(u)); }

// ---------------------------------------------------------------------------------
// Products of rounding errors, evaluated in __float128 (113-bit significand: its own
// rounding, at most ~n 2^-113 relative, is far below every bound tested here).

// prod_i (1 + delta_i)^(rho_i); the divisions are collected into one denominator.
quad product(const std::vector<double>& delta, const std::vector<int>& rho) {
  quad num = 1, den = 1;
  for (std::size_t i = 0; i < delta.size(); ++i) {
    if (rho[i] > 0) num *= 1 + quad(delta[i]);
    else den *= 1 + quad(delta[i]);
  }
  return num / den;
}

quad deviation(const std::vector<double>& delta, const std::vector<int>& rho) {
  return abs_q(product(delta, rho) - 1);
}

// u (2x - 1) with x a 53-bit uniform in [0, 1): exact for u a power of two, in [-u, u).
double uniform_delta(std::uint64_t bits, double u) {
  const double x = static_cast<double>(bits >> 11) * 0x1p-53;
  return u * (2.0 * x - 1.0);
}

// ---------------------------------------------------------------------------------
// gamma_n (Higham 2002 Lemma 3.1; seed 000 Lemma 2.1)

// gamma_n at values checked by hand and against n u / (1 - n u) in __float128.
TEST(Gamma, MatchesFormulaAtHandCheckedValues) {
  EXPECT_EQ(bounds::gamma(1, 0x1p-11), 1.0 / 2047.0);  // 2^-11 / (1 - 2^-11) = 1 / 2047
  EXPECT_EQ(bounds::gamma(2047, 0x1p-11), 2047.0);     // (2047/2048) / (1/2048)
  EXPECT_EQ(bounds::gamma(1, 0.5), 1.0);
  EXPECT_EQ(bounds::gamma(0, 0x1p-11), 0.0);
  EXPECT_EQ(bounds::gamma(15, 0x1p-4), 15.0);  // (15/16) / (1/16)
  const struct { double n, u; } cases[] = {
      {10, 0x1p-24}, {1, 0x1p-53}, {1e6, 0x1p-24}, {3, 0x1p-8}, {1e15, 0x1p-53}};
  for (const auto& c : cases) {
    const quad nu = quad(c.n) * quad(c.u);
    const quad exact = nu / (1 - nu);
    const double got = bounds::gamma(c.n, c.u);
    // n u and 1 - n u are exact in double, so one correctly rounded division remains
    EXPECT_LE(double(abs_q(quad(got) - exact) / exact), 0x1p-53) << "n=" << c.n << " u=" << c.u;
  }
}

// No deterministic bound exists once n u >= 1: gamma_n is +infinity.
TEST(Gamma, IsInfiniteWhenNuReachesOne) {
  EXPECT_EQ(bounds::gamma(2048, 0x1p-11), inf);
  EXPECT_EQ(bounds::gamma(16, 0x1p-4), inf);
  EXPECT_EQ(bounds::gamma(2, 0.5), inf);
  EXPECT_EQ(bounds::gamma(1e6, 0x1p-11), inf);
  EXPECT_EQ(bounds::gamma(1e300, 0x1p-53), inf);
  EXPECT_TRUE(std::isfinite(bounds::gamma(std::nextafter(2048.0, 0.0), 0x1p-11)));
}

TEST(Gamma, RejectsInvalidArguments) {
  for (double u : {0.0, -0x1p-11, std::nextafter(0.5, 1.0), 1.0, nan, inf, -inf})
    EXPECT_THROW(bounds::gamma(10, u), ebla::InvalidArgument) << "u=" << u;
  for (double n : {-1.0, -1e-300, nan, inf})
    EXPECT_THROW(bounds::gamma(n, 0x1p-11), ebla::InvalidArgument) << "n=" << n;
  EXPECT_NO_THROW(bounds::gamma(10, 0.5));  // u = 1/2 is admissible
}

// ---------------------------------------------------------------------------------
// Deterministic bound |prod (1 + delta_i)^(rho_i) - 1| <= gamma_n (Lemma 3.1 / 2.1).
// gamma_n is returned rounded to double, so it may sit up to half an ulp below the
// exact constant; equality is attained (n = 1, delta = -u, rho = -1), hence the slack.

struct DeterministicCase {
  double u;
  std::vector<int> sizes;
};

const std::vector<DeterministicCase>& deterministic_cases() {
  static const std::vector<DeterministicCase> cases = {
      {0x1p-4, {1, 2, 5, 10, 15}},
      {0x1p-8, {1, 10, 100, 255}},
      {0x1p-11, {1, 10, 100, 1000, 2047}},
  };
  return cases;
}

// Sign patterns: 0 all +, 1 all -, 2 alternating, 3 random.
int pattern_sign(int pattern, int i, std::mt19937_64& rng) {
  switch (pattern) {
    case 0: return 1;
    case 1: return -1;
    case 2: return i % 2 == 0 ? 1 : -1;
    default: return (rng() & 1u) != 0 ? 1 : -1;
  }
}

void expect_within_gamma(const std::vector<double>& delta, const std::vector<int>& rho, double u,
                         const std::string& what) {
  const int n = static_cast<int>(delta.size());
  const double g = bounds::gamma(n, u);
  EXPECT_LE(double(deviation(delta, rho)), g * (1 + 4 * eps)) << what << " u=" << u << " n=" << n;
}

// Lemma 3.1 at the extreme errors delta_i = +-u with every exponent pattern.
TEST(DeterministicBound, HoldsForWorstCaseProducts) {
  std::mt19937_64 rng(20020101);
  int count = 0;
  for (const auto& c : deterministic_cases()) {
    for (int n : c.sizes) {
      for (int dp = 0; dp < 4; ++dp) {
        for (int rp = 0; rp < 4; ++rp) {
          std::vector<double> delta(n);
          std::vector<int> rho(n);
          for (int i = 0; i < n; ++i) {
            delta[i] = c.u * pattern_sign(dp, i, rng);
            rho[i] = pattern_sign(rp, i, rng);
          }
          expect_within_gamma(delta, rho, c.u, "delta pattern " + std::to_string(dp) +
                                                   ", rho pattern " + std::to_string(rp));
          ++count;
        }
      }
    }
  }
  EXPECT_EQ(count, 14 * 16);
}

// Lemma 3.1 for random delta_i in [-u, u] and random exponents.
TEST(DeterministicBound, HoldsForRandomProducts) {
  std::mt19937_64 rng(31);
  for (const auto& c : deterministic_cases()) {
    for (int n : c.sizes) {
      for (int trial = 0; trial < 400; ++trial) {
        std::vector<double> delta(n);
        std::vector<int> rho(n);
        for (int i = 0; i < n; ++i) {
          const std::uint64_t bits = rng();
          delta[i] = uniform_delta(bits, c.u);
          rho[i] = (bits & 1u) != 0 ? -1 : 1;
        }
        expect_within_gamma(delta, rho, c.u, "random trial " + std::to_string(trial));
      }
    }
  }
}

// gamma_n is not loose: (1 - u)^-n - 1 >= n u = (1 - n u) gamma_n, equality at n = 1.
TEST(DeterministicBound, IsAttainedToFirstOrder) {
  for (const auto& c : deterministic_cases()) {
    for (int n : c.sizes) {
      const std::vector<double> delta(n, -c.u);
      const std::vector<int> rho(n, -1);
      const double worst = double(deviation(delta, rho));
      const double g = bounds::gamma(n, c.u);
      EXPECT_GE(worst, (1 - n * c.u) * g * (1 - 4 * eps)) << "u=" << c.u << " n=" << n;
      if (n == 1) {
        EXPECT_NEAR(worst, g, 2 * eps * g);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// The stated formulas of gamma~_n, P(lambda) and p_b, evaluated in __float128.

// Var(log(1 + delta)), delta ~ U[-u, u], from the moments E delta^(2m) = u^(2m)/(2m+1)
// and log(1 + d) = sum_k (-1)^(k+1) d^k / k:
//   E L   = -sum_m u^(2m) / (2m (2m + 1)),
//   E L^2 =  sum_m u^(2m) / (2m + 1) sum_{j+k=2m} 1/(j k) = sum_m u^(2m) H_(2m-1) / (m (2m + 1)).
// All terms of E L^2 are positive, so there is no cancellation even for u = 2^-53.
quad variance_by_moments(double u) {
  const quad u2 = quad(u) * quad(u);
  quad mean = 0, second = 0, power = 1, harmonic = 1;  // harmonic = H_(2m-1)
  for (int m = 1; m <= 400; ++m) {
    power *= u2;
    if (m > 1) harmonic += quad(1) / (2 * m - 2) + quad(1) / (2 * m - 1);
    const quad t2 = power * harmonic / (quad(m) * (2 * m + 1));
    mean -= power / (quad(2 * m) * (2 * m + 1));
    second += t2;
    if (t2 < second * quad(1e-36)) break;
  }
  return second - mean * mean;
}

// The printed closed form 1 + (u^2 - 1) (log((1+u)/(1-u)))^2 / (4 u^2), with
// log((1+u)/(1-u)) = 2 atanh(u). The subtraction costs ~log2(3/u^2) of the 113 bits.
quad variance_closed_form(double u) {
  const quad uq = u;
  // log((1+u)/(1-u)) itself loses ~log2(1/u) bits when (1+u)/(1-u) is rounded: the
  // same number, but too inaccurate for the variance at u = 2^-24; atanh keeps them
  const quad l = logq((1 + uq) / (1 - uq));
  const quad l2 = 2 * atanhq(uq);
  EXPECT_LE(double(abs_q(l - l2) / l2), 0x1p-110 / u) << "log vs atanh form, u=" << u;
  return 1 + (uq * uq - 1) * l2 * l2 / (4 * uq * uq);
}

quad hm_probability_q(double lambda, double u) {
  const quad a = quad(lambda) * (1 - quad(u));
  return 1 - 2 * expq(-a * a / 2);
}

quad vibea_probability_q(double lambda, double u, double n) {
  const quad uq = u, sn = sqrtq(quad(n));
  const quad sigma2 = quad(n) * variance_by_moments(u);
  const quad num = quad(lambda) * quad(lambda) * quad(n) * uq * uq;
  const quad den = 2 * (sigma2 + quad(lambda) * sn * uq * uq / (3 * (1 - uq)));
  return 1 - 2 * expq(-num / den);
}

// gamma~_n (Higham & Mary 2019, Thm 2.4), P(lambda) and p_b (seed 000, Lemma 2.2).
TEST(StatedFormulas, ProbabilisticConstantsMatchTheirDefinitions) {
  for (double u : {0x1p-53, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-4, 0.5}) {
    for (double n : {1.0, 10.0, 1000.0, 1e6}) {
      for (double lambda : {0.0, 0.5, 1.0, 2.0, 5.0}) {
        const quad uq = u;
        const quad x = quad(lambda) * sqrtq(quad(n)) * uq + quad(n) * uq * uq / (1 - uq);
        const double got = bounds::gamma_tilde(n, u, lambda);
        const std::string at = "u=" + pow2_name(u) + " n=" + std::to_string(n) +
                               " lambda=" + std::to_string(lambda);
        if (x > quad(std::log(std::numeric_limits<double>::max()))) {
          EXPECT_EQ(got, inf) << at;  // exceeds the double range
        } else {
          // the exponent carries a few ulps, amplified by x in exp(x)
          const quad gt = expm1q(x);
          EXPECT_LE(double(abs_q(quad(got) - gt) / gt), 4 * eps * (2 + double(x))) << at;
        }
        EXPECT_NEAR(bounds::hm_probability(lambda, u), double(hm_probability_q(lambda, u)), 1e-15)
            << at;
        EXPECT_NEAR(bounds::vibea_probability(lambda, u, n),
                    double(vibea_probability_q(lambda, u, n)), 2e-15)
            << at;
      }
    }
  }
}

TEST(StatedFormulas, RejectInvalidArguments) {
  for (double lambda : {-1.0, nan, inf}) {
    EXPECT_THROW(bounds::gamma_tilde(10, 0x1p-11, lambda), ebla::InvalidArgument);
    EXPECT_THROW(bounds::hm_probability(lambda, 0x1p-11), ebla::InvalidArgument);
    EXPECT_THROW(bounds::vibea_probability(lambda, 0x1p-11, 10), ebla::InvalidArgument);
  }
  for (double u : {0.0, 0.75, nan}) {
    EXPECT_THROW(bounds::gamma_tilde(10, u, 1), ebla::InvalidArgument);
    EXPECT_THROW(bounds::hm_probability(1, u), ebla::InvalidArgument);
    EXPECT_THROW(bounds::vibea_probability(1, u, 10), ebla::InvalidArgument);
    EXPECT_THROW(bounds::vibea_sigma2(10, u), ebla::InvalidArgument);
  }
  for (double n : {-1.0, nan}) {
    EXPECT_THROW(bounds::gamma_tilde(n, 0x1p-11, 1), ebla::InvalidArgument);
    EXPECT_THROW(bounds::vibea_probability(1, 0x1p-11, n), ebla::InvalidArgument);
    EXPECT_THROW(bounds::vibea_sigma2(n, 0x1p-11), ebla::InvalidArgument);
  }
}

// ---------------------------------------------------------------------------------
// Monte Carlo: gamma~_n(lambda) fails at most as often as stated
// (Higham & Mary 2019 Thm 2.4: failure <= 1 - P(lambda); seed 000 Lemma 2.2:
// failure <= 1 - p_b(lambda, u, n)), for delta_i i.i.d. U[-u, u].

constexpr int kTrials = 20000;

enum class Exponents { multiply, mixed };  // all rho_i = +1, or rho_i = +-1 at random

// |prod (1 + delta_i)^(rho_i) - 1| of `trials` independent products of n factors.
ebla_test::QuadVector simulate(double u, int n, Exponents e, int trials, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  ebla_test::QuadVector dev(static_cast<std::size_t>(trials));
  for (int t = 0; t < trials; ++t) {
    quad num = 1, den = 1;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t bits = rng();
      const quad f = 1 + quad(uniform_delta(bits, u));
      if (e == Exponents::mixed && (bits & 1u) != 0) den *= f;
      else num *= f;
    }
    dev[t] = abs_q(num / den - 1);
  }
  return dev;
}

double failure_frequency(const ebla_test::QuadVector& dev, double bound) {
  int fails = 0;
  for (quad d : dev) fails += d > quad(bound) ? 1 : 0;
  return static_cast<double>(fails) / static_cast<double>(dev.size());
}

// Largest frequency compatible with a failure probability `stated`: four binomial
// standard deviations plus one trial of sampling noise.
double allowed_frequency(double stated, int trials) {
  return stated + 4 * std::sqrt(stated * (1 - stated) / trials) + 1.0 / trials;
}

struct NamedLambda {
  std::string name;
  double lambda;
};

std::vector<NamedLambda> lambdas_for(double u, int n) {
  std::vector<NamedLambda> out;
  for (double f : {0.05, 0.2, 0.5}) {
    out.push_back({"hm_lambda(" + std::to_string(f).substr(0, 4) + ")", bounds::hm_lambda(f, u)});
    out.push_back(
        {"vibea_lambda(" + std::to_string(f).substr(0, 4) + ")", bounds::vibea_lambda(f, u, n)});
  }
  for (double l : {1.0, 1.5, 2.0, 2.5})
    out.push_back({"fixed " + std::to_string(l).substr(0, 3), l});
  return out;
}

void expect_frequency_within(double observed, double stated, const std::string& what) {
  if (!(stated < 1)) return;  // no guarantee claimed
  EXPECT_LE(observed, allowed_frequency(stated, kTrials)) << what;
}

void check_monte_carlo(double u, int n, Exponents e) {
  const std::uint64_t seed = 0x5eedu + 7919u * n + 104729u * -std::ilogb(u) +
                             (e == Exponents::mixed ? 1u : 0u);
  const ebla_test::QuadVector dev = simulate(u, n, e, kTrials, seed);
  const char* mode = e == Exponents::mixed ? "mixed" : "multiply";
  for (const auto& nl : lambdas_for(u, n)) {
    const double observed = failure_frequency(dev, bounds::gamma_tilde(n, u, nl.lambda));
    const double hm_stated = 1 - bounds::hm_probability(nl.lambda, u);
    const double vi_stated = 1 - bounds::vibea_probability(nl.lambda, u, n);
    std::printf("  u=%-6s n=%-5d %-8s %-19s lambda=%7.4f  stated hm=%8.5f vibea=%8.5f"
                "  observed=%.5f\n",
                pow2_name(u).c_str(), n, mode, nl.name.c_str(), nl.lambda, hm_stated, vi_stated,
                observed);
    const std::string what = std::string(mode) + " " + nl.name;
    expect_frequency_within(observed, hm_stated, "Higham-Mary P, " + what);
    expect_frequency_within(observed, vi_stated, "variance-informed p_b, " + what);
  }
}

class MonteCarlo : public ::testing::TestWithParam<std::tuple<double, int>> {};

// Higham & Mary 2019 Thm 2.4 and seed 000 Lemma 2.2, with and without divisions.
TEST_P(MonteCarlo, ProbabilisticBoundsFailNoMoreOftenThanStated) {
  const auto [u, n] = GetParam();
  check_monte_carlo(u, n, Exponents::multiply);
  check_monte_carlo(u, n, Exponents::mixed);
}

INSTANTIATE_TEST_SUITE_P(Cases, MonteCarlo,
                         ::testing::Combine(::testing::Values(0x1p-4, 0x1p-8, 0x1p-11),
                                            ::testing::Values(10, 100, 1000)),
                         [](const auto& info) {
                           return "u2m" + std::to_string(-std::ilogb(std::get<0>(info.param))) +
                                  "_n" + std::to_string(std::get<1>(info.param));
                         });

// The Monte Carlo check has teeth: the same acceptance rule rejects constants that
// are too small (Lemma 2.2 / Thm 2.4 with a wrong gamma~), and the variance-informed
// constant is within an order of magnitude of the truth where it is tight.
TEST(MonteCarloPower, RejectsTooSmallConstants) {
  const double u = 0x1p-11;
  const int n = 1000;
  const ebla_test::QuadVector dev = simulate(u, n, Exponents::mixed, kTrials, 777);

  // gamma~ without the sqrt(n) of the random walk, at the lambda of a 50% HM claim
  const double l_hm = bounds::hm_lambda(0.5, u);
  const double no_sqrt_n = std::expm1(l_hm * u + n * u * u / (1 - u));
  const double f1 = failure_frequency(dev, no_sqrt_n);
  std::printf("  gamma~ without sqrt(n): stated %.3f observed %.5f\n", 0.5, f1);
  EXPECT_GT(f1, allowed_frequency(0.5, kTrials));

  // half of gamma~ at the lambda of a 20% variance-informed claim
  const double l_vi = bounds::vibea_lambda(0.2, u, n);
  const double f2 = failure_frequency(dev, 0.5 * bounds::gamma_tilde(n, u, l_vi));
  std::printf("  half gamma~ (vibea 0.2): stated %.3f observed %.5f\n", 0.2, f2);
  EXPECT_GT(f2, allowed_frequency(0.2, kTrials));

  // the true constant at a 50% variance-informed claim fails in > 1/10 of that
  const double l_half = bounds::vibea_lambda(0.5, u, n);
  const double f3 = failure_frequency(dev, bounds::gamma_tilde(n, u, l_half));
  std::printf("  true gamma~ (vibea 0.5): stated %.3f observed %.5f\n", 0.5, f3);
  EXPECT_GT(f3, 0.05);
}

// ---------------------------------------------------------------------------------
// sigma^2 = n Var(log(1 + delta)), delta ~ U[-u, u] (seed 000, Lemma 2.2).

const double kSigmaUs[] = {0x1p-1, 0x1p-2, 0x1p-4, 0x1p-8, 0x1p-11, 0x1p-24, 0x1p-53};

double relative_error(double got, quad want) { return double(abs_q(quad(got) - want) / want); }

// The printed closed form, in __float128: loses log2(3/u^2) bits to cancellation, so it
// keeps >= 1e-12 relative accuracy down to u = 2^-24 but not at u = 2^-53 (~2%).
TEST(VibeaSigma2, MatchesClosedFormVariance) {
  for (double u : kSigmaUs) {
    if (u < 0x1p-24) continue;
    for (double n : {1.0, 1000.0}) {
      const quad want = quad(n) * variance_closed_form(u);
      EXPECT_LE(relative_error(bounds::vibea_sigma2(n, u), want), 1e-12) << "u=" << pow2_name(u);
    }
  }
}

// The moment series, free of cancellation, for every u including 2^-53.
TEST(VibeaSigma2, MatchesMomentSeries) {
  for (double u : kSigmaUs) {
    const quad want = variance_by_moments(u);
    if (u >= 0x1p-24) {
      EXPECT_LE(double(abs_q(want - variance_closed_form(u)) / want), 1e-15);
    }
    const std::string at = "u=" + pow2_name(u);
    EXPECT_LE(relative_error(bounds::vibea_sigma2(1, u), want), 1e-13) << at;
    EXPECT_LE(relative_error(bounds::vibea_sigma2(1e6, u), 1e6 * want), 1e-13) << at;
  }
}

// E g(L) over U[-u, u] by the midpoint rule with `cells` cells.
template <class F>
quad midpoint_mean(double u, int cells, F g) {
  const quad h = 2 * quad(u) / cells;
  quad sum = 0;
  for (int i = 0; i < cells; ++i) sum += g(log1pq(-quad(u) + (i + quad(0.5)) * h));
  return sum / cells;
}

quad variance_by_midpoint(double u, int cells) {
  const quad mean = midpoint_mean(u, cells, [](quad l) { return l; });
  return midpoint_mean(u, cells, [mean](quad l) { return (l - mean) * (l - mean); });
}

// Quadrature of the variance (midpoint rule, Richardson-extrapolated) for large u.
TEST(VibeaSigma2, MatchesNumericIntegrationForLargeU) {
  for (double u : {0x1p-1, 0x1p-2, 0x1p-4}) {
    const quad coarse = variance_by_midpoint(u, 4000);
    const quad fine = variance_by_midpoint(u, 8000);
    const quad want = (4 * fine - coarse) / 3;
    EXPECT_LE(relative_error(bounds::vibea_sigma2(1, u), want), 1e-12) << "u=" << pow2_name(u);
    EXPECT_LE(relative_error(bounds::vibea_sigma2(7, u), 7 * want), 1e-12) << "u=" << pow2_name(u);
  }
}

// ---------------------------------------------------------------------------------
// hm_lambda and vibea_lambda invert the probabilities and give the smallest lambda.

const double kFailures[] = {1e-15, 1e-9, 1e-3, 0.05, 0.2, 0.5, 0.9, 0.999};
const double kUs[] = {0x1p-53, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-4, 0x1p-2, 0.5};

// Higham & Mary 2019 Thm 2.4: P(hm_lambda(f)) = 1 - f, and no smaller lambda reaches it.
TEST(LambdaInverse, HmLambdaInvertsHmProbability) {
  for (double u : kUs) {
    for (double f : kFailures) {
      const double lambda = bounds::hm_lambda(f, u);
      const double p = bounds::hm_probability(lambda, u);
      EXPECT_NEAR(p, 1 - f, 1e-12 * (1 - f)) << "u=" << pow2_name(u) << " f=" << f;
      if (f >= 1e-9) {  // else lambda (1 - 1e-6) moves 1 - f by less than an ulp
        EXPECT_LT(bounds::hm_probability(lambda * (1 - 1e-6), u), 1 - f);
      }
    }
  }
}

// Seed 000 Lemma 2.2: p_b(vibea_lambda(f)) = 1 - f, and no smaller lambda reaches it.
TEST(LambdaInverse, VibeaLambdaInvertsVibeaProbability) {
  for (double u : kUs) {
    for (double n : {1.0, 10.0, 1000.0, 1e6, 1e9}) {
      for (double f : kFailures) {
        const double lambda = bounds::vibea_lambda(f, u, n);
        const double p = bounds::vibea_probability(lambda, u, n);
        EXPECT_NEAR(p, 1 - f, 1e-12 * (1 - f)) << "u=" << pow2_name(u) << " n=" << n << " f=" << f;
        if (f >= 1e-9) {  // else lambda (1 - 1e-6) moves 1 - f by less than an ulp
          EXPECT_LT(bounds::vibea_probability(lambda * (1 - 1e-6), u, n), 1 - f);
        }
      }
    }
  }
  // an empty product is exactly 1: lambda = 0 already holds with certainty
  EXPECT_EQ(bounds::vibea_lambda(0.05, 0x1p-11, 0), 0.0);
  EXPECT_EQ(bounds::vibea_probability(0, 0x1p-11, 0), 1.0);
}

// Seed 000 Theorems 3.9/3.10: the failure sum for one entry, written out from the theorem's
// double sum over blocks i and products j with p_b in __float128 (vibea_probability_q).
quad tensor_core_failure_q(double lambda, double u, int n, int b) {
  const int q = (n + b - 1) / b;
  quad sum = 0;
  for (int i = 1; i <= q; ++i)
    for (int j = (i - 1) * b + 1; j <= i * b; ++j) {
      const int c1 = b - ((j - 1) % b) + b * (q - std::max(2, i) + 1), c2 = q - i + 1;
      sum += (1 - vibea_probability_q(lambda, u, c1)) + (1 - vibea_probability_q(lambda, u, c2));
    }
  return sum;
}

TEST(TensorCoreFailure, MatchesTheTheoremsSum) {
  for (double u : {0x1p-24, 0x1p-11, 0x1p-8})
    for (int n : {1, 7, 16, 100, 1000})
      for (int b : {1, 4, 16})
        for (double lambda : {0.5, 2.0, 6.0, 12.0}) {
          const double got = bounds::tensor_core_failure(lambda, u, u, n, b);
          const quad want = tensor_core_failure_q(lambda, u, n, b);
          EXPECT_LE(double(abs_q(quad(got) - want) / want), 1e-12)
              << "u=" << pow2_name(u) << " n=" << n << " b=" << b << " lambda=" << lambda;
        }
}

// The lambda of "fails with probability <= f": the sum at lambda is at most f (per entry, or
// times the m t entries of the product), and at a lambda 1e-6 smaller it is not.
TEST(TensorCoreFailure, LambdaMakesTheStatedProbabilityTrue) {
  for (double u : {0x1p-24, 0x1p-11})
    for (int n : {2, 100, 1000})
      for (int b : {1, 16})
        for (double f : {1e-2, 1e-6})
          for (double entries : {1.0, 8192.0}) {
            const double lambda = bounds::tensor_core_lambda(f, u, u, n, b, entries);
            const std::string at = "u=" + pow2_name(u) + " n=" + std::to_string(n) + " b=" + std::to_string(b) +
                                   " f=" + std::to_string(f) + " entries=" + std::to_string(entries);
            EXPECT_LE(double(quad(entries) * tensor_core_failure_q(lambda, u, n, b)), f) << at;
            EXPECT_GT(double(quad(entries) * tensor_core_failure_q(lambda * (1 - 1e-6), u, n, b)), f) << at;
          }
  // seed 000's Fig. 6 (k = 32768, b = 16, binary32 sums, failure 0.01): lambda 6.29 per entry
  // and 12.31 for the 1024 x 8 product, where one gamma~ with failure 0.01 / 2 gives 2.01, at
  // which the theorem's own sum is far above 1
  const double U = 0x1p-24;
  EXPECT_NEAR(bounds::tensor_core_lambda(0.01, U, U, 32768, 16), 6.29, 0.005);
  EXPECT_NEAR(bounds::tensor_core_lambda(0.01, U, U, 32768, 16, 1024 * 8), 12.31, 0.005);
  EXPECT_GT(bounds::tensor_core_failure(bounds::vibea_lambda(0.005, U, 32767), U, U, 32768, 16), 100.0);
  EXPECT_THROW(bounds::tensor_core_failure(1, U, U, 10, 0), ebla::InvalidArgument);
  EXPECT_THROW(bounds::tensor_core_failure(1, U, U, 10.5, 4), ebla::InvalidArgument);
  EXPECT_THROW(bounds::tensor_core_lambda(0, U, U, 10, 4), ebla::InvalidArgument);
  EXPECT_THROW(bounds::tensor_core_lambda(0.1, U, U, 10, 4, 0.5), ebla::InvalidArgument);
  EXPECT_EQ(bounds::tensor_core_lambda(0.1, U, U, 0, 4), 0.0);
}

TEST(LambdaInverse, RejectsInvalidFailureProbabilities) {
  for (double f : {0.0, 1.0, -0.1, 1.5, nan, inf, -inf}) {
    EXPECT_THROW(bounds::hm_lambda(f, 0x1p-11), ebla::InvalidArgument) << "f=" << f;
    EXPECT_THROW(bounds::vibea_lambda(f, 0x1p-11, 100), ebla::InvalidArgument) << "f=" << f;
  }
  EXPECT_THROW(bounds::hm_lambda(0.05, 0), ebla::InvalidArgument);
  EXPECT_THROW(bounds::vibea_lambda(0.05, 0x1p-11, -1), ebla::InvalidArgument);
}

// ---------------------------------------------------------------------------------
// p_b >= P(lambda). Comparing the exponents, p_b >= P exactly when
//   lambda <= lambda_c = 3 sqrt(n) (1 - u) (1/(1-u)^2 - Var/u^2)   (~ 2 sqrt(n)).
// For lambda >= sqrt(n)/(1-u) the bound is certain anyway: lambda sqrt(n) u >= n u/(1-u)
// >= -n log(1-u) >= |sum log(1 + delta_i)^(rho_i)|, so gamma~ covers the worst case.
// Since lambda_c > sqrt(n)/(1-u), p_b is the sharper wherever the bound is not certain.

double crossover_lambda(double u, double n) {
  const quad uq = u;
  const quad c = 3 * sqrtq(quad(n)) * (1 - uq) *
                 (1 / ((1 - uq) * (1 - uq)) - variance_by_moments(u) / (uq * uq));
  return double(c);
}

TEST(VarianceInformed, IsAtLeastHmWhereBoundIsNotCertain) {
  int count = 0;
  for (double u : kUs) {
    for (double n : {1.0, 2.0, 10.0, 100.0, 1e4, 1e6}) {
      const double certain = std::sqrt(n) / (1 - u);
      EXPECT_GT(crossover_lambda(u, n), certain) << "u=" << pow2_name(u) << " n=" << n;
      for (int k = 0; k <= 64; ++k) {
        const double lambda = certain * k / 64.0;
        EXPECT_GE(bounds::vibea_probability(lambda, u, n), bounds::hm_probability(lambda, u))
            << "u=" << pow2_name(u) << " n=" << n << " lambda=" << lambda;
        ++count;
      }
    }
  }
  EXPECT_EQ(count, 7 * 6 * 65);
}

// The property is not unconditional: beyond lambda_c the Higham-Mary probability is
// larger, while both are positive (e.g. n = 1, lambda = 3). There the bound is certain.
TEST(VarianceInformed, IsWeakerThanHmOnlyBeyondCrossover) {
  for (double u : kUs) {
    for (double n : {1.0, 2.0, 5.0}) {  // larger n: both round to 1 near lambda_c
      const double lc = crossover_lambda(u, n);
      const std::string at = "u=" + pow2_name(u) + " n=" + std::to_string(n);
      const double below = lc * 0.99, above = lc * 1.01;
      EXPECT_GT(bounds::vibea_probability(below, u, n), bounds::hm_probability(below, u)) << at;
      EXPECT_LT(bounds::vibea_probability(above, u, n), bounds::hm_probability(above, u)) << at;
      EXPECT_GT(bounds::vibea_probability(lc * 1.01, u, n), 0.0) << at;
      // certain: gamma~ >= (1 - u)^-n - 1, the largest possible |prod - 1|
      const std::vector<double> delta(static_cast<std::size_t>(n), -u);
      const std::vector<int> rho(static_cast<std::size_t>(n), -1);
      EXPECT_GE(bounds::gamma_tilde(n, u, lc), double(deviation(delta, rho))) << at;
    }
  }
}

}  // namespace

// (1 + delta)^d - 1 rounded up, against __float128, for the deltas of the units (u, 2u,
// truncation terms) and depths from 1 to 10^8.
TEST(Bounds, GrowthIsAnUpperBoundWithinAFewUlps) {
  int checked = 0;
  for (double delta : {0x1p-53, 0x1p-24, 0x1p-23, 3 * 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-3})
    for (double d : {1.0, 2.0, 7.0, 64.0, 1000.0, 65536.0, 1e6, 1e8}) {
      const __float128 exact = expm1q(static_cast<__float128>(d) * log1pq(static_cast<__float128>(delta)));
      if (exact > static_cast<__float128>(1e300)) continue;
      const double g = ebla::bounds::growth(delta, d);
      EXPECT_GE(static_cast<__float128>(g), exact) << delta << " " << d;
      EXPECT_LE(static_cast<__float128>(g), exact * (1 + static_cast<__float128>(0x1p-40))) << delta << " " << d;
      ++checked;
    }
  EXPECT_GE(checked, 50);
  EXPECT_EQ(ebla::bounds::growth(0, 5), 0.0);
  EXPECT_EQ(ebla::bounds::growth(0x1p-24, 0), 0.0);
}
