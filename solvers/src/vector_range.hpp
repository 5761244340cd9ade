// The range of double in the solvers: the largest magnitude of a global vector, and exact
// scaling by powers of two, so that sums of squares (||b||^2, y^T y) that would overflow
// or underflow are taken of a scaled copy instead.
//
// Where it runs: in the execution space of the Views; the maximum is reduced over the
// space's processes.
#pragma once

#include <ebla/solvers/space.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace ebla::detail {

/// max |v_i| over the space's processes (+infinity where an entry is NaN).
inline double max_abs(const SolverSpace& A, ConstVector v) {
  double top = 0;
  const double nan_as = std::numeric_limits<double>::infinity();
  Kokkos::parallel_reduce(
      "ebla::max_abs", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, v.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i, double& m) {
        const double a = v(i) != v(i) ? nan_as : v(i) < 0 ? -v(i) : v(i);
        if (a > m) m = a;
      },
      Kokkos::Max<double>(top));
  return A.max(top);
}

/// Whether every entry of v (this process's part) is finite.
inline bool finite_vector(ConstVector v) {
  int bad = 0;
  Kokkos::parallel_reduce(
      "ebla::finite", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, v.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i, int& count) { count += std::isfinite(v(i)) ? 0 : 1; }, bad);
  return bad == 0;
}

/// w = v 2^k (w may be v), as two factors 2^(k/2) 2^(k - k/2), each a double for |k| <=
/// 2098: exact (a power of two moves exponents only) unless an entry leaves the normal range.
inline void times_power_of_two(ConstVector v, int k, Vector w) {
  const double s1 = std::ldexp(1.0, k / 2), s2 = std::ldexp(1.0, k - k / 2);
  Kokkos::parallel_for(
      "ebla::times_power_of_two", Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, v.extent(0)),
      KOKKOS_LAMBDA(const std::size_t i) { w(i) = v(i) * s1 * s2; });
}

/// Whether a sum of squares lies where its digits and its square root are safe: [2^-600, 2^600].
inline bool squares_in_range(double squares) { return squares >= 0x1p-600 && squares <= 0x1p600; }

/// The e with 2^-e max |v_i| in [1/2, 1) (0 for v = 0): the scale that brings v's squares
/// into range.
inline int range_exponent_of(const SolverSpace& A, ConstVector v) {
  const double top = max_abs(A, v);
  int e = 0;
  if (top > 0 && std::isfinite(top)) std::frexp(top, &e);  // top in [2^(e-1), 2^e)
  return e;
}

}  // namespace ebla::detail
