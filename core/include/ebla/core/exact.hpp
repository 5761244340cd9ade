// Error-free transformations of binary64 arithmetic, usable inside Kokkos kernels: the
// building blocks of compensated sums (qdot), double-double residuals (solvers) and exact
// emulation (mpfma). Code that uses them must be compiled without floating-point
// contraction (-ffp-contract=off), or a compiler may fuse s - a into an FMA and break them.
//
// Where it runs: anywhere; every function is a KOKKOS_INLINE_FUNCTION, for host code and kernels
// on any backend.
#pragma once

#include <ebla/core/bits.hpp>

#include <Kokkos_Macros.hpp>

#include <cmath>

namespace ebla::detail {

/// |x| by clearing the sign bit.
KOKKOS_INLINE_FUNCTION double magnitude(double x) {
  return bit_cast<double>(bit_cast<std::uint64_t>(x) & binary64::abs_mask);
}

/// TwoSum (Knuth): s + e == a + b exactly, s = RN(a + b) (no overflow).
KOKKOS_INLINE_FUNCTION void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double z = s - a;
  e = (a - (s - z)) + (b - z);
}

/// TwoProduct by FMA: p + e == a b exactly, p = RN(a b) (exact when the product's lowest
/// bit is at least 2^-1074).
KOKKOS_INLINE_FUNCTION void two_prod(double a, double b, double& p, double& e) {
  p = a * b;
  e = ::fma(a, b, -p);
}

}  // namespace ebla::detail
