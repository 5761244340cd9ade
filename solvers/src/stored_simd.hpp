// Host forms of the stored passes' tile operations (cg_steps.cpp): eight values at a time in
// GCC vector types (one AVX-512 register, or two AVX2 ones), each value computed with the
// operations of the generic code (StoredAccess, cg_steps.cpp) in the same order, so that
// every stored word, every stored value and every sum is the same bits.
//
//  - decoding: binary32 and bfloat16 widen exactly (vcvtps2pd), binary16 through F16C's
//    vcvtph2ps (exact, subnormals, infinities and NaN as binary16_value gives them), the
//    block formats' integers times the power of two of their block.
//  - rounding to bfloat16 and binary16 (round_to's nearest even, which the generic code
//    calls): at or above the format's fmin on the binary64 bits, |x| + (2^(k-1) - 1) + the
//    last kept bit, the k = 53 - t discarded bits cleared (a carry moves into the exponent),
//    above fmax infinity; below fmin on the value, (|x| 2^(t-1-emin) + 1.5 2^52) - 1.5 2^52,
//    the nearest integer, ties to even, times the quantum 2^(emin-t+1); infinities and NaN
//    as they are. The result, a value of the format, is then encoded exactly (vcvtps2ph for
//    binary16, the top half of its binary32 bits for bfloat16).
//  - sums: lane j of a vector accumulator is LaneSums' running sum j (i mod 8 of the tile's
//    entry i), the tail of a tile shorter than a multiple of eight goes on in scalar code
//    with the generic lanes, and LaneSums::total adds the lanes in the generic order.
//
// Where it runs: host code only, inside functions compiled for AVX2+F16C or AVX-512
// (__attribute__((target)), cg_steps.cpp); EBLA_STORED_SIMD is 0 elsewhere (other CPUs,
// device builds of Kokkos) and nothing here is compiled.
#pragma once

#include <ebla/kernels/stored_vector.hpp>

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && \
    !defined(KOKKOS_ENABLE_SYCL) && !defined(KOKKOS_ENABLE_OPENMPTARGET)
#define EBLA_STORED_SIMD 1
#include <immintrin.h>
#else
#define EBLA_STORED_SIMD 0
#endif

namespace ebla::detail {

/// The generic (portable, any execution space) form of a pass's tile.
struct GenericIsa {};

#if EBLA_STORED_SIMD
/// The host form of a pass's tile (this header), compiled into AVX2 and AVX-512 functions.
struct SimdIsa {};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace simd {

using d8 = double __attribute__((vector_size(64)));
using u8 = std::uint64_t __attribute__((vector_size(64)));
using i8 = std::int64_t __attribute__((vector_size(64)));
using f8 = float __attribute__((vector_size(32)));
using w8 = std::uint32_t __attribute__((vector_size(32)));
using s8 = std::int32_t __attribute__((vector_size(32)));
using h8 = std::uint16_t __attribute__((vector_size(16)));
using k8 = std::int16_t __attribute__((vector_size(16)));
using c8 = std::int8_t __attribute__((vector_size(8)));

/// Every function of the host forms: inlined into the functions compiled for AVX2 or AVX-512
/// (cg_steps.cpp), compiled for the instruction sets both have (AVX2, F16C) on its own.
#define EBLA_SIMD inline __attribute__((always_inline, target("avx2,avx,f16c,bmi,bmi2")))
#define EBLA_SIMD_F16C EBLA_SIMD

constexpr std::uint64_t sign_bit = 0x8000000000000000ull, magnitude_bits = 0x7fffffffffffffffull;
constexpr std::uint64_t infinity_bits = 0x7ff0000000000000ull;

template <class V, class T>
EBLA_SIMD V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class V, class T>
EBLA_SIMD void put(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}
EBLA_SIMD d8 splat(double x) { return d8{x, x, x, x, x, x, x, x}; }
EBLA_SIMD d8 zero() { return splat(0.0); }
EBLA_SIMD d8 magnitude(d8 x) { return reinterpret_cast<d8>(reinterpret_cast<u8>(x) & magnitude_bits); }
/// LaneMax::add on eight lanes: |x| replaces m where it is larger (a NaN never is).
EBLA_SIMD d8 lane_max(d8 m, d8 x) {
  const d8 a = magnitude(x);
  const i8 larger = a > m;
  return reinterpret_cast<d8>((reinterpret_cast<i8>(a) & larger) | (reinterpret_cast<i8>(m) & ~larger));
}

EBLA_SIMD_F16C d8 binary16_values(const std::uint16_t* p) {
  const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return __builtin_convertvector(reinterpret_cast<f8>(f), d8);
}
EBLA_SIMD_F16C void put_binary16(std::uint16_t* p, d8 exact) {
  const f8 f = __builtin_convertvector(exact, f8);  // exact: a binary16 value
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(reinterpret_cast<__m256>(f), _MM_FROUND_TO_NEAREST_INT));
}

/// round_to<nearest_even>(x) for the IEEE format of t digits and least normal exponent emin
/// (emax then follows: bfloat16 127, binary16 15), overflow to infinity.
template <int t, int emin, int emax>
EBLA_SIMD d8 round_nearest(d8 x) {
  constexpr int k = 53 - t;
  constexpr std::uint64_t fmin = static_cast<std::uint64_t>(emin + 1023) << 52;
  constexpr std::uint64_t fmax = (static_cast<std::uint64_t>(emax + 1023) << 52) | (((1ull << (t - 1)) - 1) << k);
  const u8 bits = reinterpret_cast<u8>(x);
  const u8 sign = bits & sign_bit, a = bits & magnitude_bits;
  // at or above fmin: the k low bits rounded away on the bit pattern
  constexpr std::uint64_t half = (std::uint64_t{1} << (k - 1)) - 1, kept = ~((std::uint64_t{1} << k) - 1);
  u8 r = (a + (half + ((a >> k) & 1))) & kept;
  const u8 over = reinterpret_cast<u8>(reinterpret_cast<i8>(r) > static_cast<std::int64_t>(fmax));
  r = (r & ~over) | (infinity_bits & over);
  // below fmin: the nearest multiple of the quantum 2^(emin - t + 1), ties to even
  const d8 y = reinterpret_cast<d8>(a) * splat(pow2(t - 1 - emin));
  const d8 magic = splat(0x1.8p52);
  const d8 small = ((y + magic) - magic) * splat(pow2(emin - t + 1));
  const u8 below = reinterpret_cast<u8>(reinterpret_cast<i8>(a) < static_cast<std::int64_t>(fmin));
  r = (reinterpret_cast<u8>(small) & below) | (r & ~below);
  // infinities and NaN as they are
  const u8 special = reinterpret_cast<u8>(reinterpret_cast<i8>(a) >= static_cast<std::int64_t>(infinity_bits));
  r = (a & special) | (r & ~special);
  return reinterpret_cast<d8>(sign | r);
}

/// The words of entries [i, i + 8) of a vector_scale format, as doubles, without the scale.
template <Storage S>
EBLA_SIMD d8 raw8(const StoredAccess<S>& a, std::size_t i) {
  const auto* w = a.w.data() + i;
  if constexpr (S == Storage::binary64) return load<d8>(w);
  else if constexpr (S == Storage::binary32) return __builtin_convertvector(load<f8>(w), d8);
  else if constexpr (S == Storage::bfloat16)
    return __builtin_convertvector(reinterpret_cast<f8>(__builtin_convertvector(load<h8>(w), w8) << 16), d8);
  else if constexpr (S == Storage::binary16) return binary16_values(w);
  else static_assert(S == Storage::binary64, "block formats have no vector scale");
}

/// The stored values of entries [i, i + 8): load(i + j) for j < 8.
template <Storage S>
EBLA_SIMD d8 load8(const StoredAccess<S>& a, std::size_t i) {
  if constexpr (S == Storage::binary64) return raw8(a, i);
  else if constexpr (!StoredAccess<S>::block) return raw8(a, i) * splat(a.scale);
  else {
    d8 words;
    if constexpr (S == Storage::block16) words = __builtin_convertvector(load<k8>(a.w.data() + i), d8);
    else words = __builtin_convertvector(load<c8>(a.w.data() + i), d8);
    // the eight entries lie in one block or in two: those from 32 - i mod 32 on in the next
    const std::size_t blk = i / storage_block;
    const double first = pow2(a.exponent(blk));
    const std::size_t into = i % storage_block;
    if (into + 8 <= static_cast<std::size_t>(storage_block)) return words * splat(first);
    const double second = pow2(a.exponent(blk + 1));
    const i8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const i8 next = lane >= static_cast<std::int64_t>(storage_block - into);
    const d8 scale = reinterpret_cast<d8>((reinterpret_cast<i8>(splat(second)) & next) |
                                          (reinterpret_cast<i8>(splat(first)) & ~next));
    return words * scale;
  }
}

/// Eight lanes of sums and maxima, continued in scalar code by the generic lanes.
EBLA_SIMD void to_lanes(d8 v, LaneSums& s) {
  for (int j = 0; j < 8; ++j) s.s[j] = v[j];
}
EBLA_SIMD void to_lanes(d8 v, LaneMax& m) {
  for (int j = 0; j < 8; ++j) m.m[j] = v[j];
}

/// ebla::block_exponent (storage.hpp), the same operations, inlined here: called once per
/// block between vector code, an out-of-line call would run in legacy SSE encoding with the
/// vector registers' upper halves in use, which costs more than the block's own work.
EBLA_SIMD int block_exponent_inline(double amax, int bits) {
  const int b = bits - 1, least = b - 1074;
  if (!(amax > 0)) return least;
  int e = exponent_of(amax) + 1;
  if (e < least) return least;
  if (round_integer(times_pow2(amax, b - e)) >= pow2(b)) ++e;  // rounds up to 2^b'
  return e;
}

/// StoredAccess<S>::store_tile, eight values at a time (see the top of this file).
template <Storage S>
EBLA_SIMD void store_tile(const StoredAccess<S>& a, std::size_t begin, std::size_t count, double* v, StoreSums& sums) {
  using Word = typename StoredAccess<S>::Word;
  Word* w = a.w.data() + begin;
  const std::size_t groups = count / 8 * 8;
  LaneSums err;
  LaneMax stored_max;
  if constexpr (S == Storage::binary64) {
    if (v != w) std::memcpy(w, v, count * sizeof(double));
    if (a.track_max) {
      d8 e = zero(), m = zero();
      for (std::size_t i = 0; i < groups; i += 8) {
        const d8 x = load<d8>(v + i);
        m = lane_max(m, x);
        e += x - x;
      }
      to_lanes(e, err);
      to_lanes(m, stored_max);
      for (std::size_t i = groups, j = 0; i < count; ++i, ++j) {
        stored_max.add(static_cast<int>(j), v[i]);
        err.s[j] += v[i] - v[i];
      }
    }
  } else if constexpr (StoredAccess<S>::block) {
    d8 e = zero();
    for (std::size_t b0 = 0; b0 < count; b0 += storage_block) {
      const std::size_t m = b0 + storage_block < count ? storage_block : count - b0;
      const std::size_t mg = m / 8 * 8;
      d8 bm = zero(), nonfinite = zero();
      for (std::size_t i = 0; i < mg; i += 8) {
        const d8 x = load<d8>(v + b0 + i);
        bm = lane_max(bm, x);
        nonfinite += x - x;
      }
      LaneMax block_max;
      to_lanes(bm, block_max);
      for (std::size_t i = mg, j = 0; i < m; ++i, ++j) block_max.add(static_cast<int>(j), v[b0 + i]);
      double amax = block_max.total();
      for (int j = 0; j < 8; ++j) amax += nonfinite[j];  // NaN if a value is not finite
      for (std::size_t i = mg; i < m; ++i) amax += v[b0 + i] - v[b0 + i];
      if (!(amax <= 1.7976931348623157e308)) {
        sums.bad = true;
        for (std::size_t i = 0; i < m; ++i) w[b0 + i] = 0;
        continue;
      }
      constexpr int magnitude_bits = StoredAccess<S>::magnitude_bits;
      const int unit = block_exponent_inline(amax, magnitude_bits + 1) - magnitude_bits;
      a.exponent((begin + b0) / storage_block) = static_cast<std::int16_t>(unit);
      const double down = pow2(-unit < 1023 ? -unit : 1023), down2 = pow2(-unit < 1023 ? 0 : -unit - 1023);
      const double up = pow2(unit);
      const double top = amax + 0.5 * pow2(unit);
      stored_max.m[0] = stored_max.m[0] > top ? stored_max.m[0] : top;
      const d8 magic = splat(0x1.8p52);
      for (std::size_t i = 0; i < mg; i += 8) {
        const d8 x = load<d8>(v + b0 + i);
        const d8 word = ((x * splat(down) * splat(down2)) + magic) - magic;
        const s8 integer = __builtin_convertvector(word, s8);
        if constexpr (S == Storage::block16) put(w + b0 + i, __builtin_convertvector(integer, k8));
        else put(w + b0 + i, __builtin_convertvector(integer, c8));
        const d8 stored = word * splat(up);
        const d8 d = x - stored;
        e += d * d;
        put(v + b0 + i, stored);
      }
      if (mg < m) {  // the vector's last, short block: the generic lanes from 0
        LaneSums tail;
        to_lanes(e, tail);
        for (std::size_t i = mg, j = 0; i < m; ++i, ++j) {
          const double word = round_integer(v[b0 + i] * down * down2);
          w[b0 + i] = static_cast<Word>(word);
          const double d = v[b0 + i] - word * up;
          tail.s[j] += d * d;
          v[b0 + i] = word * up;
        }
        for (int j = 0; j < 8; ++j) e[j] = tail.s[j];
      }
    }
    to_lanes(e, err);
  } else {
    const d8 inverse = splat(a.inverse_scale), scale = splat(a.scale);
    d8 e = zero(), mx = zero();
    for (std::size_t i = 0; i < groups; i += 8) {
      const d8 x = load<d8>(v + i);
      d8 stored;
      if constexpr (S == Storage::binary32) {
        const f8 f = __builtin_convertvector(x * inverse, f8);
        put(w + i, f);
        stored = __builtin_convertvector(f, d8) * scale;
      } else if constexpr (S == Storage::bfloat16) {
        const d8 r = round_nearest<8, -126, 127>(x * inverse);
        const w8 bits = reinterpret_cast<w8>(__builtin_convertvector(r, f8)) >> 16;
        put(w + i, __builtin_convertvector(bits, h8));
        stored = r * scale;
      } else {
        const d8 r = round_nearest<11, -14, 15>(x * inverse);
        put_binary16(w + i, r);
        stored = r * scale;
      }
      if (a.track_max) {
        const d8 d = x - stored;
        e += d * d;
        mx = lane_max(mx, stored);
      }
      put(v + i, stored);
    }
    to_lanes(e, err);
    to_lanes(mx, stored_max);
    for (std::size_t i = groups, j = 0; i < count; ++i, ++j) {
      double stored;
      if constexpr (S == Storage::binary32) {
        const float f = static_cast<float>(v[i] * a.inverse_scale);
        w[i] = f;
        stored = static_cast<double>(f) * a.scale;
      } else {
        const double r = round_to<Rounding::nearest_even>(v[i] * a.inverse_scale, a.rounding);
        w[i] = S == Storage::bfloat16 ? bfloat16_bits(r) : binary16_bits(r);
        stored = r * a.scale;
      }
      if (a.track_max) {
        const double d = v[i] - stored;
        err.s[j] += d * d;
        stored_max.add(static_cast<int>(j), stored);
      }
      v[i] = stored;
    }
  }
  const double err2 = err.total();
  sums.err2 += err2;
  const double amax = stored_max.total();
  sums.amax = sums.amax > amax ? sums.amax : amax;
  if (!(amax <= 1.7976931348623157e308) || err2 != err2) sums.bad = true;
}

/// The rows [b, e) of HPCCG's 27-point stencil (StencilRows in cg_steps.cpp), eight at a
/// time: per grid line the column sums over the neighbouring lines (t), kept between two
/// zeros (the generic code's 0.0 for a missing left or right neighbour: 0 + t_i is t_i as
/// it adds it), then 28 p_i - ((t_(i-1) + t_i) + t_(i+1)), times the vector's scale.
template <class P>
EBLA_SIMD void stencil_rows(const P& p, int nx, int ny, int nz, std::size_t b, std::size_t e, double* out) {
  double padded[stored_tile + 4];
  const std::size_t line_length = static_cast<std::size_t>(nx);
  for (std::size_t i = b; i < e;) {
    const std::size_t line = i / line_length;
    const int ix0 = static_cast<int>(i % line_length);
    const int ix1 = static_cast<int>(ix0 + (e - i) < line_length ? ix0 + (e - i) : line_length);
    const int iy = static_cast<int>(line % ny), iz = static_cast<int>(line / ny);
    const int lo = ix0 > 0 ? ix0 - 1 : 0, hi = ix1 < nx ? ix1 : nx - 1;
    const std::size_t len = static_cast<std::size_t>(hi - lo + 1), lg = len / 8 * 8;
    double* t = padded + 1;  // t[k]: the column sum of column lo + k; t[-1] = t[len] = 0
    padded[0] = padded[len + 1] = 0;
    std::size_t rows[9];  // the first entry (column lo) of each neighbouring line, in the generic order
    int lines = 0;
    for (int dz = iz > 0 ? -1 : 0; dz <= (iz < nz - 1 ? 1 : 0); ++dz)
      for (int dy = iy > 0 ? -1 : 0; dy <= (iy < ny - 1 ? 1 : 0); ++dy)
        rows[lines++] = (static_cast<std::size_t>(iz + dz) * ny + static_cast<std::size_t>(iy + dy)) * line_length + lo;
    // each column's sum in a register, 0 + the lines in order: the generic code's additions
    for (std::size_t k = 0; k < lg; k += 8) {
      d8 s = zero();
      for (int l = 0; l < lines; ++l) {
        if constexpr (P::vector_scale) s += raw8(p, rows[l] + k);
        else s += load8(p, rows[l] + k);
      }
      put(t + k, s);
    }
    for (std::size_t k = lg; k < len; ++k) {
      double s = 0;
      for (int l = 0; l < lines; ++l) {
        if constexpr (P::vector_scale) s += p.raw(rows[l] + k);
        else s += p.load(rows[l] + k);
      }
      t[k] = s;
    }
    const std::size_t base = line * line_length;
    const std::size_t m = static_cast<std::size_t>(ix1 - ix0), mg = m / 8 * 8;
    const double* left = t + (ix0 - lo) - 1;  // left[k]: the column left of ix0 + k
    const std::size_t first = base + static_cast<std::size_t>(ix0);
    double* o = out + (first - b);
    for (std::size_t k = 0; k < mg; k += 8) {
      const d8 s = (load<d8>(left + k) + load<d8>(left + k + 1)) + load<d8>(left + k + 2);
      if constexpr (P::vector_scale) put(o + k, (splat(28.0) * raw8(p, first + k) - s) * splat(p.scale));
      else put(o + k, splat(28.0) * load8(p, first + k) - s);
    }
    for (std::size_t k = mg; k < m; ++k) {
      const double s = (left[k] + left[k + 1]) + left[k + 2];
      if constexpr (P::vector_scale) o[k] = (28.0 * p.raw(first + k) - s) * p.scale;
      else o[k] = 28.0 * p.load(first + k) - s;
    }
    i = base + static_cast<std::size_t>(ix1);
  }
}

#undef EBLA_SIMD_F16C

}  // namespace simd

#pragma GCC diagnostic pop
#endif  // EBLA_STORED_SIMD
// EBLA_SIMD stays defined for cg_steps.cpp, which includes this header last

}  // namespace ebla::detail
