// Binary floating-point formats as values.
//
// A Format is described by its precision t (significant bits, the implicit bit
// included), the exponent range [emin, emax] of its normal numbers, whether it has
// subnormals, what its top encodings mean and what rounding does on overflow.
// Following seed 001 (Mary & Mikaitis), (2.1)-(2.3):
//   u    = 2^-t                      unit roundoff (round to nearest)
//   fmin = 2^emin                    smallest positive normal number
//   fmax = 2^emax (2 - 2u)           largest finite number (2^emax (2 - 4u) for
//                                    OCP fp8-E4M3, whose all-ones pattern is NaN)
//   gmin = u fmin   with subnormals  largest distance from a real in [-fmin, fmin]
//        = fmin/2   without          to its nearest representable number
// so that fl(x) = x (1 + delta) + eta, |delta| <= u, |eta| <= gmin, eta delta = 0
// holds for round to nearest without overflow (directed modes: 2u and 2 gmin).
//
// Every format here is a subset of binary64 (t <= 53, -1022 <= emin <= emax <= 1023),
// so its values are doubles and rounding works on doubles.
//
// Where it runs: the Format members marked KOKKOS_INLINE_FUNCTION anywhere (host code and
// kernels on any backend); the catalogue and name lookups on the host.
#pragma once

#include <ebla/core/bits.hpp>

#include <Kokkos_Macros.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

/// What the encodings of the top exponent field mean.
enum class Specials : std::uint8_t {
  ieee,      ///< IEEE 754: top exponent field holds +-inf and NaNs (binary16, fp8-E5M2, ...)
  nan_only,  ///< OCP fp8-E4M3: the top field holds normal numbers, except the all-ones
             ///< significand which is NaN; there is no infinity
  none,      ///< OCP fp6/fp4: every encoding is a finite number; no infinity, no NaN
};

/// What rounding does to a finite value beyond fmax (and to an infinite input
/// the format cannot hold).
enum class Overflow : std::uint8_t {
  infinity,  ///< IEEE 754: round to +-inf, or to +-fmax where the rounding direction
             ///< points toward zero (needs Specials::ieee)
  nan,       ///< OCP non-saturating mode of fp8-E4M3: NaN, or +-fmax where the rounding
             ///< direction points toward zero (needs a NaN encoding)
  saturate,  ///< clamp to +-fmax (OCP saturating mode; the only choice without NaN)
};

/// A binary floating-point format. Plain data: copy it into kernels freely.
struct Format {
  int t = 53;                          ///< precision in bits, implicit bit included; 2..53
  int emin = -1022;                    ///< exponent of fmin; >= -1022
  int emax = 1023;                     ///< exponent of the top binade; emin <= emax <= 1023
  bool subnormals = true;              ///< gradual underflow (true) or none (false)
  Specials specials = Specials::ieee;  ///< meaning of the top encodings
  Overflow overflow = Overflow::infinity;  ///< result of rounding beyond fmax

  /// Unit roundoff u = 2^-t.
  KOKKOS_INLINE_FUNCTION double u() const { return pow2(-t); }
  /// Smallest positive normal number 2^emin.
  KOKKOS_INLINE_FUNCTION double fmin() const { return pow2(emin); }
  /// Smallest positive subnormal 2^(emin - t + 1), or fmin without subnormals.
  KOKKOS_INLINE_FUNCTION double smallest_positive() const {
    return subnormals ? pow2(emin - t + 1) : pow2(emin);
  }
  /// Largest finite number, as a binary64 bit pattern (for fast comparisons).
  KOKKOS_INLINE_FUNCTION std::uint64_t fmax_bits() const {
    // all t-1 fraction bits set, minus one unit in the last place for E4M3-style NaN
    const std::uint64_t ones = (std::uint64_t{1} << (t - 1)) - 1;
    const std::uint64_t frac = specials == Specials::nan_only ? ones - 1 : ones;
    return (static_cast<std::uint64_t>(emax + binary64::bias) << binary64::fraction_bits) |
           (frac << (53 - t));
  }
  /// Largest finite number: 2^emax (2 - 2u), or 2^emax (2 - 4u) for Specials::nan_only.
  KOKKOS_INLINE_FUNCTION double fmax() const { return bit_cast<double>(fmax_bits()); }
  /// Underflow constant of seed 001 (2.1): u fmin with subnormals, fmin/2 without. For
  /// binary64 itself u fmin = 2^-1075 lies below the smallest double; gmin() then gives
  /// 2^-1074, the double next above, which keeps every bound that uses it valid.
  KOKKOS_INLINE_FUNCTION double gmin() const {
    const int k = subnormals ? emin - t : emin - 1;
    return pow2(k < -1074 ? -1074 : k);
  }
  KOKKOS_INLINE_FUNCTION bool has_infinity() const { return specials == Specials::ieee; }
  KOKKOS_INLINE_FUNCTION bool has_nan() const { return specials != Specials::none; }

  friend bool operator==(const Format& a, const Format& b) {
    return a.t == b.t && a.emin == b.emin && a.emax == b.emax && a.subnormals == b.subnormals &&
           a.specials == b.specials && a.overflow == b.overflow;
  }
  friend bool operator!=(const Format& a, const Format& b) { return !(a == b); }
};

/// Checks a format; throws InvalidArgument naming `function` and the bad field:
/// t outside 2..53, emin > emax, emin < -1022, emax > 1023, Overflow::infinity
/// without Specials::ieee, Overflow::nan without a NaN encoding.
void validate(const Format& f, const char* function = "ebla::validate");

/// A validated format built from its parameters.
Format make_format(int t, int emin, int emax, bool subnormals = true,
                   Specials specials = Specials::ieee, Overflow overflow = Overflow::infinity);

/// Number of exponent bits of the standard encoding (1 sign bit, w exponent bits,
/// t-1 fraction bits, bias 1 - emin), or 0 if [emin, emax] does not fit one.
int exponent_bits(const Format& f);
/// Total width in bits of the standard encoding, or 0 if it has none.
int encoding_bits(const Format& f);
/// The value of an encoding (width encoding_bits(f) <= 16); NaN encodings give NaN.
/// Throws InvalidArgument if the format has no standard encoding of at most 16 bits.
double decode(std::uint32_t bits, const Format& f);
/// The encoding of a value of the format (width encoding_bits(f) <= 16): the inverse of
/// decode; NaN gives the format's all-ones NaN encoding (with the sign of v). Throws
/// InvalidArgument if the format has no such encoding or v is not one of its values.
std::uint32_t encode(double v, const Format& f);

/// The formats of seed 001, Table 2.1, with the OCP encodings (fp8 E4M3/E5M2 from the
/// OCP 8-bit specification, fp6/fp4 from the OCP microscaling specification).
namespace formats {
Format binary64();
Format binary32();
Format tf32();       ///< NVIDIA 19-bit: binary32's range, 11-bit precision
Format bfloat16();
Format binary16();
Format fp8_e4m3();   ///< no infinity; S.1111.111 is NaN; fmax = 448; overflow -> NaN
Format fp8_e5m2();   ///< IEEE-like; fmax = 57344; overflow -> inf
Format fp6_e2m3();   ///< finite only; fmax = 7.5; overflow saturates
Format fp6_e3m2();   ///< finite only; fmax = 28; overflow saturates
Format fp4_e2m1();   ///< finite only; fmax = 6; overflow saturates
}  // namespace formats

/// A catalogue entry: a name and its format.
struct NamedFormat {
  std::string name;
  Format format;
};

/// Every format of the catalogue, from the widest to the narrowest (Table 2.1 order).
const std::vector<NamedFormat>& format_catalogue();

/// Looks a format up by name: a catalogue name ("binary16", "fp8_e4m3", ...; also the
/// aliases "double", "single", "half", "bf16", "fp16", "fp32", "fp64", and dashes for
/// underscores), or a custom spec "custom:t=<t>,emin=<emin>,emax=<emax>[,subnormals=0|1]
/// [,specials=ieee|nan_only|none][,overflow=infinity|nan|saturate]".
/// Throws InvalidArgument naming the string if it is neither.
Format format_by_name(const std::string& name);

/// The catalogue name of a format, or its custom spec if it is not in the catalogue.
std::string format_name(const Format& f);

const char* to_string(Specials s);
const char* to_string(Overflow o);

}  // namespace ebla
