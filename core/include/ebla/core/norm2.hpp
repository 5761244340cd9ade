// The 2-norm (Frobenius norm) of many doubles without overflow or underflow of the squares.
//
// sqrt(sum v_i^2) of values near 1e160 overflows when the squares are summed directly, and
// of values near 1e-170 underflows to 0. Here the values are scaled by the power of two 2^-e
// that brings the largest magnitude into [1/2, 1) (exact: scaling by a power of two only moves
// the exponent, unless a value falls below the normal range), the scaled squares summed, and
// the square root scaled back by 2^e (exact, unless the norm itself is subnormal or overflows). The same idea as LAPACK's dnrm2, with a scale
// found in a first pass instead of updated on the way, so that every scaling is exact.
//
// norm2_upper certifies: it is at least the exact 2-norm of the values given. With m values,
// each scaled square rounds once (relative error <= u = 2^-53, or an absolute 2^-1075 below
// the normal range), recursive summation of m nonnegative terms at most gamma_(m-1) relative
// (Higham, Accuracy and Stability of Numerical Algorithms, 2002, (3.5)), and the square root
// and the two products by the inflation factors once each; the factor (1 + (2m + 8) u) covers
// the sum's (1 + u)^m (1 + gamma_(m-1)) <= 1 + 2m u + O(m^2 u^2) with room for the products,
// and m 2^-1074 covers the absolute errors. norm2_lower is the same below the exact norm.
//
// A value that is +-infinity or NaN makes every result +infinity (norm2_upper: no bound
// exists) or NaN (norm2).
//
//   double f = norm2([&](auto add) { for (double v : values) add(v); });
//
// `visit(add)` must call add(v) for every value, and give the same values each time: it is
// called twice.
//
// Where it runs: on the host, on values a visitor hands over (copy a device's View to a host
// mirror first).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace ebla {

namespace detail {

/// The scaled squares of the values visit() gives: sum of (v 2^-e)^2, their count m and e.
struct ScaledSquares {
  double sum = 0;
  double m = 0;
  int e = 0;
  bool finite = true;
};

template <class Visit>
ScaledSquares scaled_squares(Visit&& visit) {
  ScaledSquares s;
  double top = 0;
  visit([&](double v) {
    s.finite = s.finite && std::isfinite(v);
    top = std::max(top, std::fabs(v));
    s.m += 1;
  });
  if (!s.finite || top == 0) return s;
  std::frexp(top, &s.e);  // top in [2^(e-1), 2^e)
  visit([&](double v) {
    const double w = std::ldexp(v, -s.e);  // exact unless w falls below the normal range
    s.sum += w * w;
  });
  return s;
}

/// gamma_(2m+8) with u = 2^-53 (+infinity where it does not exist): the relative error
/// allowance of m scaled squares, their sum and the square root.
inline double norm2_gamma(double m) {
  const double k = (2 * m + 8) * 0x1p-53;
  return k < 1 ? k / (1 - k) : std::numeric_limits<double>::infinity();
}

}  // namespace detail

/// sqrt(sum v^2), computed with a few roundings (relative error about (m + 2) 2^-53).
template <class Visit>
double norm2(Visit&& visit) {
  const detail::ScaledSquares s = detail::scaled_squares(visit);
  if (!s.finite) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(std::sqrt(s.sum), s.e);
}

/// An upper bound on the exact sqrt(sum v^2) (+infinity if a value is not finite).
template <class Visit>
double norm2_upper(Visit&& visit) {
  const detail::ScaledSquares s = detail::scaled_squares(visit);
  if (!s.finite) return std::numeric_limits<double>::infinity();
  const double sum = (s.sum + s.m * 0x1p-1074) * (1 + detail::norm2_gamma(s.m));
  const double r = std::ldexp(std::sqrt(sum) * (1 + 0x1p-51), s.e);
  // scaled back below the normal range, the result rounded (to nearest): one spacing up
  return r < std::numeric_limits<double>::min() ? std::nextafter(r, 1.0) : r;
}

/// A lower bound on the exact sqrt(sum v^2) (+infinity if a value is not finite).
template <class Visit>
double norm2_lower(Visit&& visit) {
  const detail::ScaledSquares s = detail::scaled_squares(visit);
  if (!s.finite) return std::numeric_limits<double>::infinity();
  const double keep = std::max(0.0, 1 - detail::norm2_gamma(s.m));
  const double sum = std::max(0.0, s.sum - s.m * 0x1p-1074) * keep;
  const double r = std::ldexp(std::sqrt(sum) * (1 - 0x1p-51), s.e);
  return r < std::numeric_limits<double>::min() ? std::nextafter(r, 0.0) : r;
}

}  // namespace ebla
