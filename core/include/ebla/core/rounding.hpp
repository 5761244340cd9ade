// Rounding a binary64 value to a narrower Format, bit-exactly, inside any kernel.
//
// round_to(x, f, mode) returns the element of f nearest to x in the sense of `mode`,
// as a double. It is integer arithmetic on the bit pattern of x (no libm, no
// floating-point environment), branch-free apart from the mode dispatch, and a
// KOKKOS_INLINE_FUNCTION, so the same code runs on every Kokkos backend.
//
// Semantics (IEEE 754-2019, sections 4.3 and 7.4, extended to the OCP formats):
//  - nearest_even: nearest value, ties to the one with an even last significand bit;
//    toward_zero / upward / downward: the directed roundings;
//    stochastic: the two neighbours d <= x <= v are chosen with probabilities
//    (v - x)/(v - d) and (x - d)/(v - d), using a uniform random number r in [0, 1)
//    supplied by the caller: x goes up exactly when r < (x - d)/(v - d).
//  - Below fmin, with subnormals, the quantum is that of the subnormals,
//    2^(emin - t + 1); without subnormals the representable set near zero is
//    {0, +-fmin}, and x is rounded within it (so |fl(x) - x| <= gmin = fmin/2 for
//    round to nearest, seed 001 (2.1)); a tie fmin/2 goes to zero.
//  - Overflow happens when the value rounded with an unbounded exponent range exceeds
//    fmax. The result is +-fmax if the rounding direction points toward zero
//    (toward_zero, upward for x < 0, downward for x > 0), else per f.overflow:
//    +-inf, NaN, or +-fmax (saturate). For fp8-E4M3, 464 (between 448 and the NaN
//    pattern's 480) is a tie that goes to the even 448, so only x > 464 overflows.
//  - NaN is returned unchanged; +-0 keeps its sign; +-inf is kept if f has
//    infinities, else becomes NaN (Overflow::nan) or +-fmax (Overflow::saturate).
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/format.hpp>

#include <Kokkos_Macros.hpp>

#include <cstdint>
#include <string>

namespace ebla {

/// Rounding modes of round_to.
enum class Rounding : std::uint8_t {
  nearest_even,  ///< to nearest, ties to even (IEEE roundTiesToEven)
  toward_zero,   ///< truncation (IEEE roundTowardZero)
  upward,        ///< toward +inf (IEEE roundTowardPositive)
  downward,      ///< toward -inf (IEEE roundTowardNegative)
  stochastic,    ///< up with probability proportional to the distance from below
};

namespace detail {

/// Stochastic decision r * 2^k < d for r in [0, 1), d < 2^53, exactly, on integers.
KOKKOS_INLINE_FUNCTION bool stochastic_up(double r, std::uint64_t d, int k) {
  using namespace binary64;
  const std::uint64_t ra = bit_cast<std::uint64_t>(r) & abs_mask;
  const int rfield = static_cast<int>(ra >> fraction_bits);
  const std::uint64_t rm = (ra & fraction_mask) | (rfield != 0 ? implicit_bit : 0);
  // r = rm 2^re, so r 2^k = rm 2^s
  const int s = (rfield != 0 ? rfield : 1) - bias - fraction_bits + k;
  if (s >= 0) {
    // rm 2^s < d  <=>  rm < ceil(d / 2^s)
    const int sc = s < 63 ? s : 63;
    return rm < ((d + ((std::uint64_t{1} << sc) - 1)) >> sc);
  }
  // rm 2^s < d  <=>  floor(rm 2^s) < d, because d is an integer
  const int sc = -s < 63 ? -s : 63;
  return (rm >> sc) < d;
}

/// Whether to add one unit to the kept part, given the discarded bits `low` of a
/// k-bit tail (clamped to `kk` <= 63 bits for the masks), the parity of the kept part,
/// the sign and the mode.
template <Rounding mode>
KOKKOS_INLINE_FUNCTION bool round_up(std::uint64_t low, int kk, int k, std::uint64_t lsb,
                                     bool negative, double random) {
  if constexpr (mode == Rounding::nearest_even) {
    const std::uint64_t half = (std::uint64_t{1} << kk) >> 1;
    return low != 0 && (low > half || (low == half && lsb != 0));
  } else if constexpr (mode == Rounding::toward_zero) {
    (void)low;
    return false;
  } else if constexpr (mode == Rounding::upward) {
    return low != 0 && !negative;
  } else if constexpr (mode == Rounding::downward) {
    return low != 0 && negative;
  } else {
    return low != 0 && stochastic_up(random, low, k);
  }
}

}  // namespace detail

/// round_to with the mode fixed at compile time (what loops over arrays should call).
/// `random` is used only by Rounding::stochastic and must lie in [0, 1).
template <Rounding mode>
KOKKOS_INLINE_FUNCTION double round_to(double x, const Format& f, double random = 0.0) {
  using namespace binary64;
  const std::uint64_t bits = bit_cast<std::uint64_t>(x);
  const std::uint64_t sign = bits & sign_mask;
  const std::uint64_t a = bits & abs_mask;  // |x|
  const int field = static_cast<int>(a >> fraction_bits);
  // x = m 2^(e - 52), with m < 2^53 (double subnormals: e = -1022 and no implicit bit)
  const int e = (field != 0 ? field : 1) - bias;
  const std::uint64_t m = (a & fraction_mask) | (field != 0 ? implicit_bit : 0);

  // k: how many low bits of m lie below the quantum of f at |x|
  const bool below_fmin = a < pow2_bits(f.emin);
  const int k = !below_fmin    ? 53 - f.t                     // normal: t bits kept
                : f.subnormals ? 53 - f.t + (f.emin - e)      // quantum 2^(emin - t + 1)
                               : 52 + (f.emin - e);           // quantum fmin = 2^emin
  // k <= 52: round the bit pattern of x itself; a carry out of the fraction
  //          correctly moves into the exponent field.
  // k >= 53: every bit of m is discarded: the result is 0 or one quantum 2^q.
  const bool tiny = k > 52;
  const int kk = tiny ? (k < 63 ? k : 63) : k;
  const std::uint64_t src = tiny ? m : a;
  const std::uint64_t kept = src >> kk;
  const std::uint64_t low = src & ((std::uint64_t{1} << kk) - 1);
  const bool up = detail::round_up<mode>(low, kk, k, kept & 1, sign != 0, random);
  const int q = f.subnormals ? f.emin - f.t + 1 : f.emin;
  std::uint64_t r = tiny ? (up ? pow2_bits(q) : 0) : ((kept + (up ? 1 : 0)) << kk);

  // overflow: the rounded magnitude exceeds fmax
  const std::uint64_t fmax = f.fmax_bits();
  const bool toward_zero = mode == Rounding::toward_zero ||
                           (mode == Rounding::upward && sign != 0) ||
                           (mode == Rounding::downward && sign == 0);
  const std::uint64_t on_overflow = f.overflow == Overflow::saturate  ? fmax
                                    : f.overflow == Overflow::infinity ? exponent_mask
                                                                        : 0x7ff8000000000000ull;
  r = r > fmax ? (toward_zero ? fmax : on_overflow) : r;

  // infinities and NaN
  const bool nonfinite = field == 0x7ff;
  const bool keep_as_is = nonfinite && (a != exponent_mask || f.specials == Specials::ieee);
  const std::uint64_t inf_result = f.overflow == Overflow::saturate ? fmax : 0x7ff8000000000000ull;
  r = nonfinite ? inf_result : r;
  return keep_as_is ? x : bit_cast<double>(sign | r);
}

/// Rounds x to the format f in the given mode (see the top of this header).
/// `random`, a uniform number in [0, 1), is used only by Rounding::stochastic.
KOKKOS_INLINE_FUNCTION double round_to(double x, const Format& f, Rounding mode,
                                       double random = 0.0) {
  switch (mode) {
    case Rounding::nearest_even: return round_to<Rounding::nearest_even>(x, f, random);
    case Rounding::toward_zero: return round_to<Rounding::toward_zero>(x, f, random);
    case Rounding::upward: return round_to<Rounding::upward>(x, f, random);
    case Rounding::downward: return round_to<Rounding::downward>(x, f, random);
    case Rounding::stochastic: return round_to<Rounding::stochastic>(x, f, random);
  }
  return x;
}

/// Calls fn(std::integral_constant<Rounding, mode>{}) with the runtime mode made a
/// compile-time constant, so a kernel is instantiated once per mode.
template <class Fn>
decltype(auto) dispatch_rounding(Rounding mode, Fn&& fn);

/// The mode of a name: "nearest_even" (also "nearest", "rn"), "toward_zero" ("rz"),
/// "upward" ("ru"), "downward" ("rd"), "stochastic" ("sr"). Dashes may replace
/// underscores. Throws InvalidArgument naming the string otherwise.
Rounding rounding_by_name(const std::string& name);
/// The canonical name of a mode ("nearest_even", ...).
const char* to_string(Rounding mode);

}  // namespace ebla

#include <type_traits>

template <class Fn>
decltype(auto) ebla::dispatch_rounding(Rounding mode, Fn&& fn) {
  switch (mode) {
    case Rounding::toward_zero:
      return fn(std::integral_constant<Rounding, Rounding::toward_zero>{});
    case Rounding::upward: return fn(std::integral_constant<Rounding, Rounding::upward>{});
    case Rounding::downward: return fn(std::integral_constant<Rounding, Rounding::downward>{});
    case Rounding::stochastic:
      return fn(std::integral_constant<Rounding, Rounding::stochastic>{});
    case Rounding::nearest_even: break;
  }
  return fn(std::integral_constant<Rounding, Rounding::nearest_even>{});
}
