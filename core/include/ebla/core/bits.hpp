// Bit-level helpers on IEEE binary64 values, usable inside Kokkos kernels.
//
// Everything here is integer arithmetic on the bit pattern: no libm, no
// floating-point environment, so results are the same on every backend.
//
// Where it runs: anywhere; every function is a KOKKOS_INLINE_FUNCTION, for host code and kernels
// on any backend.
#pragma once

#include <Kokkos_Macros.hpp>

#include <cstdint>
#include <cstring>

namespace ebla {

/// Reinterprets the bits of `from` as a `To` of the same size (std::bit_cast is C++20).
template <class To, class From>
KOKKOS_INLINE_FUNCTION To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "ebla::bit_cast: sizes differ");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

namespace binary64 {
constexpr std::uint64_t sign_mask = 0x8000000000000000ull;
constexpr std::uint64_t abs_mask = 0x7fffffffffffffffull;
constexpr std::uint64_t exponent_mask = 0x7ff0000000000000ull;
constexpr std::uint64_t fraction_mask = 0x000fffffffffffffull;
constexpr std::uint64_t implicit_bit = 0x0010000000000000ull;
constexpr int bias = 1023;
constexpr int fraction_bits = 52;
}  // namespace binary64

/// Bit pattern of +2^k for -1074 <= k <= 1023 (subnormal powers included).
KOKKOS_INLINE_FUNCTION std::uint64_t pow2_bits(int k) {
  return k >= -1022 ? static_cast<std::uint64_t>(k + binary64::bias) << binary64::fraction_bits
                    : std::uint64_t{1} << (k + 1074);
}

/// 2^k as a double, exactly, for -1074 <= k <= 1023.
KOKKOS_INLINE_FUNCTION double pow2(int k) { return bit_cast<double>(pow2_bits(k)); }

/// Whether the code being compiled runs on the host (GCC and Clang builtins available), not in
/// a device pass of CUDA, HIP or SYCL.
#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__) && \
    !defined(__HIP_DEVICE_COMPILE__) && !defined(__SYCL_DEVICE_ONLY__)
#define EBLA_HOST_BUILTINS 1
#else
#define EBLA_HOST_BUILTINS 0
#endif

/// leading_zeros by a portable branch-light search: what devices run (63 for 0).
KOKKOS_INLINE_FUNCTION int leading_zeros_portable(std::uint64_t v) {
  int n = 0;
  if ((v >> 32) == 0) { n += 32; v <<= 32; }
  if ((v >> 48) == 0) { n += 16; v <<= 16; }
  if ((v >> 56) == 0) { n += 8; v <<= 8; }
  if ((v >> 60) == 0) { n += 4; v <<= 4; }
  if ((v >> 62) == 0) { n += 2; v <<= 2; }
  if ((v >> 63) == 0) { n += 1; }
  return n;
}

/// Number of leading zero bits of a nonzero 64-bit word (63 for 0): the host's instruction, or
/// leading_zeros_portable on devices.
KOKKOS_INLINE_FUNCTION int leading_zeros(std::uint64_t v) {
#if EBLA_HOST_BUILTINS
  return v != 0 ? __builtin_clzll(v) : 63;
#else
  return leading_zeros_portable(v);
#endif
}

/// Value returned by exponent_of(0): below every finite exponent.
constexpr int exponent_of_zero = -2147483647 - 1;
/// Value returned by exponent_of(+-inf) and exponent_of(NaN).
constexpr int exponent_of_nonfinite = 1024;

/// The unbiased exponent floor(log2|x|) of a finite nonzero double, read off its
/// bits; subnormals are normalised (exponent_of(2^-1074) == -1074).
/// Zero gives exponent_of_zero, infinities and NaN give exponent_of_nonfinite.
KOKKOS_INLINE_FUNCTION int exponent_of(double x) {
  const std::uint64_t a = bit_cast<std::uint64_t>(x) & binary64::abs_mask;
  const int field = static_cast<int>(a >> binary64::fraction_bits);
  if (field == 0x7ff) return exponent_of_nonfinite;
  if (field != 0) return field - binary64::bias;
  if (a == 0) return exponent_of_zero;
  // subnormal: the leading one sits at bit 63 - lz, worth 2^(bit - 1074)
  return (63 - leading_zeros(a)) - 1074;
}

/// The exponent function fexp of seed 002, (1.1): the unbiased exponent of x.
///
/// The paper prints fexp(x) = floor(log2|x|) for |x| >= 1 and ceil(log2|x|) for
/// |x| < 1, and then says fexp(x) "is the unbiased exponent of x". The two
/// disagree below 1 (for x = 0.75 the ceiling gives 0, the exponent is -1), and
/// with the ceiling a value could exceed 2^fexp(x), breaking every bound that
/// uses |x| < 2^(fexp(x)+1). The unbiased exponent, floor(log2|x|) for all
/// x != 0, is what the algorithms need, and is what this returns.
KOKKOS_INLINE_FUNCTION int fexp(double x) { return exponent_of(x); }

}  // namespace ebla
