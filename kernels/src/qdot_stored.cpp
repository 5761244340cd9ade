// The stored, quantized vector of qdot_stored.hpp: the selection on x alone, the tiles'
// formats (checked component by component), the words, and the dot product from them.
#include <ebla/kernels/qdot_stored.hpp>

#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/exact.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot_views.hpp>
#include <ebla/kernels/quantize_host.hpp>
#include <ebla/kernels/stored_vector.hpp>

#include <algorithm>
#include <chrono>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

// The lambdas of the tile loops are inlined into the loops compiled for each instruction
// set (a call out of them would run the baseline code).
#if defined(__GNUC__)
#define EBLA_ALWAYS_INLINE __attribute__((always_inline))
#else
#define EBLA_ALWAYS_INLINE
#endif

namespace ebla {

namespace {

constexpr const char* store_function = "ebla::qdot_store";
constexpr const char* dot_function = "ebla::qdot(stored)";
using detail::stored_tile;

// the double unit roundoff, as long double
constexpr long double u_double = 0x1p-53L;

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A nonnegative bound as a double no smaller: the conversion rounded up (a bound below
// double's range becomes 2^-1074, not 0), then a relative 2^-50 for the few roundings of
// its evaluation in long double.
double round_up(long double v) {
  double d = static_cast<double>(v);
  if (static_cast<long double>(d) < v) d = std::nextafter(d, std::numeric_limits<double>::infinity());
  return d * (1 + 0x1p-50);
}

// gamma_k = k u / (1 - k u) for the double unit roundoff.
long double gamma_d(long double k) { return k * u_double / (1 - k * u_double); }

// The storage that holds a ladder level's format; InvalidArgument for any other format.
Storage storage_of(const QdotLevel& level) {
  if (level.perforate) return Storage::binary64;  // unused
  for (const Storage s : {Storage::binary64, Storage::binary32, Storage::binary16, Storage::bfloat16}) {
    const Format f = s == Storage::binary64 ? formats::binary64() : detail::storage_float_format(s);
    if (level.format.t == f.t && level.format.emin == f.emin && level.format.emax == f.emax &&
        level.format.subnormals == f.subnormals)
      return s;
  }
  throw_invalid(store_function, "the ladder level " + format_name(level.format) +
                                    " cannot be stored (only binary64, binary32, binary16 and bfloat16 can)");
}

// A tile's level byte: the ladder index (below 8), and rest_flag where R_t > 0 (the dot
// product then needs max |y_i| over the tile).
constexpr std::uint8_t level_mask = 0x7f;
constexpr std::uint8_t rest_flag = 0x80;

// The ladder as the tile kernels see it (plain data).
struct TileLevels {
  int count = 1;
  int perforate = -1;                                     ///< index of perforate, or -1
  Storage storage[detail::qdot_max_levels] = {};          ///< storage of each level
  int t[detail::qdot_max_levels] = {};                    ///< bits: a component of bin e may err by 2^(e - t)
  RoundingConstants rounding[detail::qdot_max_levels] = {};
  int e_min = 0;                                          ///< bin of plan level 0
};

TileLevels tile_levels(const QdotPlan& plan, const std::vector<Storage>& storage) {
  TileLevels L;
  L.count = static_cast<int>(plan.ladder.size());
  L.e_min = plan.e_min;
  for (int l = 0; l < L.count; ++l) {
    if (plan.ladder[l].perforate) {
      L.perforate = l;
      continue;
    }
    L.storage[l] = storage[l];
    L.t[l] = l == 0 ? 0 : plan.ladder[l].format.t;  // level 0: the input, kept exactly (no error allowed)
    if (storage[l] != Storage::binary64) L.rounding[l] = rounding_constants(detail::storage_float_format(storage[l]));
  }
  return L;
}

// binary16 bits as a float, exactly and without a branch: the bits moved into a float's
// exponent and fraction (a binary16 subnormal becomes a float subnormal), times 2^112
// (the difference of the biases). Stored words are finite.
KOKKOS_FORCEINLINE_FUNCTION float half_value(std::uint16_t w) {
  const std::uint32_t b = (static_cast<std::uint32_t>(w & 0x7fffu) << 13) | (static_cast<std::uint32_t>(w & 0x8000u) << 16);
  return bit_cast<float>(b) * 0x1p112f;
}

KOKKOS_FORCEINLINE_FUNCTION float bf16_value(std::uint16_t w) { return bit_cast<float>(static_cast<std::uint32_t>(w) << 16); }

// x rounded to storage s (not binary64) at scale 2^s (inverse = 2^-s): its word's bits and
// x~ = word 2^s as the dot product reads it back.
KOKKOS_INLINE_FUNCTION double round_stored(Storage s, const RoundingConstants& rc, double x, double inverse,
                                           double scale, std::uint32_t& word) {
  if (s == Storage::binary32) {
    const float f = static_cast<float>(x * inverse);  // round to nearest even, once
    word = bit_cast<std::uint32_t>(f);
    return static_cast<double>(f) * scale;
  }
  const double r = round_to<Rounding::nearest_even>(x * inverse, rc);
  if (s == Storage::binary16) {
    const std::uint16_t h = detail::binary16_bits(r);
    word = h;
    return static_cast<double>(half_value(h)) * scale;
  }
  const std::uint16_t b = detail::bfloat16_bits(r);
  word = b;
  return static_cast<double>(bf16_value(b)) * scale;
}

// What storing a tile at one level costs in error.
struct TileTry {
  bool ok = true;    ///< every component within its bin's allowance
  double rest = 0;   ///< sum |x_i - x~_i| over the components not within u_F |x~_i|
  double err = 0;    ///< sum |x_i - x~_i|
};

// Stores x[0, m) at level l (scale 2^s) in thought: whether each component errs by at most
// its bin's allowance (2^(e - t_k) at level k of its bin, |x_i| perforated, 0 at level 0),
// with the error formed exactly (TwoSum; an inexact difference counts as a failure).
template <class Levels>
KOKKOS_INLINE_FUNCTION TileTry try_level(const TileLevels& L, const Levels& bin_level, int l, const double* x,
                                         std::size_t m, int s) {
  TileTry r;
  const bool skip = l == L.perforate;
  const Storage st = L.storage[l];
  const double scale = pow2(s), inverse = pow2(-s);
  const int t = skip ? 0 : L.t[l];
  for (std::size_t i = 0; i < m && r.ok; ++i) {
    if (x[i] == 0) continue;
    const int e = exponent_of(x[i]);
    const int k = bin_level(e - L.e_min);
    std::uint32_t word = 0;
    const double stored = skip ? 0.0 : st == Storage::binary64 ? x[i] : round_stored(st, L.rounding[l], x[i], inverse, scale, word);
    double d, lost;
    detail::two_sum(x[i], -stored, d, lost);
    const double ad = detail::magnitude(d);
    const double allowance = k == L.perforate ? detail::magnitude(x[i])
                             : L.t[k] == 0    ? 0.0
                             : e - L.t[k] >= -1074 ? pow2(e - L.t[k]) : 0.0;
    r.ok = lost == 0 && ad <= allowance;
    r.err += ad;
    // |x - x~| <= u_F |x~| with u_F = 2^-t: the relative bound of the dot product
    const bool relative = !skip && (t == 0 ? ad == 0 : ad <= detail::magnitude(stored) * pow2(-t));
    r.rest += relative ? 0.0 : ad;
  }
  return r;
}

// The histogram of fexp(x_i) over the nonzero components; slots as qdot's.
struct XHistogram {
  using value_type = std::int64_t[];
  using size_type = std::size_t;
  Kokkos::View<const double*> x;
  unsigned value_count = detail::qdot_hist_size;
  KOKKOS_INLINE_FUNCTION void operator()(const std::size_t i, value_type h) const {
    const std::uint64_t a = bit_cast<std::uint64_t>(x(i)) & binary64::abs_mask;
    if ((a >> 52) == 0x7ff) h[detail::qdot_slot_nonfinite] += 1;
    else if (a == 0) h[detail::qdot_slot_zero] += 1;
    else h[detail::qdot_exponent(a) + detail::qdot_offset] += 1;
  }
  KOKKOS_INLINE_FUNCTION void init(value_type h) const {
    for (unsigned j = 0; j < value_count; ++j) h[j] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type d, const value_type s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#if KOKKOS_VERSION < 30700
  KOKKOS_INLINE_FUNCTION void join(volatile std::int64_t* d, const volatile std::int64_t* s) const {
    for (unsigned j = 0; j < value_count; ++j) d[j] += s[j];
  }
#endif
};

// The first component of v that is NaN or infinite (v has one), for the message.
std::string first_nonfinite(Kokkos::View<const double*> v, const char* name) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (!std::isfinite(h(i))) return std::string(name) + "[" + std::to_string(i) + "] = " + str(h(i)) + " is not finite";
  return std::string(name) + " is not finite";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A host array as a View of the default memory space: the array itself where that space
// reaches host memory, else a copy.
Kokkos::View<const double*> device_view(const double* p, std::size_t n) {
  using host_array = Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const host_array h(p, n);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace::memory_space, Kokkos::HostSpace>::accessible) {
    return Kokkos::View<const double*>(p, n);
  } else {
    Kokkos::View<double*> d("ebla::qdot_stored copy", n);
    Kokkos::deep_copy(d, h);
    return d;
  }
}

void check_array(const double* p, std::size_t n, const char* name, const char* function) {
  if (n > static_cast<std::size_t>(PTRDIFF_MAX) / sizeof(double))
    throw_invalid(function, "n = " + std::to_string(n) + " is more elements than any array holds");
  if (n > 0 && p == nullptr) throw_invalid(function, std::string(name) + " is null but n = " + std::to_string(n));
}

}  // namespace

std::size_t QdotStored::bytes() const {
  return f64.extent(0) * sizeof(double) + f32.extent(0) * sizeof(float) + u16.extent(0) * sizeof(std::uint16_t) +
         tiles() * (sizeof(std::uint8_t) + sizeof(std::size_t) + 2 * sizeof(double));
}

std::string QdotStored::to_string() const {
  std::ostringstream o;
  o << "qdot stored vector: n = " << n << ", " << bytes() << " bytes (binary64: " << 8 * n << "), " << tiles()
    << " tiles of " << stored_tile << ", ||x - x~||_1 <= " << error_l1 << " (||x||_1 = " << l1 << ")\n";
  for (std::size_t l = 0; l < plan.ladder.size(); ++l)
    o << "  " << (plan.ladder[l].perforate ? std::string("perforate") : format_name(plan.ladder[l].format)) << ": "
      << count_per_level[l] << " components in " << tiles_per_level[l] << " tiles\n";
  o << plan.to_string();
  return o.str();
}

QdotStored qdot_store(Kokkos::View<const double*> x, const QdotOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.policy != QdotPolicy::budget)
    throw_invalid(store_function, std::string("policy ") + ebla::to_string(options.policy) +
                                      " needs y (its bin scores are of products); a stored vector takes budget");
  QdotStored s;
  s.n = x.extent(0);
  const std::vector<QdotLevel> ladder = detail::resolve_ladder(options, 53, store_function);
  for (const QdotLevel& l : ladder) s.storage.push_back(storage_of(l));

  // Selection: the histogram of fexp(x_i), and the budget (S1) with x's costs: a rounding
  // to t bits errs by at most u 2^e, a perforation by |x_i| < 2 2^e.
  Kokkos::View<std::int64_t*, Kokkos::HostSpace> histogram("ebla::qdot_store histogram", detail::qdot_hist_size);
  Kokkos::parallel_reduce("ebla::qdot_store histogram", Kokkos::RangePolicy<>(0, s.n), XHistogram{x}, histogram);
  if (histogram(detail::qdot_slot_nonfinite) > 0) throw_invalid(store_function, first_nonfinite(x, "x"));
  s.plan = detail::plan_from_histogram(histogram.data(), s.n, 53, options, detail::QdotErrorModel{1, 2});
  s.zeros = static_cast<std::size_t>(histogram(detail::qdot_slot_zero));

  // Tiles: the cheapest level (last of the ladder first) under which every component errs
  // by at most its bin's allowance; level 0 (binary64, exact) always qualifies.
  const TileLevels L = tile_levels(s.plan, s.storage);
  Kokkos::View<std::uint8_t*> bin_level("ebla::qdot_store bins", s.plan.level.size());
  {
    auto h = Kokkos::create_mirror_view(bin_level);
    for (std::size_t j = 0; j < s.plan.level.size(); ++j) h(j) = s.plan.level[j];
    Kokkos::deep_copy(bin_level, h);
  }
  const auto fields = detail::tile_fields<5>(
      "ebla::qdot_store tiles", s.n, KOKKOS_LAMBDA(std::size_t b, std::size_t e, detail::TileFields<5>& f) {
        double amax = 0, l1 = 0;
        for (std::size_t i = b; i < e; ++i) {
          const double a = detail::magnitude(x(i));
          amax = a > amax ? a : amax;
          l1 += a;
        }
        for (int l = L.count - 1; l >= 0; --l) {
          const int sc = l == L.perforate || L.storage[l] == Storage::binary64 ? 0 : store_scale_exponent(L.storage[l], amax);
          const TileTry r = try_level(L, bin_level, l, &x(b), e - b, sc);
          if (!r.ok && l > 0) continue;
          f.v[0] = l;
          f.v[1] = sc;
          f.v[2] = r.rest;
          f.v[3] = r.err;
          f.v[4] = l1;
          return;
        }
      });

  // Offsets into each format's words, in tile order, and the bounds of the tiles.
  const std::size_t tiles = fields.extent(0);
  s.host_level.resize(tiles);
  s.rest.resize(tiles);
  s.count_per_level.assign(ladder.size(), 0);
  s.tiles_per_level.assign(ladder.size(), 0);
  Kokkos::View<std::size_t*> offset("ebla::qdot_store offsets", tiles);
  Kokkos::View<double*> scale("ebla::qdot_store scales", tiles);
  Kokkos::View<std::uint8_t*> level("ebla::qdot_store levels", tiles);
  auto h_offset = Kokkos::create_mirror_view(offset);
  auto h_scale = Kokkos::create_mirror_view(scale);
  auto h_level = Kokkos::create_mirror_view(level);
  std::size_t words[4] = {0, 0, 0, 0};  // binary64, binary32, 16 bits
  long double err = 0, l1 = 0;
  for (std::size_t t = 0; t < tiles; ++t) {
    const int l = static_cast<int>(fields(t, 0));
    const std::size_t m = std::min(stored_tile, s.n - t * stored_tile);
    const int kind = l == L.perforate ? 3 : s.storage[l] == Storage::binary64 ? 0 : s.storage[l] == Storage::binary32 ? 1 : 2;
    s.host_level[t] = static_cast<std::uint8_t>(l);
    h_level(t) = static_cast<std::uint8_t>(l | (fields(t, 2) > 0 ? rest_flag : 0));
    h_offset(t) = words[kind];
    words[kind] += kind == 3 ? 0 : m;
    h_scale(t) = pow2(static_cast<int>(fields(t, 1)));
    // sums of m nonnegative terms, each exact: true <= computed / (1 - gamma_m)
    const long double up = 1 / (1 - gamma_d(static_cast<long double>(m)));
    s.rest[t] = round_up(fields(t, 2) * up);
    err += fields(t, 3) * up;
    l1 += fields(t, 4) * up;
    s.count_per_level[l] += m;
    s.tiles_per_level[l] += 1;
  }
  s.error_l1 = round_up(err * (1 + 0x1p-60L * tiles));  // the long double sums of the tiles
  s.l1 = round_up(l1 * (1 + 0x1p-60L * tiles));
  Kokkos::deep_copy(offset, h_offset);
  Kokkos::deep_copy(scale, h_scale);
  Kokkos::deep_copy(level, h_level);
  s.tile_offset = offset;
  s.tile_scale = scale;
  s.tile_level = level;
  s.f64 = Kokkos::View<double*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ebla::qdot_store binary64"), words[0]);
  s.f32 = Kokkos::View<float*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ebla::qdot_store binary32"), words[1]);
  s.u16 = Kokkos::View<std::uint16_t*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ebla::qdot_store 16 bits"), words[2]);

  // The words, tile by tile, as try_level rounded them.
  const auto f64 = s.f64;
  const auto f32 = s.f32;
  const auto u16 = s.u16;
  const std::size_t n = s.n;
  Kokkos::parallel_for(
      "ebla::qdot_store words", Kokkos::RangePolicy<>(0, tiles), KOKKOS_LAMBDA(const std::size_t t) {
        const int l = level(t) & level_mask;
        if (l == L.perforate) return;
        const std::size_t b = t * stored_tile, e = b + stored_tile < n ? b + stored_tile : n, o = offset(t);
        const Storage st = L.storage[l];
        const double sc = scale(t), inverse = 1 / sc;  // a power of two: exact
        for (std::size_t i = b; i < e; ++i) {
          if (st == Storage::binary64) {
            f64(o + i - b) = x(i);
            continue;
          }
          std::uint32_t word = 0;
          round_stored(st, L.rounding[l], x(i), inverse, sc, word);
          if (st == Storage::binary32) f32(o + i - b) = bit_cast<float>(word);
          else u16(o + i - b) = static_cast<std::uint16_t>(word);
        }
      });
  Kokkos::fence();
  s.store_seconds = seconds_since(t0);
  return s;
}

QdotStored qdot_store(const double* x, std::size_t n, const QdotOptions& options) {
  check_array(x, n, "x", store_function);
  return qdot_store(device_view(x, n), options);
}

namespace {

// Tile t's dot product into f: f[0] + f[1] the sum of q_i = fl(x~_i y_i) in eight lanes, the
// lanes merged by TwoSum in lane order; f[2] = sum |q_i|; f[3] = max |y_i| where the tile
// has components outside the relative bound (R_t > 0), else 0. Binary64 tiles add the q_i
// by TwoSum (exact; the errors summed into f[1]); narrower tiles add them in each lane
// plainly (at most 64 terms a lane: error <= gamma_64 sum |q_i|, Higham (4.4), far below
// their quantization's u_F sum |q_i|). A NaN or an infinity in y shows in f[2] (q_i is NaN or
// infinite, 0 * inf included).
// The eight lanes of a tile's sums.
struct Lanes {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};     ///< sums of q_i
  double c[8] = {0, 0, 0, 0, 0, 0, 0, 0};     ///< TwoSum errors (compensated tiles)
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};     ///< sums of |q_i|
  double ymax[8] = {0, 0, 0, 0, 0, 0, 0, 0};  ///< max |y_i|
};

// Components [i, m) of a tile into the lanes: lane j takes i = j mod 8 in whole groups of
// eight, then the rest from lane 0.
template <bool compensated, bool ymax_needed, class Load>
KOKKOS_FORCEINLINE_FUNCTION void add_lanes(std::size_t i, std::size_t m, const double* y, const Load& load, Lanes& L) {
  const auto step = [&](std::size_t k, int j) EBLA_ALWAYS_INLINE {
    const double q = load(k) * y[k];
    if constexpr (compensated) {
      double sum, err;
      detail::two_sum(L.s[j], q, sum, err);  // exact
      L.s[j] = sum;
      L.c[j] += err;
    } else {
      L.s[j] += q;
    }
    L.a[j] += detail::magnitude(q);
    if constexpr (ymax_needed) {
      const double ay = detail::magnitude(y[k]);
      L.ymax[j] = ay > L.ymax[j] ? ay : L.ymax[j];
    }
  };
  for (; i + 8 <= m; i += 8)
    for (int j = 0; j < 8; ++j) step(i + j, j);
  for (int j = 0; i < m; ++i, ++j) step(i, j);
}

// The lanes merged into a tile's fields: s by TwoSum in lane order, the rest in a fixed order.
KOKKOS_FORCEINLINE_FUNCTION void merge_lanes(const Lanes& L, detail::TileFields<5>& f) {
  double sum = L.s[0], comp = L.c[0];
  for (int j = 1; j < 8; ++j) {
    double next, err;
    detail::two_sum(sum, L.s[j], next, err);
    sum = next;
    comp += L.c[j] + err;
  }
  f.v[0] = sum;
  f.v[1] = comp;
  f.v[2] = ((L.a[0] + L.a[1]) + (L.a[2] + L.a[3])) + ((L.a[4] + L.a[5]) + (L.a[6] + L.a[7]));
  double top = 0;
  for (int j = 0; j < 8; ++j) top = L.ymax[j] > top ? L.ymax[j] : top;
  f.v[3] = top;
}

template <bool compensated, bool ymax_needed, class Load>
KOKKOS_FORCEINLINE_FUNCTION void dot_tile(std::size_t m, const double* y, const Load& load, detail::TileFields<5>& f) {
  Lanes L;
  add_lanes<compensated, ymax_needed>(0, m, y, load, L);
  merge_lanes(L, f);
}

template <class Load>
KOKKOS_FORCEINLINE_FUNCTION void dot_tile(bool compensated, bool ymax_needed, std::size_t m, const double* y,
                                     const Load& load, detail::TileFields<5>& f) {
  if (compensated) {
    if (ymax_needed) return dot_tile<true, true>(m, y, load, f);
    return dot_tile<true, false>(m, y, load, f);
  }
  if (ymax_needed) return dot_tile<false, true>(m, y, load, f);
  return dot_tile<false, false>(m, y, load, f);
}

// A perforated tile: y read for the bound alone, f[3] = max |y_i|, f[4] = sum (y_i - y_i)
// (NaN where y holds NaN or an infinity).
KOKKOS_FORCEINLINE_FUNCTION void skip_tile(std::size_t m, const double* y, detail::TileFields<5>& f) {
  detail::LaneSums bad;
  detail::LaneMax ymax;
  detail::in_lanes(m, [&](std::size_t i, int j) {
    ymax.add(j, y[i]);
    bad.s[j] += y[i] - y[i];
  });
  f.v[3] = ymax.total();
  f.v[4] = bad.total();
}

// What one tile's dot product reads.
struct TileArgs {
  const double* f64;
  const float* f32;
  const std::uint16_t* u16;
  const std::uint8_t* level;
  const std::size_t* offset;
  const double* scale;
  const double* y;
  std::size_t n;
  TileLevels L;
};

// Tile t's fields (dot_tile or skip_tile) into f[0, 5).
KOKKOS_FORCEINLINE_FUNCTION void tile(const TileArgs& a, std::size_t t, detail::TileFields<5>& f) {
  for (int j = 0; j < 5; ++j) f.v[j] = 0;
  const std::size_t b = t * stored_tile, m = b + stored_tile < a.n ? stored_tile : a.n - b, o = a.offset[t];
  const int l = a.level[t] & level_mask;
  const bool ymax_needed = (a.level[t] & rest_flag) != 0;  // R_t > 0
  const double sc = a.scale[t];
  const double* y = a.y + b;
  if (l == a.L.perforate) return skip_tile(m, y, f);
  switch (a.L.storage[l]) {
    case Storage::binary64: {
      const double* w = a.f64 + o;
      return dot_tile(true, ymax_needed, m, y, [&](std::size_t i) EBLA_ALWAYS_INLINE { return w[i]; }, f);
    }
    case Storage::binary32: {
      const float* w = a.f32 + o;
      return dot_tile(false, ymax_needed, m, y, [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(w[i]) * sc; }, f);
    }
    case Storage::binary16: {
      const std::uint16_t* w = a.u16 + o;
      return dot_tile(false, ymax_needed, m, y,
                      [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(half_value(w[i])) * sc; }, f);
    }
    default: {
      const std::uint16_t* w = a.u16 + o;
      return dot_tile(false, ymax_needed, m, y,
                      [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(bf16_value(w[i])) * sc; }, f);
    }
  }
}

// The tiles [first, last) on the host, compiled for several instruction sets (as
// quantize_host.cpp): the same operations in the same order, so the same bits.
void tiles_baseline(const TileArgs& a, std::size_t first, std::size_t last, detail::TileFields<5>* f) {
  for (std::size_t t = first; t < last; ++t) tile(a, t, f[t]);
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,bmi,bmi2,fma"))) void tiles_avx2(const TileArgs& a, std::size_t first, std::size_t last,
                                                             detail::TileFields<5>* f) {
  for (std::size_t t = first; t < last; ++t) tile(a, t, f[t]);
}
#define EBLA_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma")))

// The whole groups of eight of a tile in AVX-512 registers, one lane a register element: the
// operations of add_lanes in the same order (the stored word widened exactly, times the
// scale, times y_i; TwoSum or a plain sum; |q_i|; max |y_i|), so the same bits. F: 0
// binary64, 1 binary32, 2 binary16, 3 bfloat16.
template <int F, bool compensated, bool ymax_needed>
EBLA_AVX512 void groups_avx512(const void* words, double scale, const double* y, std::size_t groups, Lanes& L) {
  __m512d s = _mm512_loadu_pd(L.s), c = _mm512_loadu_pd(L.c), a = _mm512_loadu_pd(L.a);
  __m512d ymax = _mm512_loadu_pd(L.ymax);
  const __m512d sc = _mm512_set1_pd(scale);
  for (std::size_t g = 0; g < groups; ++g) {
    __m512d x;
    if constexpr (F == 0) {
      x = _mm512_loadu_pd(static_cast<const double*>(words) + 8 * g);
    } else if constexpr (F == 1) {
      x = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(static_cast<const float*>(words) + 8 * g)), sc);
    } else {
      const __m256i w = _mm256_cvtepu16_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const std::uint16_t*>(words) + 8 * g)));
      __m256 v;
      if constexpr (F == 2) {  // half_value: the bits into a float's fields, times 2^112
        const __m256i bits = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7fff)), 13),
                                             _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16));
        v = _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p112f));
      } else {
        v = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
      }
      x = _mm512_mul_pd(_mm512_cvtps_pd(v), sc);
    }
    const __m512d yv = _mm512_loadu_pd(y + 8 * g);
    const __m512d q = _mm512_mul_pd(x, yv);
    if constexpr (compensated) {  // TwoSum, as detail::two_sum
      const __m512d sum = _mm512_add_pd(s, q);
      const __m512d z = _mm512_sub_pd(sum, s);
      const __m512d err = _mm512_add_pd(_mm512_sub_pd(s, _mm512_sub_pd(sum, z)), _mm512_sub_pd(q, z));
      s = sum;
      c = _mm512_add_pd(c, err);
    } else {
      s = _mm512_add_pd(s, q);
    }
    a = _mm512_add_pd(a, _mm512_abs_pd(q));
    if constexpr (ymax_needed) {
      const __m512d ay = _mm512_abs_pd(yv);
      ymax = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(ay, ymax, _CMP_GT_OQ), ymax, ay);  // ay > ymax ? ay : ymax
    }
  }
  _mm512_storeu_pd(L.s, s);
  _mm512_storeu_pd(L.c, c);
  _mm512_storeu_pd(L.a, a);
  _mm512_storeu_pd(L.ymax, ymax);
}

template <int F, bool compensated, class Load>
EBLA_AVX512 void dot_tile_avx512(bool ymax_needed, const void* words, double scale, std::size_t m, const double* y,
                                 const Load& load, detail::TileFields<5>& f) {
  Lanes L;
  const std::size_t groups = m / 8;
  if (ymax_needed) {
    groups_avx512<F, compensated, true>(words, scale, y, groups, L);
    add_lanes<compensated, true>(8 * groups, m, y, load, L);  // the rest, from lane 0
  } else {
    groups_avx512<F, compensated, false>(words, scale, y, groups, L);
    add_lanes<compensated, false>(8 * groups, m, y, load, L);
  }
  merge_lanes(L, f);
}

EBLA_AVX512 void tiles_avx512(const TileArgs& a, std::size_t first, std::size_t last, detail::TileFields<5>* f) {
  for (std::size_t t = first; t < last; ++t) {
    const std::size_t b = t * stored_tile, m = b + stored_tile < a.n ? stored_tile : a.n - b, o = a.offset[t];
    const int l = a.level[t] & level_mask;
    const bool ymax_needed = (a.level[t] & rest_flag) != 0;
    const double sc = a.scale[t];
    const double* y = a.y + b;
    for (int j = 0; j < 5; ++j) f[t].v[j] = 0;
    if (l == a.L.perforate) {
      skip_tile(m, y, f[t]);
      continue;
    }
    switch (a.L.storage[l]) {
      case Storage::binary64: {
        const double* w = a.f64 + o;
        dot_tile_avx512<0, true>(ymax_needed, w, sc, m, y, [&](std::size_t i) EBLA_ALWAYS_INLINE { return w[i]; }, f[t]);
        break;
      }
      case Storage::binary32: {
        const float* w = a.f32 + o;
        dot_tile_avx512<1, false>(ymax_needed, w, sc, m, y,
                                  [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(w[i]) * sc; }, f[t]);
        break;
      }
      case Storage::binary16: {
        const std::uint16_t* w = a.u16 + o;
        dot_tile_avx512<2, false>(
            ymax_needed, w, sc, m, y,
            [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(half_value(w[i])) * sc; }, f[t]);
        break;
      }
      default: {
        const std::uint16_t* w = a.u16 + o;
        dot_tile_avx512<3, false>(
            ymax_needed, w, sc, m, y,
            [&](std::size_t i) EBLA_ALWAYS_INLINE { return static_cast<double>(bf16_value(w[i])) * sc; }, f[t]);
        break;
      }
    }
  }
}
#else
void tiles_avx2(const TileArgs& a, std::size_t first, std::size_t last, detail::TileFields<5>* f) {
  tiles_baseline(a, first, last, f);
}
void tiles_avx512(const TileArgs& a, std::size_t first, std::size_t last, detail::TileFields<5>* f) {
  tiles_baseline(a, first, last, f);
}
#endif

// Tiles per work item of the host path: 16 tiles, 8,192 components.
constexpr std::size_t tiles_per_chunk = 16;

// Every tile's fields, on the host: the host threads (detail::for_each_chunk) where the
// default execution space runs there, else that space's kernel (detail::tile_fields).
// The array is this thread's, kept from call to call (a fresh one of 40 bytes a tile would
// cost its page faults on every call).
const std::vector<detail::TileFields<5>>& tile_parts(const QdotStored& x, Kokkos::View<const double*> y) {
  const TileArgs a{x.f64.data(), x.f32.data(), x.u16.data(), x.tile_level.data(), x.tile_offset.data(),
                   x.tile_scale.data(), y.data(), x.n, tile_levels(x.plan, x.storage)};
  thread_local std::vector<detail::TileFields<5>> part;
  part.resize(x.tiles());
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible) {
    const detail::HostIsa isa = detail::best_host_isa();
    const auto run = isa == detail::HostIsa::avx512 ? tiles_avx512 : isa == detail::HostIsa::avx2 ? tiles_avx2 : tiles_baseline;
    const std::size_t tiles = part.size(), chunks = detail::chunk_count(tiles, tiles_per_chunk);
    detail::TileFields<5>* out = part.data();  // this thread's array (in a worker, `part` names the worker's)
    detail::for_each_chunk(chunks, [&](std::size_t c) {
      run(a, c * tiles_per_chunk, std::min(tiles, (c + 1) * tiles_per_chunk), out);
    });
  } else {
    const auto fields = detail::tile_fields<5>(
        "ebla::qdot(stored)", x.n, KOKKOS_LAMBDA(std::size_t b, std::size_t, detail::TileFields<5>& f) {
          tile(a, b / stored_tile, f);
        });
    for (std::size_t t = 0; t < part.size(); ++t)
      for (int j = 0; j < 5; ++j) part[t].v[j] = fields(t, j);
  }
  return part;
}

}  // namespace

QdotResult qdot(const QdotStored& x, Kokkos::View<const double*> y) {
  const auto t0 = std::chrono::steady_clock::now();
  if (y.extent(0) != x.n)
    throw_invalid(dot_function, "y has " + std::to_string(y.extent(0)) + " elements but the stored x has " +
                                    std::to_string(x.n));
  const TileLevels L = tile_levels(x.plan, x.storage);
  const std::vector<detail::TileFields<5>>& part = tile_parts(x, y);

  // Merge in tile order: the sums by TwoSum; sum |q_i| per level in double (additions of
  // nonnegative doubles: rounded relatively, never lost to underflow), R_t ymax_t in long
  // double (a product of two small doubles would underflow in double).
  const std::size_t tiles = part.size();
  const std::size_t levels = x.plan.ladder.size();
  double s = 0, c = 0;
  double per_level[detail::qdot_max_levels] = {};  // sum |q_i| over the tiles of each level
  long double rest = 0;                            // sum R_t ymax_t
  bool bad = false;
  QdotResult r;
  r.stats.count_per_level.assign(levels, 0);
  for (std::size_t t = 0; t < tiles; ++t) {
    const int l = x.host_level[t];
    double next, err;
    detail::two_sum(s, part[t].v[0], next, err);
    s = next;
    c += part[t].v[1] + err;
    per_level[l] += part[t].v[2];
    if (x.rest[t] > 0) rest += static_cast<long double>(x.rest[t]) * part[t].v[3];
    bad = bad || !(part[t].v[4] == 0);
    r.stats.count_per_level[l] += std::min(stored_tile, x.n - t * stored_tile);
  }
  // c_F = (u_F + u_d) / (1 - u_d): the stored value's relative error and the product's;
  // P: the tiles summed plainly (all but binary64); m: the components multiplied
  long double q = 0, terms = rest, plain = 0;
  std::size_t multiplied = 0;
  for (std::size_t l = 0; l < levels; ++l) {
    const bool skip = static_cast<int>(l) == L.perforate;
    const long double u_f = skip || L.t[l] == 0 ? 0.0L : std::ldexp(1.0L, -L.t[l]);
    q += per_level[l];
    terms += (u_f + u_double) / (1 - u_double) * per_level[l];
    plain += skip || x.storage[l] == Storage::binary64 ? 0.0L : static_cast<long double>(per_level[l]);
    multiplied += skip ? 0 : r.stats.count_per_level[l];
  }
  // NaN or Inf in y: in a perforated tile's check, else in sum |q_i| (which an overflowing
  // product of finite factors also makes infinite: then y is finite, and the bound infinite)
  if (bad || !std::isfinite(static_cast<double>(q))) {
    const std::string what = first_nonfinite(y, "y");
    if (what != "y is not finite") throw_invalid(dot_function, what);
  }

  r.value = std::isfinite(s) ? s + c : s;
  r.abs_sum = static_cast<double>(q);
  r.stats.bins = x.plan.bins();
  r.stats.e_min = x.plan.e_min;
  r.stats.e_max = x.plan.e_max;
  r.stats.zeros = x.zeros;
  r.stats.kept_top_bin = x.plan.kept_top_bin;
  r.stats.passes = 1;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (!std::isfinite(r.value) || !std::isfinite(static_cast<double>(q)) || !std::isfinite(static_cast<double>(terms))) {
    r.bound = r.quantization_bound = r.accumulation_bound = inf;
  } else {
    const long double nn = static_cast<long double>(x.n), T = static_cast<long double>(tiles);
    // every term passes through at most K roundings in double (a tile's lanes, its sum,
    // one product): true <= computed / (1 - gamma_K)
    const long double upward = 1 / (1 - gamma_d(nn + 4 * T + 16));
    const long double quant = terms * upward + static_cast<long double>(multiplied) * 0x1p-1074L;
    const long double N = nn + 9 * T + 2;  // TwoSums: one per component, 8 per tile
    const long double accum = u_double / (1 - u_double) * std::fabs(static_cast<long double>(r.value)) +
                              gamma_d(N) * N * u_double * (1 + gamma_d(N)) * q * upward +
                              gamma_d(stored_tile / 8) * plain * upward;  // the plain lanes
    r.quantization_bound = round_up(quant);
    r.accumulation_bound = round_up(accum);
    r.bound = round_up(quant + accum);
  }
  r.stats.compute_seconds = seconds_since(t0);
  return r;
}

QdotResult qdot(const QdotStored& x, const double* y, std::size_t n) {
  check_array(y, n, "y", dot_function);
  if (n != x.n)
    throw_invalid(dot_function, "y has " + std::to_string(n) + " elements but the stored x has " + std::to_string(x.n));
  return qdot(x, device_view(y, n));
}

std::vector<double> qdot_stored_values(const QdotStored& x) {
  std::vector<double> v(x.n, 0.0);
  const auto f64 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.f64);
  const auto f32 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.f32);
  const auto u16 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.u16);
  const auto offset = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.tile_offset);
  const auto scale = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x.tile_scale);
  for (std::size_t t = 0; t < x.tiles(); ++t) {
    const int l = x.host_level[t];
    if (x.plan.ladder[l].perforate) continue;
    const std::size_t b = t * stored_tile, e = std::min(b + stored_tile, x.n), o = offset(t);
    for (std::size_t i = b; i < e; ++i) {
      switch (x.storage[l]) {
        case Storage::binary64: v[i] = f64(o + i - b); break;
        case Storage::binary32: v[i] = static_cast<double>(f32(o + i - b)) * scale(t); break;
        case Storage::binary16: v[i] = static_cast<double>(half_value(u16(o + i - b))) * scale(t); break;
        default: v[i] = static_cast<double>(bf16_value(u16(o + i - b))) * scale(t); break;
      }
    }
  }
  return v;
}

}  // namespace ebla
