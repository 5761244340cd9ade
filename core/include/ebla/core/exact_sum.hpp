// The exact dot product: sums of products of doubles with no rounding at all, the reference
// against which the errors of computed dot products are measured.
//
//   ebla::ExactSum s;
//   for (i ...) s.add_product(x[i], y[i]);   // x^T y, exactly
//   s.to_double();                           // rounded once, to nearest
//   s.relative_error(computed);              // |computed - x^T y| / |x^T y|
//   ebla::exact_dot(x, y, n);                // the same in one call
//
// A product of two doubles is m 2^e with m an integer below 2^106 and -2148 <= e <= 1942
// (subnormal factors included, products beyond the double range too). It is added into a
// fixed-point integer of 4352 bits whose lowest bit weighs 2^-2148 ("superaccumulator"), so
// that no sum of such products, whatever its cancellation, is ever rounded. Host code only.
//
// Where it runs: on the host.
#pragma once

#include <ebla/core/bits.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace ebla {

#if defined(__SIZEOF_FLOAT128__)
__extension__ typedef __float128 float128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet
#endif

/// The exact sum of products of doubles. Limb k holds 32 bits of weight 2^(32k - 2148) in an
/// int64; carries are propagated every 2^30 additions, so an addition costs five integer
/// additions, and up to 2^40 terms of the largest size fit.
class ExactSum {
public:
  /// Adds a b exactly. A factor that is infinite or NaN makes the sum NaN.
  void add_product(double a, double b) {
    if (!std::isfinite(a) || !std::isfinite(b)) {
      nonfinite_ = true;
      return;
    }
    if (a == 0 || b == 0) return;
    const Parts pa = parts(a), pb = parts(b);
    const u128 m = static_cast<u128>(pa.mantissa) * pb.mantissa;  // < 2^106
    const int bit = pa.exponent + pb.exponent + offset;           // >= 0
    const int k = bit / 32, s = bit % 32;
    const u128 low = m << s;                                                         // bits 0..127
    const std::uint64_t high = s ? static_cast<std::uint64_t>(m >> (128 - s)) : 0;  // bits 128..
    const std::int64_t sign = pa.negative != pb.negative ? -1 : 1;
    for (int j = 0; j < 4; ++j) limb_[k + j] += sign * static_cast<std::int64_t>((low >> (32 * j)) & mask);
    limb_[k + 4] += sign * static_cast<std::int64_t>(high);
    if (++pending_ == (std::int64_t{1} << 30)) {  // before any limb can reach 2^62
      carry(limb_);
      pending_ = 0;
    }
  }
  /// Adds v exactly.
  void add(double v) { add_product(v, 1.0); }

  /// Whether every term added was finite (otherwise the sum is NaN).
  bool finite() const { return !nonfinite_; }
  /// The sign of the exact sum of the finite terms: -1, 0 or 1.
  int sign() const;
  /// The sum correctly rounded to the nearest double (ties to even, subnormals included;
  /// beyond the double range +-inf), NaN if a term was not finite.
  double to_double() const;
#if defined(__SIZEOF_FLOAT128__)
  /// The sum correctly rounded to the nearest binary128 (113 bits, ties to even).
  float128 to_float128() const;
#endif
  /// |computed - sum| / |sum|: the difference is formed exactly and rounded once, so the
  /// relative error is itself accurate to a few units in the last place. 0 when computed is
  /// the sum exactly, inf when the sum is 0 and computed is not, NaN when computed (or a
  /// term) is not finite.
  double relative_error(double computed) const;

private:
  __extension__ typedef unsigned __int128 u128;
  static constexpr int offset = 2148;  // -(lowest exponent of a product of subnormals)
  static constexpr int limbs = 136;    // 4196 bits of products, carries of 2^40 terms, spare
  static constexpr u128 mask = 0xffffffffu;
  using Limbs = std::array<std::int64_t, limbs>;
  struct Parts {
    std::uint64_t mantissa;
    int exponent;
    bool negative;
  };
  /// A correctly rounded magnitude: kept 2^(exponent), kept < 2^precision.
  struct Rounded {
    u128 kept;
    int exponent;
  };
  static Parts parts(double v) {  // v = +-mantissa 2^exponent, mantissa an integer
    const std::uint64_t bits = bit_cast<std::uint64_t>(v);
    const int field = static_cast<int>((bits >> 52) & 0x7ff);
    const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
    if (field == 0) return {fraction, -1074, (bits >> 63) != 0};
    return {fraction | (std::uint64_t{1} << 52), field - 1075, (bits >> 63) != 0};
  }
  static void carry(Limbs& l);
  Limbs magnitude(bool& negative) const;
  static Rounded round(const Limbs& l, int precision, int lowest_exponent);

  Limbs limb_{};
  std::int64_t pending_ = 0;
  bool nonfinite_ = false;
};

/// x^T y as an exact sum (products of floats are added as the doubles they convert to).
ExactSum exact_dot_sum(const double* x, const double* y, std::size_t n);
ExactSum exact_dot_sum(const float* x, const float* y, std::size_t n);

/// x^T y computed exactly and rounded once to the nearest double.
double exact_dot(const double* x, const double* y, std::size_t n);
double exact_dot(const float* x, const float* y, std::size_t n);

/// |computed - x^T y| / |x^T y| against the exact x^T y (see ExactSum::relative_error).
double dot_relative_error(const double* x, const double* y, std::size_t n, double computed);
double dot_relative_error(const float* x, const float* y, std::size_t n, double computed);

}  // namespace ebla
