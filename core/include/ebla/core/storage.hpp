// Storage formats: how a vector's values are kept in memory, apart from the binary64 in
// which every kernel computes. A stored value is a word w and a power-of-two scale s, and
// its value is w s exactly:
//
//   binary64                  w a double, s = 1
//   binary32, bfloat16,       w a value of the format (32 or 16 bits), s one power of two
//   binary16                  for the whole vector, chosen from a bound on its largest
//                             magnitude so that nothing overflows (store_scale below)
//   block16, block8           w a signed integer of 16 or 8 bits, s one power of two for
//                             each block of storage_block = 32 consecutive values, chosen
//                             from the block's largest magnitude: block floating point
//
// Rounding to a storage format is round to nearest even, once (never double -> float ->
// half). Its error on a value v:
//   floating formats: |v - w s| <= u |v| + gmin s  (u = 2^-t; gmin the format's underflow
//                     constant, seed 001 (2.1)), with u = 2^-24, 2^-8, 2^-11;
//   block formats:    |v - w s| <= 2^-b' max_block |v_j| / (1 - 2^-b'), b' = bits - 1
//                     (half a unit of the last place of an integer of bits - 1 magnitude
//                     bits whose largest value is at least half its range; block_exponent).
// The kernels also measure the error they commit (sum of (v - w s)^2, exact terms), and
// the solvers use the measured value; these a-priori bounds choose formats.
//
// Where it runs: the functions marked KOKKOS_INLINE_FUNCTION anywhere (host code and kernels
// on any backend); names and parsing on the host.
#pragma once

#include <ebla/core/bits.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>

#include <Kokkos_Macros.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

enum class Storage : std::uint8_t { binary64, binary32, bfloat16, binary16, block16, block8 };

/// Values per block of the block formats (one exponent each).
constexpr int storage_block = 32;

/// "binary64", "binary32", "bfloat16", "binary16", "block16", "block8".
const char* to_string(Storage s);
/// Every storage format, widest first.
const std::vector<Storage>& storage_formats();
/// The format of a name of to_string (also "double", "single", "float", "half", "bf16",
/// "fp64", "fp32", "fp16"); throws InvalidArgument naming `function` and the name.
Storage storage_by_name(const std::string& name, const char* function = "ebla::storage_by_name");

/// Bits of a stored word.
KOKKOS_INLINE_FUNCTION int storage_bits(Storage s) {
  switch (s) {
    case Storage::binary64: return 64;
    case Storage::binary32: return 32;
    case Storage::block8: return 8;
    default: return 16;
  }
}
/// Bytes a vector of n values takes: its words, and for block formats a 16-bit exponent per
/// block.
KOKKOS_INLINE_FUNCTION double storage_bytes(Storage s, double n) {
  const bool block = s == Storage::block16 || s == Storage::block8;
  const double blocks = static_cast<double>(static_cast<unsigned long long>((n + storage_block - 1) / storage_block));
  return n * storage_bits(s) / 8 + (block ? 2 * blocks : 0);
}
KOKKOS_INLINE_FUNCTION bool is_block(Storage s) { return s == Storage::block16 || s == Storage::block8; }

/// The relative error bound of rounding one value: u of a floating format (relative to the
/// value), 2^-b' / (1 - 2^-b') of a block format (relative to its block's largest magnitude).
KOKKOS_INLINE_FUNCTION double storage_unit(Storage s) {
  switch (s) {
    case Storage::binary64: return pow2(-53);
    case Storage::binary32: return pow2(-24);
    case Storage::bfloat16: return pow2(-8);
    case Storage::binary16: return pow2(-11);
    case Storage::block16: return pow2(-15) / (1 - pow2(-15));
    case Storage::block8: return pow2(-7) / (1 - pow2(-7));
  }
  return 1;
}

namespace detail {

/// The Format of a floating storage format (binary64 for the block formats' arithmetic).
KOKKOS_INLINE_FUNCTION Format storage_float_format(Storage s) {
  switch (s) {
    case Storage::binary32: return Format{24, -126, 127, true, Specials::ieee, Overflow::infinity};
    case Storage::bfloat16: return Format{8, -126, 127, true, Specials::ieee, Overflow::infinity};
    case Storage::binary16: return Format{11, -14, 15, true, Specials::ieee, Overflow::infinity};
    default: return Format{};
  }
}

/// The bits of a binary16 value h (a double that binary16 holds exactly: round_to's result).
KOKKOS_INLINE_FUNCTION std::uint16_t binary16_bits(double h) {
  const std::uint64_t b = bit_cast<std::uint64_t>(h);
  const std::uint16_t sign = static_cast<std::uint16_t>((b >> 48) & 0x8000u);
  const double a = h < 0 ? -h : h;
  if (!(a == a)) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (a > 65504.0) return static_cast<std::uint16_t>(sign | 0x7c00u);  // infinity
  if (a < 0x1p-14)                                                  // subnormal or zero: a = m 2^-24
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(a * 0x1p24));
  const int field = static_cast<int>((b >> 52) & 0x7ff) - 1023 + 15;
  return static_cast<std::uint16_t>(sign | (field << 10) | ((b >> 42) & 0x3ff));
}

/// The value of binary16 bits.
KOKKOS_INLINE_FUNCTION double binary16_value(std::uint16_t w) {
  const int field = (w >> 10) & 0x1f;
  const std::uint64_t sign = static_cast<std::uint64_t>(w & 0x8000u) << 48;
  const std::uint64_t fraction = w & 0x3ffu;
  if (field == 0x1f)
    return bit_cast<double>(sign | 0x7ff0000000000000ull | (fraction << 42) | (fraction ? 1ull << 51 : 0));
  if (field == 0) {
    const double v = static_cast<double>(fraction) * 0x1p-24;
    return sign ? -v : v;
  }
  return bit_cast<double>(sign | (static_cast<std::uint64_t>(field - 15 + 1023) << 52) | (fraction << 42));
}

/// The bits of a bfloat16 value (a double that bfloat16 holds exactly): the top half of
/// its binary32 bits, since binary32 holds it exactly too.
KOKKOS_INLINE_FUNCTION std::uint16_t bfloat16_bits(double h) {
  return static_cast<std::uint16_t>(bit_cast<std::uint32_t>(static_cast<float>(h)) >> 16);
}
KOKKOS_INLINE_FUNCTION double bfloat16_value(std::uint16_t w) {
  return static_cast<double>(bit_cast<float>(static_cast<std::uint32_t>(w) << 16));
}

/// x rounded to the nearest integer, ties to even, for |x| < 2^51: the sum with 1.5 2^52
/// rounds there, in the default rounding mode (IEEE arithmetic may not reassociate it;
/// ebla is not built with -ffast-math).
KOKKOS_INLINE_FUNCTION double round_integer(double x) {
  constexpr double magic = 0x1.8p52;
  return (x + magic) - magic;
}

/// x 2^k for any k with x 2^k in double's range (two factors, each a normal double).
KOKKOS_INLINE_FUNCTION double times_pow2(double x, int k) {
  const int h = k / 2;
  return x * pow2(h) * pow2(k - h);
}

}  // namespace detail

/// The exponent e of a block whose largest magnitude is amax, for integer words of
/// bits - 1 magnitude bits: the block's values are w 2^(e - b'), b' = bits - 1, |w| <= 2^b' - 1.
/// e is the least integer with amax < 2^e, plus one where amax 2^(b' - e) would round to
/// 2^b' (the integer would not fit): then amax >= 2^(e - 1) (1 - 2^-b') either way, and half
/// a unit 2^(e - b' - 1) is at most 2^-b' amax / (1 - 2^-b'). The unit 2^(e - b') is kept at
/// or above 2^-1074 (blocks below 2^(b' - 1074) are rounded to multiples of 2^-1074, an
/// error of at most 2^-1075 each); a zero block gets that least exponent.
KOKKOS_INLINE_FUNCTION int block_exponent(double amax, int bits) {
  const int b = bits - 1, least = b - 1074;
  if (!(amax > 0)) return least;
  int e = exponent_of(amax) + 1;
  if (e < least) return least;
  if (detail::round_integer(detail::times_pow2(amax, b - e)) >= pow2(b)) ++e;  // rounds up to 2^b'
  return e;
}

/// The scale 2^s of a vector stored in a floating storage format whose magnitudes are at
/// most `bound`: the least s with bound 2^-s below 2^emax (so that rounding cannot
/// overflow: fmax >= 2^emax), within double's normal range. 1 for binary64 and bound 0.
KOKKOS_INLINE_FUNCTION int store_scale_exponent(Storage s, double bound) {
  if (s == Storage::binary64 || !(bound > 0) || is_block(s)) return 0;
  const int emax = detail::storage_float_format(s).emax;
  int e = exponent_of(bound) + 1 - emax;  // bound < 2^(exponent + 1) = 2^(e + emax)
  if (e < -1022) e = -1022;
  if (e > 1023) e = 1023;
  return e;
}

}  // namespace ebla
