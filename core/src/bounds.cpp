#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace ebla::bounds {
namespace {

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void check_u(const char* fn, double u) {
  if (!(u > 0.0 && u <= 0.5)) throw_invalid(fn, "unit roundoff u = " + str(u) + " is outside (0, 1/2]");
}
void check_n(const char* fn, double n) {
  if (!(n >= 0.0) || std::isinf(n)) throw_invalid(fn, "n = " + str(n) + " must be finite and >= 0");
}
void check_lambda(const char* fn, double lambda) {
  if (!(lambda >= 0.0) || std::isinf(lambda))
    throw_invalid(fn, "lambda = " + str(lambda) + " must be finite and >= 0");
}
void check_failure(const char* fn, double failure) {
  if (!(failure > 0.0 && failure < 1.0))
    throw_invalid(fn, "failure probability " + str(failure) + " is outside (0, 1)");
}

}  // namespace

double gamma(double n, double u) {
  check_n("ebla::bounds::gamma", n);
  check_u("ebla::bounds::gamma", u);
  const double nu = n * u;
  if (nu >= 1.0) return std::numeric_limits<double>::infinity();
  return nu / (1.0 - nu);
}

double growth(double delta, double d) {
  if (delta == 0 || d == 0) return 0;
  const double x = d * std::log1p(delta);
  // a margin of a few ulps of x covers log1p, the product and expm1 (whose relative error
  // grows as 1 + x), and never less than 2^-48
  const double margin = std::max(0x1p-48, (16 + 4 * x) * 0x1p-53);
  return std::expm1(x) * (1 + margin) + 0x1p-1074;
}

double gamma_tilde(double n, double u, double lambda) {
  check_n("ebla::bounds::gamma_tilde", n);
  check_u("ebla::bounds::gamma_tilde", u);
  check_lambda("ebla::bounds::gamma_tilde", lambda);
  // expm1 keeps the relative accuracy when the exponent is tiny (u = 2^-53)
  return std::expm1(lambda * std::sqrt(n) * u + n * u * u / (1.0 - u));
}

double hm_probability(double lambda, double u) {
  check_lambda("ebla::bounds::hm_probability", lambda);
  check_u("ebla::bounds::hm_probability", u);
  const double a = lambda * (1.0 - u);
  return 1.0 - 2.0 * std::exp(-a * a / 2.0);
}

double hm_lambda(double failure, double u) {
  check_failure("ebla::bounds::hm_lambda", failure);
  check_u("ebla::bounds::hm_lambda", u);
  // 2 exp(-lambda^2 (1-u)^2 / 2) = failure
  return std::sqrt(2.0 * std::log(2.0 / failure)) / (1.0 - u);
}

double vibea_sigma2(double n, double u) {
  check_n("ebla::bounds::vibea_sigma2", n);
  check_u("ebla::bounds::vibea_sigma2", u);
  // The printed form 1 + (u^2 - 1) (log((1+u)/(1-u)))^2 / (4u^2) subtracts two numbers
  // close to 1 (all digits cancel for u = 2^-53). With log((1+u)/(1-u)) = 2 atanh(u) and
  // r = atanh(u)/u = 1 + u^2 s, s = sum_{k>=1} u^(2k-2)/(2k+1):
  //   1 - (1 - u^2) r^2 = u^2 r^2 - (r - 1)(r + 1) = u^2 (r^2 - s (r + 1)).
  const double u2 = u * u;
  double s = 0.0, term = 1.0;
  for (int k = 1; k < 200; ++k) {
    const double add = term / (2.0 * k + 1.0);
    s += add;
    if (add < 1e-20 * s) break;
    term *= u2;
  }
  const double r = 1.0 + u2 * s;
  return n * u2 * (r * r - s * (r + 1.0));
}

namespace {
// 1 - p_b(lambda, u, n) of Lemma 2.2 with sigma^2 = n var1 (var1 = Var(log(1 + delta))):
// Bernstein's inequality for the deviation lambda sqrt(n) u of sum log(1 + delta_i).
double bernstein_failure(double lambda, double u, double n, double var1) {
  if (n == 0.0) return 0.0;  // an empty product is exactly 1
  const double t = lambda * std::sqrt(n) * u;
  const double bernstein = t * t / (2.0 * (n * var1 + lambda * std::sqrt(n) * u * u / (3.0 * (1.0 - u))));
  return 2.0 * std::exp(-bernstein);
}
}  // namespace

double vibea_failure(double lambda, double u, double n) {
  check_lambda("ebla::bounds::vibea_failure", lambda);
  check_u("ebla::bounds::vibea_failure", u);
  check_n("ebla::bounds::vibea_failure", n);
  return bernstein_failure(lambda, u, n, vibea_sigma2(1.0, u));
}

double vibea_probability(double lambda, double u, double n) {
  check_lambda("ebla::bounds::vibea_probability", lambda);
  check_u("ebla::bounds::vibea_probability", u);
  check_n("ebla::bounds::vibea_probability", n);
  return 1.0 - vibea_failure(lambda, u, n);
}

double vibea_lambda(double failure, double u, double n) {
  check_failure("ebla::bounds::vibea_lambda", failure);
  check_u("ebla::bounds::vibea_lambda", u);
  check_n("ebla::bounds::vibea_lambda", n);
  if (n == 0.0) return 0.0;
  // lambda^2 n u^2 = 2 L (sigma^2 + lambda sqrt(n) u^2 / (3 (1-u))), L = log(2/failure):
  // a lambda^2 - b lambda - c = 0, take the positive root
  const double L = std::log(2.0 / failure);
  const double a = n * u * u;
  const double b = 2.0 * L * std::sqrt(n) * u * u / (3.0 * (1.0 - u));
  const double c = 2.0 * L * vibea_sigma2(n, u);
  return (b + std::sqrt(b * b + 4.0 * a * c)) / (2.0 * a);
}

double tensor_core_failure(double lambda, double u_bar, double u_fma, double n, double b) {
  const char* fn = "ebla::bounds::tensor_core_failure";
  check_lambda(fn, lambda);
  check_u(fn, u_bar);
  check_u(fn, u_fma);
  check_n(fn, n);
  if (!(b >= 1.0) || std::isinf(b) || b != std::floor(b)) throw_invalid(fn, "block b = " + str(b) + " is not an integer >= 1");
  if (n != std::floor(n)) throw_invalid(fn, "n = " + str(n) + " is not an integer");
  const double q = std::ceil(n / b);
  const double var_bar = vibea_sigma2(1.0, u_bar), var_fma = vibea_sigma2(1.0, u_fma);  // sigma^2 / n
  double sum = 0;
  for (double i = 1; i <= q; ++i) {
    // the block's b products: c1 = b - r + b (q - max(2, i) + 1), r = (j - 1) mod b = 0..b-1
    const double later = b * (q - std::max(2.0, i) + 1);
    for (double r = 0; r < b; ++r) sum += bernstein_failure(lambda, u_bar, b - r + later, var_bar);
    sum += b * bernstein_failure(lambda, u_fma, q - i + 1, var_fma);  // c2, the same for the block's b products
  }
  return sum;
}

double tensor_core_lambda(double failure, double u_bar, double u_fma, double n, double b, double entries) {
  const char* fn = "ebla::bounds::tensor_core_lambda";
  check_failure(fn, failure);
  if (!(entries >= 1.0) || std::isinf(entries)) throw_invalid(fn, "entries = " + str(entries) + " must be finite and >= 1");
  if (n == 0.0) {
    tensor_core_failure(0, u_bar, u_fma, n, b);  // the arguments' checks
    return 0.0;
  }
  // the sum of 2 q b terms, each with a few roundings: evaluated at most that much too low
  const double allowance = 1 + (2 * std::ceil(n / b) * b + 16) * 0x1p-52;
  const auto holds = [&](double lambda) {
    return entries * tensor_core_failure(lambda, u_bar, u_fma, n, b) * allowance <= failure;
  };
  double lo = 0, hi = 1;
  while (!holds(hi)) {  // the sum falls to 0 as lambda grows (p_b rises with lambda)
    lo = hi;
    hi *= 2;
    if (hi > 0x1p60) throw_invalid(fn, "no lambda below 2^60 reaches failure " + str(failure));
  }
  while (hi - lo > 1e-9 * hi) {  // bisection: holds(hi) throughout
    const double mid = lo + (hi - lo) / 2;
    (holds(mid) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace ebla::bounds
