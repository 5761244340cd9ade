// A vector kept in a storage format (core/storage.hpp), and the accessors through which
// kernels read it and write it, one tile at a time.
//
//   ebla::StoredVector p = ebla::make_stored_vector(ebla::Storage::block16, n, "p");
//   ebla::StoreSums s = ebla::store(p, v, bound);   // p := v rounded; s.err2 = ||v - p||^2
//   ebla::load(p, w);                                // w := p's values, exactly
//
// Kernels take a detail::StoredAccess<S> (load(i) -> double, the stored value exactly) and
// write whole tiles through store_tile (tiles start at multiples of storage_block, so a
// block is always written at once and picks its exponent from its own values). A kernel
// templated on S is written once for every format; dispatch_storage turns the run-time
// format into S.
//
// Where it runs: the accessors in any execution space (KOKKOS_INLINE_FUNCTION); the Views of
// a StoredVector live in Kokkos' default memory space.
#pragma once

#include <ebla/core/rounding.hpp>
#include <ebla/core/storage.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace ebla {

/// A vector of n values in `format`: the words of that format (only its View is allocated),
/// the block formats' exponents (of the unit of the last place, one per block), and the
/// floating formats' scale 2^scale_exponent (value = word 2^scale_exponent).
struct StoredVector {
  Storage format = Storage::binary64;
  std::size_t n = 0;
  Kokkos::View<double*> f64;
  Kokkos::View<float*> f32;
  Kokkos::View<std::uint16_t*> u16;      ///< bfloat16 or binary16 bits
  Kokkos::View<std::int16_t*> i16;       ///< block16 integers
  Kokkos::View<std::int8_t*> i8;         ///< block8 integers
  Kokkos::View<std::int16_t*> exponent;  ///< block formats: 2^exponent(b) is block b's unit
  int scale_exponent = 0;                ///< floating formats: the vector's scale
  /// Bytes of its words and exponents.
  double bytes() const { return storage_bytes(format, static_cast<double>(n)); }
};

/// A zero vector of n values in `format` (labels its Views with `label`).
StoredVector make_stored_vector(Storage format, std::size_t n, const std::string& label);

/// What storing a tile, a vector or a pass measured: the sum of squared rounding errors
/// (each term exact, (v - stored)^2 rounded once), the largest stored magnitude, and
/// whether a value was not finite (then the words are unspecified).
struct StoreSums {
  double err2 = 0;
  double amax = 0;
  bool bad = false;
};

/// v rounded into p (p.n values; v has p.n entries), with the scale of a floating format
/// chosen from `bound` >= max |v_i| (store_scale_exponent); bound < 0: from max |v_i|,
/// computed first (a pass of its own). Returns the sums of the rounding.
StoreSums store(StoredVector& p, Kokkos::View<const double*> v, double bound = -1);
/// w = the values of p, exactly.
void load(const StoredVector& p, Kokkos::View<double*> w);

namespace detail {

/// Values per tile of the stored-vector kernels: a multiple of storage_block, so that tiles
/// hold whole blocks.
constexpr std::size_t stored_tile = 512;
static_assert(stored_tile % storage_block == 0, "tiles hold whole blocks");

/// The larger of a and b, NaN if b is NaN (the host's merge of tile maxima).
KOKKOS_INLINE_FUNCTION double max_nan(double a, double b) { return (b > a || b != b) ? b : a; }

/// Eight running sums, added in a fixed order at the end: a sum over a tile in lanes
/// (in_lanes) that compilers can vectorise without reassociating anything.
struct LaneSums {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  KOKKOS_INLINE_FUNCTION double total() const { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])); }
};

/// Eight running maxima of |x| (a NaN is not seen here: the sums of a pass carry it).
struct LaneMax {
  double m[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  KOKKOS_INLINE_FUNCTION void add(int j, double x) {
    const double a = x < 0 ? -x : x;
    m[j] = a > m[j] ? a : m[j];
  }
  KOKKOS_INLINE_FUNCTION double total() const {
    double a = 0;
    for (int j = 0; j < 8; ++j) a = m[j] > a ? m[j] : a;
    return a;
  }
};

/// f(i, lane) for i in [0, count), lane = i mod 8 in whole groups of eight, then the rest.
template <class F>
KOKKOS_INLINE_FUNCTION void in_lanes(std::size_t count, const F& f) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8)
    for (int j = 0; j < 8; ++j) f(i + j, j);
  for (int j = 0; i < count; ++i, ++j) f(i, j);
}

/// Reads and writes the stored values of one format.
template <Storage S>
struct StoredAccess {
  using Word = std::conditional_t<S == Storage::binary64, double,
               std::conditional_t<S == Storage::binary32, float,
               std::conditional_t<S == Storage::block16, std::int16_t,
               std::conditional_t<S == Storage::block8, std::int8_t, std::uint16_t>>>>;
  static constexpr bool block = S == Storage::block16 || S == Storage::block8;
  static constexpr int magnitude_bits = S == Storage::block8 ? 7 : 15;  ///< b' of the block formats

  Kokkos::View<Word*> w;
  Kokkos::View<std::int16_t*> exponent;
  double scale = 1, inverse_scale = 1;  ///< floating formats: 2^s and 2^-s
  RoundingConstants rounding{};
  /// Whether store_tile measures: the squared rounding errors and the largest stored
  /// magnitude (a NaN or an infinity shows in err2). Without it, store_tile only stores (the
  /// block formats still find each block's largest magnitude for its exponent).
  bool track_max = true;

  StoredAccess() = default;
  explicit StoredAccess(const StoredVector& v) : StoredAccess(v, v.scale_exponent) {}
  /// Reads v as if its scale were 2^scale_exponent (a pass that stores v anew in place reads
  /// it with the scale it had before).
  StoredAccess(const StoredVector& v, int scale_exponent) : exponent(v.exponent) {
    if constexpr (S == Storage::binary64) w = v.f64;
    else if constexpr (S == Storage::binary32) w = v.f32;
    else if constexpr (S == Storage::block16) w = v.i16;
    else if constexpr (S == Storage::block8) w = v.i8;
    else w = v.u16;
    scale = pow2(scale_exponent);
    inverse_scale = pow2(-scale_exponent);
    rounding = rounding_constants(storage_float_format(S));
  }

  /// Whether a value is its word's value times one scale for the whole vector (all but the
  /// block formats): then sums of raw() times scale are the sums of load(), bit for bit, as
  /// long as nothing overflows or underflows (a power of two commutes with rounding).
  static constexpr bool vector_scale = !block;
  /// The word's value without the scale (vector_scale formats).
  KOKKOS_INLINE_FUNCTION double raw(std::size_t i) const {
    if constexpr (S == Storage::binary64) return w(i);
    else if constexpr (S == Storage::binary32) return static_cast<double>(w(i));
    else if constexpr (S == Storage::bfloat16) return bfloat16_value(w(i));
    else if constexpr (S == Storage::binary16) return binary16_value(w(i));
    else return load(i);
  }

  /// The stored value of entry i, exactly.
  KOKKOS_INLINE_FUNCTION double load(std::size_t i) const {
    if constexpr (S == Storage::binary64) return w(i);
    else if constexpr (S == Storage::binary32) return static_cast<double>(w(i)) * scale;
    else if constexpr (S == Storage::bfloat16) return bfloat16_value(w(i)) * scale;
    else if constexpr (S == Storage::binary16) return binary16_value(w(i)) * scale;
    else return static_cast<double>(w(i)) * pow2(exponent(i / storage_block));
  }

  /// Stores v[0, count) as entries [begin, begin + count) and replaces v[i] by the stored
  /// value: begin a multiple of storage_block, count a multiple of it unless the tile ends
  /// the vector. Adds the rounding's squared errors and largest stored magnitude to `sums`
  /// (a NaN shows in err2; binary64 adds no error).
  KOKKOS_INLINE_FUNCTION void store_tile(std::size_t begin, std::size_t count, double* v, StoreSums& sums) const {
    LaneSums err;
    LaneMax stored_max;
    if constexpr (S == Storage::binary64) {
      if (v != &w(begin))  // else the kernel wrote the tile in place (tile_buffer)
        for (std::size_t i = 0; i < count; ++i) w(begin + i) = v[i];
      if (track_max)  // no rounding error: err2 only catches a NaN or an infinity
        in_lanes(count, [&](std::size_t i, int j) {
          stored_max.add(j, v[i]);
          err.s[j] += v[i] - v[i];
        });
    } else if constexpr (block) {
      for (std::size_t b0 = 0; b0 < count; b0 += storage_block) {
        const std::size_t m = b0 + storage_block < count ? storage_block : count - b0;
        LaneMax block_max;
        in_lanes(m, [&](std::size_t i, int j) { block_max.add(j, v[b0 + i]); });
        double amax = block_max.total();
        for (std::size_t i = 0; i < m; ++i) amax += v[b0 + i] - v[b0 + i];  // NaN if a value is not finite
        if (!(amax <= 1.7976931348623157e308)) {  // NaN or infinite: nothing to round
          sums.bad = true;
          for (std::size_t i = 0; i < m; ++i) w(begin + b0 + i) = 0;
          continue;
        }
        const int unit = block_exponent(amax, magnitude_bits + 1) - magnitude_bits;  // value = word 2^unit
        exponent((begin + b0) / storage_block) = static_cast<std::int16_t>(unit);
        const double down = pow2(-unit < 1023 ? -unit : 1023), down2 = pow2(-unit < 1023 ? 0 : -unit - 1023);
        const double up = pow2(unit);
        // the stored values are within half a unit of their values: at most amax + 2^unit / 2
        const double top = amax + 0.5 * pow2(unit);
        stored_max.m[0] = stored_max.m[0] > top ? stored_max.m[0] : top;
        in_lanes(m, [&](std::size_t i, int j) {
          const double word = round_integer(v[b0 + i] * down * down2);  // |word| <= 2^b' - 1
          w(begin + b0 + i) = static_cast<Word>(word);
          const double e = v[b0 + i] - word * up;  // exact
          err.s[j] += e * e;
          v[b0 + i] = word * up;
        });
      }
    } else if (!track_max) {
      for (std::size_t i = 0; i < count; ++i) {
        if constexpr (S == Storage::binary32) {
          const float f = static_cast<float>(v[i] * inverse_scale);
          w(begin + i) = f;
          v[i] = static_cast<double>(f) * scale;
        } else {
          const double r = round_to<Rounding::nearest_even>(v[i] * inverse_scale, rounding);
          w(begin + i) = S == Storage::bfloat16 ? bfloat16_bits(r) : binary16_bits(r);
          v[i] = r * scale;
        }
      }
    } else {
      in_lanes(count, [&](std::size_t i, int j) {
        double stored;
        if constexpr (S == Storage::binary32) {
          const float f = static_cast<float>(v[i] * inverse_scale);  // exact scaling; round to nearest even, once
          w(begin + i) = f;
          stored = static_cast<double>(f) * scale;
        } else {
          const double r = round_to<Rounding::nearest_even>(v[i] * inverse_scale, rounding);
          w(begin + i) = S == Storage::bfloat16 ? bfloat16_bits(r) : binary16_bits(r);
          stored = r * scale;
        }
        const double e = v[i] - stored;  // exact: stored is v rounded to fewer digits
        err.s[j] += e * e;
        v[i] = stored;
        stored_max.add(j, stored);
      });
    }
    const double err2 = err.total();
    sums.err2 += err2;
    const double amax = stored_max.total();
    sums.amax = sums.amax > amax ? sums.amax : amax;
    if (!(amax <= 1.7976931348623157e308) || err2 != err2) sums.bad = true;  // inf or NaN
  }

  /// Where a kernel computes the tile [begin, ...) before store_tile: binary64 words in
  /// place, else the kernel's own buffer `local`.
  KOKKOS_INLINE_FUNCTION double* tile_buffer(std::size_t begin, double* local) const {
    if constexpr (S == Storage::binary64) return &w(begin);
    else return local;
  }
};

/// f(std::integral_constant<Storage, S>{}) for the run-time format s.
template <class F>
decltype(auto) dispatch_storage(Storage s, F&& f) {
  switch (s) {
    case Storage::binary32: return f(std::integral_constant<Storage, Storage::binary32>{});
    case Storage::bfloat16: return f(std::integral_constant<Storage, Storage::bfloat16>{});
    case Storage::binary16: return f(std::integral_constant<Storage, Storage::binary16>{});
    case Storage::block16: return f(std::integral_constant<Storage, Storage::block16>{});
    case Storage::block8: return f(std::integral_constant<Storage, Storage::block8>{});
    case Storage::binary64: break;
  }
  return f(std::integral_constant<Storage, Storage::binary64>{});
}

/// f(a, b) with a and b the integral constants of two run-time formats.
template <class F>
decltype(auto) dispatch_storage(Storage s, Storage t, F&& f) {
  return dispatch_storage(s, [&](auto a) { return dispatch_storage(t, [&](auto b) { return f(a, b); }); });
}

/// Sums of a pass over tiles: K fields per tile, written by the tile's work item and merged
/// on the host in tile order (sums added, maxima taken, NaN kept), so that the result is
/// the same bits for any thread count.
template <int K>
struct TileFields {
  double v[K];
};

/// Runs body(begin, end, fields) for the tiles of stored_tile values covering [0, n), every
/// thread of the default execution space taking tiles, into row t of part (tile t).
/// (A function of its own, of a declared return type: CUDA's extended lambdas may not sit in
/// a function whose return type is deduced.)
template <int K, class Body>
void fill_tile_fields(const char* label, std::size_t n, const Body& body, const Kokkos::View<double**>& part) {
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<Kokkos::DefaultExecutionSpace>(0, part.extent(0)), KOKKOS_LAMBDA(const std::size_t t) {
        TileFields<K> f;
        for (int j = 0; j < K; ++j) f.v[j] = 0;
        const std::size_t begin = t * stored_tile, end = begin + stored_tile < n ? begin + stored_tile : n;
        body(begin, end, f);
        for (int j = 0; j < K; ++j) part(t, j) = f.v[j];
      });
}

/// fill_tile_fields, returning every tile's fields on the host (row t: tile t), for the
/// caller to merge in tile order.
template <int K, class Body>
auto tile_fields(const char* label, std::size_t n, const Body& body) {
  const std::size_t tiles = (n + stored_tile - 1) / stored_tile;
  Kokkos::View<double**> part(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), tiles, K);
  fill_tile_fields<K>(label, n, body, part);
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), part);
}

/// tile_fields, merged in tile order: field j is summed, or maximised where bit j of
/// max_mask is set.
template <int K, class Body>
TileFields<K> over_tiles(const char* label, std::size_t n, unsigned max_mask, const Body& body) {
  const auto host = tile_fields<K>(label, n, body);
  const std::size_t tiles = host.extent(0);
  TileFields<K> total;
  for (int j = 0; j < K; ++j) total.v[j] = 0;
  for (std::size_t t = 0; t < tiles; ++t)
    for (int j = 0; j < K; ++j)
      total.v[j] = (max_mask >> j) & 1 ? max_nan(total.v[j], host(t, j))
                                       : total.v[j] + host(t, j);
  return total;
}

}  // namespace detail

}  // namespace ebla
