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
//
// Where it runs: round_to and the functions marked KOKKOS_INLINE_FUNCTION anywhere (host code
// and kernels on any backend); the name lookups on the host.
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
KOKKOS_INLINE_FUNCTION bool stochastic_up(double r, std::uint64_t d, std::int64_t k) {
  using namespace binary64;
  const std::uint64_t ra = bit_cast<std::uint64_t>(r) & abs_mask;
  const std::int64_t rfield = static_cast<std::int64_t>(ra >> fraction_bits);
  const std::uint64_t rm = (ra & fraction_mask) | (static_cast<std::uint64_t>(rfield != 0) << fraction_bits);
  // r = rm 2^(rfield - 1075), so r 2^k = rm 2^s
  const std::int64_t s = (rfield | (rfield == 0)) - bias - fraction_bits + k;
  // s >= 0: rm 2^s < d  <=>  rm < ceil(d / 2^s) (shift counts kept in [0, 63] on both
  // branches, since both are evaluated: a negative count is undefined behaviour)
  const std::int64_t sp = s < 0 ? 0 : s < 63 ? s : 63;
  const std::uint64_t dq = d >> sp;
  const bool up_scaled = rm < dq + ((d - (dq << sp)) != 0);
  // s < 0: rm 2^s < d  <=>  floor(rm 2^s) < d, because d is an integer
  const std::int64_t sn = s > 0 ? 0 : -s < 63 ? -s : 63;
  const bool up_shifted = (rm >> sn) < d;
  return s >= 0 ? up_scaled : up_shifted;
}

/// 1 if one unit is to be added to the kept part, else 0, given the discarded bits
/// `low` (k of them, with k possibly above 63), the same bits left-aligned in `tail`
/// (so the rounding bit is bit 63), the parity of the kept part, the sign and the mode.
/// Written with bitwise operators, not && and ||, so that loops over arrays stay free
/// of branches and vectorise.
template <Rounding mode>
KOKKOS_INLINE_FUNCTION std::uint64_t round_up(std::uint64_t low, std::uint64_t tail, std::int64_t k,
                                              std::uint64_t lsb, std::uint64_t negative,
                                              double random) {
  const std::uint64_t inexact = low != 0;
  if constexpr (mode == Rounding::nearest_even) {
    constexpr std::uint64_t half = std::uint64_t{1} << 63;
    return (tail > half) | ((tail == half) & lsb);
  } else if constexpr (mode == Rounding::toward_zero) {
    return 0;
  } else if constexpr (mode == Rounding::upward) {
    return inexact & (negative ^ 1);
  } else if constexpr (mode == Rounding::downward) {
    return inexact & negative;
  } else {
    return inexact & static_cast<std::uint64_t>(stochastic_up(random, low, k));
  }
}

}  // namespace detail

/// The constants of a format that rounding needs, computed once (per kernel, not per
/// element): loops over arrays pass these so that the loop body has no branch on the
/// format and vectorises.
struct RoundingConstants {
  std::uint64_t fmin;           ///< bits of fmin = 2^emin
  std::uint64_t fmax;           ///< bits of fmax
  std::uint64_t tiny_result;    ///< bits of the smallest positive value
  std::uint64_t overflow_bits;  ///< result of an overflow away from zero
  std::uint64_t infinity_bits;  ///< result for an infinite input
  std::int64_t k_normal;        ///< discarded bits at or above fmin: 53 - t
  std::int64_t k_below;         ///< discarded bits below fmin are k_below - e
};

/// The rounding constants of a (valid) format.
KOKKOS_INLINE_FUNCTION RoundingConstants rounding_constants(const Format& f) {
  using namespace binary64;
  constexpr std::uint64_t qnan = 0x7ff8000000000000ull;
  RoundingConstants c{};
  c.fmin = pow2_bits(f.emin);
  c.fmax = f.fmax_bits();
  c.tiny_result = pow2_bits(f.subnormals ? f.emin - f.t + 1 : f.emin);
  c.overflow_bits = f.overflow == Overflow::saturate   ? c.fmax
                    : f.overflow == Overflow::infinity ? exponent_mask
                                                       : qnan;
  c.infinity_bits = f.specials == Specials::ieee ? exponent_mask
                    : f.overflow == Overflow::saturate ? c.fmax
                                                       : qnan;
  c.k_normal = 53 - f.t;
  // below fmin the quantum is 2^(emin - t + 1) with subnormals, fmin = 2^emin without
  c.k_below = f.subnormals ? 53 - f.t + f.emin : 52 + f.emin;
  return c;
}

/// round_to with the mode fixed at compile time and the format's constants prepared:
/// what loops over arrays should call. `random` is used only by Rounding::stochastic
/// and must lie in [0, 1).
template <Rounding mode>
KOKKOS_INLINE_FUNCTION double round_to(double x, const RoundingConstants& c, double random = 0.0) {
  using namespace binary64;
  const std::uint64_t bits = bit_cast<std::uint64_t>(x);
  const std::uint64_t sign = bits & sign_mask;
  const std::uint64_t negative = sign >> 63;
  const std::uint64_t a = bits & abs_mask;  // |x|
  // 64-bit integers throughout, so that a loop vectorises with one vector width
  const std::int64_t field = static_cast<std::int64_t>(a >> fraction_bits);
  // x = m 2^(e - 52), with m < 2^53 (double subnormals: e = -1022 and no implicit bit)
  const std::int64_t e = (field | (field == 0)) - bias;
  const std::uint64_t m = (a & fraction_mask) | (static_cast<std::uint64_t>(field != 0) << fraction_bits);

  // Data-dependent choices below are masks, not ?:, which compilers turn into
  // branches in scalar code (mispredicted on mixed magnitudes).
  // k: how many low bits of m lie below the quantum of the format at |x|
  const std::int64_t below = -static_cast<std::int64_t>(a < c.fmin);  // all ones or zero
  const std::int64_t k = ((c.k_below - e) & below) | (c.k_normal & ~below);
  // k <= 52: round the bit pattern of x itself; a carry out of the fraction
  //          correctly moves into the exponent field.
  // k >= 53: every bit of m is discarded: the result is 0 or one quantum.
  const std::uint64_t tiny = 0 - static_cast<std::uint64_t>(k > 52);  // all ones or zero
  const std::int64_t kk = k < 63 ? k : 63;
  const std::uint64_t src = (m & tiny) | (a & ~tiny);
  const std::uint64_t kept = src >> kk;
  const std::uint64_t low = src - (kept << kk);  // the discarded bits
  // the discarded bits left-aligned: bit 63 is the rounding bit (kk = 0 gives 0)
  const std::uint64_t tail = (low << 1) << (63 - kk);
  // parity of the kept significand: from m, since at k = 52 bit k of a is an exponent bit
  const std::uint64_t lsb = (m >> kk) & 1;
  const std::uint64_t up = detail::round_up<mode>(low, tail, k, lsb, negative, random);
  std::uint64_t r = (c.tiny_result & (0 - up) & tiny) | (((kept + up) << kk) & ~tiny);

  // overflow: the rounded magnitude exceeds fmax; directions toward zero give fmax
  const bool toward_zero = mode == Rounding::toward_zero ||
                           (mode == Rounding::upward && negative) ||
                           (mode == Rounding::downward && !negative);
  r = r > c.fmax ? (toward_zero ? c.fmax : c.overflow_bits) : r;

  // infinities and NaN (exponent field all ones): NaN stays as it is
  r = field == 0x7ff ? (a == exponent_mask ? c.infinity_bits : a) : r;
  return bit_cast<double>(sign | r);
}

/// round_to with the mode fixed at compile time.
template <Rounding mode>
KOKKOS_INLINE_FUNCTION double round_to(double x, const Format& f, double random = 0.0) {
  return round_to<mode>(x, rounding_constants(f), random);
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
