// Host specialisation of qdot: the arithmetic of QdotHistogram and QdotCompute
// (qdot_views.hpp), rearranged so that the compiler vectorises it, compiled for
// AVX-512, AVX2 and the baseline and chosen at run time.
//
// Selection: with AVX-512, every component whose bin lies in a window of 64 bins (placed
// on the median of the first components) is counted by bit-sliced adders in registers,
// the others one by one. Where the window catches too few, and without AVX-512, the bin
// slots of a block of 1024 components are computed into a small buffer (vectorised),
// then counted: with AVX-512, by bit-sliced adders when the block's bins span fewer
// than 64; otherwise one by one into eight interleaved histograms (so that consecutive
// components in the same bin do not wait on each other's store).
// Computation: W = 16 lanes, each with its own compensated sum; lane w takes the
// components i = w (mod 16) of each block. The lanes merge by TwoSum at the end, so the
// bound of qdot.hpp holds unchanged.
#include <ebla/core/parallel.hpp>
#include <ebla/kernels/qdot_host.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace ebla::detail {

namespace {

constexpr std::size_t block = 1024;  // components per exponent buffer
constexpr int copies = 8;            // interleaved histograms
constexpr int lanes = 16;            // compensated sums in the computation
constexpr int prefetch_distance = 8192;                // bytes ahead, for arrays from memory
constexpr std::size_t prefetch_above = std::size_t{4} << 20;  // bytes of x and y together

// Histogram slot of one component (the rule of QdotHistogram::operator()).
template <class T>
[[gnu::always_inline]] inline std::int32_t slot(T xv, T yv) {
  const std::uint64_t ax = bit_cast<std::uint64_t>(static_cast<double>(xv)) & binary64::abs_mask;
  const std::uint64_t ay = bit_cast<std::uint64_t>(static_cast<double>(yv)) & binary64::abs_mask;
  const std::uint64_t nonfinite = mask_eq(ax >> 52, 0x7ff) | mask_eq(ay >> 52, 0x7ff);
  const std::uint64_t zero = (mask_zero(ax) | mask_zero(ay)) & ~nonfinite;
  const std::uint64_t e = static_cast<std::uint64_t>(qdot_exponent(ax) + qdot_exponent(ay) + qdot_offset);
  const std::uint64_t s = (nonfinite & qdot_slot_nonfinite) | (zero & qdot_slot_zero) | (e & ~(nonfinite | zero));
  return static_cast<std::int32_t>(s);
}

// The slots of a block of components (vectorised by the compiler).
template <class T>
[[gnu::always_inline]] inline void slots(const T* x, const T* y, std::size_t len, std::int32_t* idx) {
  for (std::size_t i = 0; i < len; ++i) idx[i] = slot(x[i], y[i]);
}

// The interleaved histograms live between calls (one set per thread) and are kept zero,
// so that a call touches only the bins its data fills: small vectors pay no set-up.
inline std::uint32_t* interleaved_histograms() {
  thread_local std::vector<std::uint32_t> h(static_cast<std::size_t>(copies) * qdot_hist_size, 0);
  return h.data();
}

// Adds the interleaved counts of slots [lo, hi] and the two special slots into out, and
// zeroes them again.
inline void flush(std::uint32_t* h, std::int32_t lo, std::int32_t hi, std::int64_t* out) {
  auto move = [&](std::int32_t j) {
    for (int c = 0; c < copies; ++c) {
      std::uint32_t& v = h[static_cast<std::size_t>(c) * qdot_hist_size + static_cast<std::size_t>(j)];
      out[j] += v;
      v = 0;
    }
  };
  for (std::int32_t j = lo; j <= hi && j < qdot_bins; ++j) move(j);
  move(qdot_slot_nonfinite);
  move(qdot_slot_zero);
}

// Counts the slots idx[0, len) one by one into the interleaved histograms.
[[gnu::always_inline]] inline void count_scalar(const std::int32_t* idx, std::size_t len, std::uint32_t* h,
                                                const char* next_x, const char* next_y, std::size_t next_bytes) {
  std::size_t i = 0;
  for (; i + copies <= len; i += copies) {
    // bring the next block of x and y towards the cache meanwhile (the counting issues
    // no loads of its own, and the memory would otherwise idle)
    const std::size_t line = i / copies * 64;
    if (line < next_bytes) {
      __builtin_prefetch(next_x + line);
      __builtin_prefetch(next_y + line);
    }
    for (int c = 0; c < copies; ++c) ++h[static_cast<std::size_t>(c) * qdot_hist_size + idx[i + c]];
  }
  for (; i < len; ++i) ++h[idx[i]];
}

// A block counter that never applies (the generic paths count every block one by one).
struct NoBlockCounter {
  bool operator()(const std::int32_t*, std::size_t, std::int32_t, std::int32_t, std::int64_t*, std::uint32_t*) const {
    return false;
  }
};

// Histogram of the slots of x and y: block by block, the slots are computed (vectorised),
// then counted, by `count_block` if it takes the block (returns true), else one by one.
template <class T, class Slots, class BlockCounter>
[[gnu::always_inline]] inline void histogram(const T* x, const T* y, std::size_t n, std::int64_t* out,
                                             Slots block_slots, BlockCounter count_block) {
  std::uint32_t* h = interleaved_histograms();
  alignas(64) std::int32_t idx[block];
  std::size_t since_flush = 0;
  std::int32_t lo = qdot_bins, hi = -1;  // range of bin slots filled since the last flush
  for (std::size_t b0 = 0; b0 < n; b0 += block) {
    const std::size_t len = n - b0 < block ? n - b0 : block;
    block_slots(x + b0, y + b0, len, idx);
    std::int32_t block_lo = qdot_bins, block_hi = -1;
    for (std::size_t k = 0; k < len; ++k) {  // min/max over the bin slots (vectorised)
      const std::int32_t v = idx[k];
      block_lo = std::min(block_lo, v);  // the special slots lie above every bin
      block_hi = std::max(block_hi, v < qdot_bins ? v : -1);
    }
    if (!count_block(idx, len, block_lo, block_hi, out, h)) {
      const char* next_x = reinterpret_cast<const char*>(x + b0 + len);
      const char* next_y = reinterpret_cast<const char*>(y + b0 + len);
      const std::size_t next_bytes = (n - b0 - len < block ? n - b0 - len : block) * sizeof(T);
      count_scalar(idx, len, h, next_x, next_y, next_bytes);
    }
    lo = std::min(lo, block_lo);
    hi = std::max(hi, block_hi);
    since_flush += len;
    if (since_flush >= (std::size_t{1} << 30) || b0 + len == n) {  // before 32-bit counts overflow
      flush(h, lo, hi, out);
      since_flush = 0;
      lo = qdot_bins;
      hi = -1;
    }
  }
}

// The computation on a block of `lanes` components (the rule of QdotCompute::operator()).
struct Lanes {
  double s[lanes], c[lanes], q[lanes], b[lanes];
  std::uint64_t packed[lanes];  // 8 counters of 8 bits, one per level; flushed into count
  std::int64_t count[qdot_max_levels][lanes];
  std::int64_t zeros[lanes], outside[lanes], nonfinite[lanes];
};

struct Tables {
  const std::int64_t* level;  // ladder index per bin
  std::int64_t bins;
  QdotKernelLevels L;
  bool count_levels = true;   // false: the caller takes the counts from the plan
  bool stream = false;        // the arrays come from memory: prefetch ahead
  std::int64_t* hist = nullptr;  // non-null: also count the histogram of x and y into it
  std::int64_t window = 0;       // first bin of the 64 counted by bit slices (fused AVX-512 loop)
  // bins [plain_first, plain_last] (plan indices; empty if first > last) all at one level
  // that leaves the factors exact (see plain_run): the AVX-512 loop multiplies them as they are
  std::int64_t plain_first = 0, plain_last = -1;
};

// CG's update of x and r riding in a qdot of r with itself (QdotStream::update): the
// loop that reads r for the qdot first computes it, r_i = r_i - alpha q_i, and with it
// u_i = u_i + alpha p_i (u is CG's x), and sums the squares r_i^2 in eight interleaved
// partial sums, squares[k] over i = k (mod 8) in order of i (those of detail::cg_update).
struct CgUpdate {
  double alpha;
  const double* p;
  const double* q;
  double* u;
  double* r;
  double squares[8];
};

// The scalar form of that update over components [0, n).
void cg_update_loop(CgUpdate& up, std::size_t from, std::size_t n) {
  for (std::size_t i = from; i < n; ++i) {
    up.u[i] += up.alpha * up.p[i];
    up.r[i] -= up.alpha * up.q[i];
  }
  // squares[k] as lane k % 2 of pair k / 2, in registers (stores to up.squares might alias r
  // for all the compiler knows); each lane does the operations of its squares[k] (with the
  // loop over k written out, GCC's vectoriser shuffled the lanes: this sum alone took 1.7x as
  // long on a vector in the last-level cache)
  typedef double Pair __attribute__((vector_size(16)));
  const auto pair = [](const double* p) {
    Pair v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  Pair s01 = pair(up.squares), s23 = pair(up.squares + 2), s45 = pair(up.squares + 4), s67 = pair(up.squares + 6);
  const double* r = up.r;
  std::size_t i = from;
  for (; i + 8 <= n; i += 8) {
    const Pair r01 = pair(r + i), r23 = pair(r + i + 2), r45 = pair(r + i + 4), r67 = pair(r + i + 6);
    s01 += r01 * r01;
    s23 += r23 * r23;
    s45 += r45 * r45;
    s67 += r67 * r67;
  }
  double s[8] = {s01[0], s01[1], s23[0], s23[1], s45[0], s45[1], s67[0], s67[1]};
  for (; i < n; ++i) s[i % 8] += r[i] * r[i];
  std::copy(s, s + 8, up.squares);
}

double squares_total(const CgUpdate& up) {
  const double* s = up.squares;
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// The level, if any, that leaves factors of type T exact: not perforated and at least the
// input's precision (shift 0 for double; up to 29, i.e. t >= 24, for float).
template <class T>
int exact_level(const QdotKernelLevels& L) {
  const std::int64_t exact_shift = std::is_same<T, float>::value ? 29 : 0;
  for (int l = 0; l < L.count; ++l)
    if (l != L.perforate && L.shift[l] <= exact_shift) return l;
  return -1;
}

// Whether arrays of n components each come from memory rather than cache (then the
// kernels prefetch ahead of the hardware prefetcher).
template <class T>
bool streaming(std::size_t n) {
  return 2 * n * sizeof(T) > prefetch_above;
}

// The per-level constants as plain arrays (what the vectoriser can gather from).
struct LevelArrays {
  std::int64_t shift[qdot_max_levels];
  double c[qdot_max_levels];
};

template <class T>
[[gnu::always_inline]] inline void lane_step(Lanes& a, int w, T xv, T yv, const Tables& t,
                                             const std::int64_t* __restrict shift, const double* __restrict cl,
                                             std::int64_t e_min, std::int64_t bins, std::int64_t perforate) {
  const double xi = static_cast<double>(xv), yi = static_cast<double>(yv);
  const std::uint64_t ax = bit_cast<std::uint64_t>(xi) & binary64::abs_mask;
  const std::uint64_t ay = bit_cast<std::uint64_t>(yi) & binary64::abs_mask;
  const std::uint64_t nonfinite = mask_eq(ax >> 52, 0x7ff) | mask_eq(ay >> 52, 0x7ff);
  const std::uint64_t skip = nonfinite | mask_zero(ax) | mask_zero(ay);
  const std::int64_t j = qdot_exponent(ax) + qdot_exponent(ay) - e_min;
  const std::uint64_t inside = ~mask_lt(j, 0) & mask_lt(j, bins);
  const std::int64_t jc = static_cast<std::int64_t>(static_cast<std::uint64_t>(j) & inside);  // 0 outside
  const std::int64_t l = static_cast<std::int64_t>(static_cast<std::uint64_t>(t.level[jc]) & inside & ~skip);
  const std::uint64_t perforated = mask_eq(static_cast<std::uint64_t>(l), static_cast<std::uint64_t>(perforate)) & ~skip;
  const std::int64_t k = shift[l];
  const double q = round_significand(xi, k) * round_significand(yi, k);
  const std::uint64_t qbits = bit_cast<std::uint64_t>(q) & ~(skip | perforated);
  const double used = bit_cast<double>(qbits);
  const std::uint64_t pbits = bit_cast<std::uint64_t>(xi * yi) & binary64::abs_mask & perforated;
  const double bound_base = bit_cast<double>((qbits & binary64::abs_mask) | pbits);
  a.q[w] += bound_base;
  a.b[w] += cl[l] * bound_base;
  double s, err;
  two_sum(a.s[w], used, s, err);
  a.s[w] = s;
  a.c[w] += err;
  a.packed[w] += (~skip & 1) << (8 * l);  // (a variable shifted: vectorises)
  a.zeros[w] += static_cast<std::int64_t>(skip & ~nonfinite & 1);
  a.nonfinite[w] += static_cast<std::int64_t>(nonfinite & 1);
  a.outside[w] += static_cast<std::int64_t>(~inside & ~skip & 1);
}

// Merges the lanes (exactly, by TwoSum) into one reduction value.
inline QdotAccum join_lanes(const Lanes& a) {
  QdotAccum acc;
  qdot_accum_init(acc);
  for (int w = 0; w < lanes; ++w) {
    QdotAccum lane;
    qdot_accum_init(lane);
    lane.s = a.s[w];
    lane.c = a.c[w];
    lane.q = a.q[w];
    lane.b = a.b[w];
    for (int m = 0; m < qdot_max_levels; ++m) lane.count[m] = a.count[m][w];
    lane.zeros = a.zeros[w];
    lane.outside = a.outside[w];
    lane.nonfinite = a.nonfinite[w];
    qdot_accum_join(acc, lane);
  }
  return acc;
}

template <class T>
[[gnu::always_inline]] inline QdotAccum compute(const T* x, const T* y, std::size_t n, const Tables& t) {
  Lanes a;
  std::memset(&a, 0, sizeof a);
  LevelArrays la;
  for (int l = 0; l < qdot_max_levels; ++l) {
    la.shift[l] = t.L.shift[l];
    la.c[l] = t.L.c[l];
  }
  const std::int64_t e_min = t.L.e_min, bins = t.bins, perforate = t.L.perforate;
  auto flush = [&a] {  // the 8-bit counters hold at most 255 increments
    for (int w = 0; w < lanes; ++w) {
      for (int m = 0; m < qdot_max_levels; ++m) a.count[m][w] += static_cast<std::int64_t>((a.packed[w] >> (8 * m)) & 0xff);
      a.packed[w] = 0;
    }
  };
  std::size_t i0 = 0;
  int since_flush = 0;
  for (; i0 + lanes <= n; i0 += lanes) {
    for (int w = 0; w < lanes; ++w)  // vectorised
      lane_step(a, w, x[i0 + w], y[i0 + w], t, la.shift, la.c, e_min, bins, perforate);
    if (++since_flush == 255) {
      flush();
      since_flush = 0;
    }
  }
  for (int w = 0; i0 + w < n; ++w) lane_step(a, w, x[i0 + w], y[i0 + w], t, la.shift, la.c, e_min, bins, perforate);
  flush();
  return join_lanes(a);
}


#if defined(__x86_64__) && defined(__GNUC__)
// The computation with AVX-512 intrinsics: eight components per vector, two vectors
// per step (16 lanes, as in `compute`), the per-level shift and bound constant taken by
// a permutation of an 8-entry table, the level of each bin by a gather. Same arithmetic
// as QdotCompute (integer rounding to nearest even, TwoSum), lane by lane.
#define EBLA_AVX512 [[gnu::target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma")]]
// GCC's AVX-512 headers fill unused operands with `__m512i __Y = __Y;`, which -Wuninitialized
// reports wherever inlining exposes it (a false alarm: the operand is masked away)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"

EBLA_AVX512 inline __m512d load8(const double* p) { return _mm512_loadu_pd(p); }
EBLA_AVX512 inline __m512d load8(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

struct Avx512Lanes {
  __m512d s, c, q, b;
  __m512i packed;               // per-level counters, 8 bits each
  std::uint64_t outside = 0;    // components outside the plan's bins (popcount of a mask)
  std::uint64_t nonfinite = 0;  // components with NaN/Inf (popcount of a mask)
};

struct Avx512Consts {
  __m512i abs_mask, one, bins, perforate, f7ff, lanes_e_min;
  __m512i level_lo, level_hi;  // level of bins 0..63 and 64..127 as bytes (byte lookup)
  __m512d c, two64, sigma;  // sigma_l = 2^(53 - t_l) + 1 (Veltkamp's splitting constant)
  __m512i f_small, f_large;   // exponent fields outside which factors are left unrounded
  __m512i f_span;             // f_large - f_small
  __m512i plain_base, plain_span;  // fx + fy of the plain run's first bin, and its length - 1
  __m512i plain_count;             // one count at the plain level, as the packed counters take it
  __m512d plain_c;                 // that level's bound constant
  bool has_plain = false;          // whether the plan has such a run (Tables::plain_first)
  const std::int64_t* level;
};

// x rounded to nearest to t bits by Veltkamp's splitting: with sigma = 2^(53-t) + 1,
// g = fl(sigma x), x_t = fl(g - fl(g - x)) is x rounded to nearest on t bits (Boldo,
// "Pitfalls of a full floating-point proof", IJCAR 2006; ties may go either way, the
// error is at most 2^-t |x|, as the bound assumes). Three floating-point operations,
// where bit manipulation needs a dozen shifts. Factors with |x| < 2^-963 (underflow in
// the splitting) or |x| >= 2^970 (overflow of sigma x) are left unrounded, i.e. exact.
// (This file is compiled with -ffp-contract=off: a fused sigma x - x would break it.)
EBLA_AVX512 inline __m512d round_veltkamp(__m512d x, __m512i field, __m512d sigma, const Avx512Consts& K) {
  const __m512d g = _mm512_mul_pd(sigma, x);
  const __m512d r = _mm512_sub_pd(g, _mm512_sub_pd(g, x));
  const __mmask8 keep = _mm512_cmplt_epu64_mask(field, K.f_small) | _mm512_cmpgt_epu64_mask(field, K.f_large);
  return _mm512_mask_mov_pd(r, keep, x);
}

// floor(log2 |v|) for the components; subnormals (rare) by an exact scaling by 2^64.
EBLA_AVX512 inline __m512i exponents(__m512i a, __m512i field, const Avx512Consts& K) {
  const __mmask8 sub = _mm512_cmpeq_epi64_mask(field, _mm512_setzero_si512());
  if (sub == 0) return field;
  const __m512i scaled = _mm512_srli_epi64(_mm512_castpd_si512(_mm512_mul_pd(_mm512_castsi512_pd(a), K.two64)), 52);
  return _mm512_mask_sub_epi64(field, sub, scaled, _mm512_set1_epi64(64));
}

// Adds eight products to the lanes: |prod| to the sum Q, c |prod| to the bound terms, and
// `used` (prod, or 0 where perforated) to the compensated sum s + c by TwoSum.
EBLA_AVX512 [[gnu::always_inline]] inline void accumulate8(Avx512Lanes& L, __m512d prod, __m512d used, __m512d c,
                                                           const Avx512Consts& K) {
  const __m512d absprod = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(prod), K.abs_mask));
  L.q = _mm512_add_pd(L.q, absprod);
  L.b = _mm512_fmadd_pd(c, absprod, L.b);
  const __m512d s = _mm512_add_pd(L.s, used);  // TwoSum(s, used)
  const __m512d z = _mm512_sub_pd(s, L.s);
  const __m512d err = _mm512_add_pd(_mm512_sub_pd(L.s, _mm512_sub_pd(s, z)), _mm512_sub_pd(used, z));
  L.s = s;
  L.c = _mm512_add_pd(L.c, err);
}

// Level of each component's bin: a byte permutation of a 128-entry table when the plan
// has at most 128 bins and the CPU has AVX-512 VBMI, else a gather.
template <bool bytes>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx2,bmi,bmi2,fma"))) inline __m512i
bin_level(__m512i j, __mmask8 inside, const Avx512Consts& K) {
  if constexpr (bytes) {
    // byte 0 of each lane looks up j (< 128 inside the plan); the other bytes are zeroed
    const __m512i lv = _mm512_maskz_permutex2var_epi8(0x0101010101010101ull, K.level_lo, j, K.level_hi);
    return _mm512_maskz_mov_epi64(inside, lv);
  } else {
    return _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), inside, j, K.level, 8);
  }
}

// Any component: zeros, NaN/Inf, subnormal or extreme factors, bins outside the plan.
template <bool bytes>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx2,bmi,bmi2,fma"))) inline void
step8_general(Avx512Lanes& L, __m512d X, __m512d Y, const Avx512Consts& K) {
  const __m512i xb = _mm512_castpd_si512(X), yb = _mm512_castpd_si512(Y);
  const __m512i ax = _mm512_and_si512(xb, K.abs_mask), ay = _mm512_and_si512(yb, K.abs_mask);
  const __m512i fx = _mm512_srli_epi64(ax, 52), fy = _mm512_srli_epi64(ay, 52);
  const __mmask8 nonfinite = _mm512_cmpeq_epi64_mask(fx, K.f7ff) | _mm512_cmpeq_epi64_mask(fy, K.f7ff);
  const __mmask8 zero = _mm512_testn_epi64_mask(ax, ax) | _mm512_testn_epi64_mask(ay, ay);
  const __mmask8 valid = static_cast<__mmask8>(~(nonfinite | zero));
  // bin index j = fexp(x) + fexp(y) - e_min (biased fields: minus 2046 + e_min)
  const __m512i j = _mm512_sub_epi64(_mm512_add_epi64(exponents(ax, fx, K), exponents(ay, fy, K)), K.lanes_e_min);
  const __mmask8 inside = _mm512_cmplt_epu64_mask(j, K.bins) & valid;
  const __m512i l = bin_level<bytes>(j, inside, K);
  const __m512d sigma = _mm512_permutexvar_pd(l, K.sigma);
  const __m512d c = _mm512_permutexvar_pd(l, K.c);
  const __mmask8 perforated = _mm512_cmpeq_epi64_mask(l, K.perforate) & valid;
  // perforated components multiply their unrounded factors, for the bound only
  const __m512d xr = _mm512_mask_mov_pd(round_veltkamp(X, fx, sigma, K), perforated, X);
  const __m512d yr = _mm512_mask_mov_pd(round_veltkamp(Y, fy, sigma, K), perforated, Y);
  const __m512d prod = _mm512_maskz_mul_pd(valid, xr, yr);
  accumulate8(L, prod, _mm512_mask_mov_pd(prod, perforated, _mm512_setzero_pd()), c, K);
  // counts: levels in vector counters; the rare outside/non-finite by popcount (zeros
  // are what is left: n minus the others)
  L.packed = _mm512_add_epi64(L.packed, _mm512_sllv_epi64(_mm512_maskz_mov_epi64(valid, K.one), _mm512_slli_epi64(l, 3)));
  const __mmask8 outside = valid & static_cast<__mmask8>(~inside);
  if (__builtin_expect((outside | nonfinite) != 0, 0)) {
    L.outside += static_cast<std::uint64_t>(__builtin_popcount(static_cast<unsigned>(outside)));
    L.nonfinite += static_cast<std::uint64_t>(__builtin_popcount(static_cast<unsigned>(nonfinite)));
  }
}

// The exponent fields of eight pairs of factors, and which pairs are unusual: a zero,
// subnormal, NaN/Inf or extreme factor (field outside [60, 1992]). field - 60 above 1932
// (unsigned) catches all of them at once; tested on (fx - 60) | (fy - 60), which is at
// least the larger of the two (rare false alarms only take the general path).
struct Fields {
  __m512i fx, fy, sum;  // sum = fx + fy
  __mmask8 unusual;
};
EBLA_AVX512 [[gnu::always_inline]] inline Fields fields(__m512d X, __m512d Y, const Avx512Consts& K) {
  Fields F;
  F.fx = _mm512_srli_epi64(_mm512_and_si512(_mm512_castpd_si512(X), K.abs_mask), 52);
  F.fy = _mm512_srli_epi64(_mm512_and_si512(_mm512_castpd_si512(Y), K.abs_mask), 52);
  F.sum = _mm512_add_epi64(F.fx, F.fy);
  F.unusual = _mm512_cmpgt_epu64_mask(
      _mm512_or_si512(_mm512_sub_epi64(F.fx, K.f_small), _mm512_sub_epi64(F.fy, K.f_small)), K.f_span);
  return F;
}

// The common case, checked first: every factor finite, nonzero and with an exponent
// field in [60, 1992] (so neither the subnormal fix nor the exact-factor rule applies),
// every bin inside the plan. Same arithmetic as step8_general, less bookkeeping.
// inside: whether bins may lie outside the plan (else the data is the plan's own);
// count: whether to count the components per level.
template <bool bytes, bool inside_check, bool count>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx2,bmi,bmi2,fma"))) inline void
step8(Avx512Lanes& L, __m512d X, __m512d Y, const Fields& F, const Avx512Consts& K) {
  const __m512i j = _mm512_sub_epi64(F.sum, K.lanes_e_min);
  const __mmask8 unusual = F.unusual;
  // all eight in the plain run: the factors stay as they are (rounding would change nothing)
  if (K.has_plain && _kandn_mask8(unusual, _mm512_cmple_epu64_mask(_mm512_sub_epi64(F.sum, K.plain_base),
                                                                    K.plain_span)) == 0xff) {
    const __m512d prod = _mm512_mul_pd(X, Y);
    accumulate8(L, prod, prod, K.plain_c, K);
    if constexpr (count) L.packed = _mm512_add_epi64(L.packed, K.plain_count);
    return;
  }
  const __mmask8 inside = inside_check ? _mm512_cmplt_epu64_mask(j, K.bins) : __mmask8{0xff};
  if (__builtin_expect(unusual != 0 || inside != 0xff, 0)) {
    step8_general<bytes>(L, X, Y, K);
    return;
  }
  const __m512i l = bin_level<bytes>(j, 0xff, K);
  const __m512d sigma = _mm512_permutexvar_pd(l, K.sigma);
  const __m512d c = _mm512_permutexvar_pd(l, K.c);
  const __mmask8 perforated = _mm512_cmpeq_epi64_mask(l, K.perforate);
  // Veltkamp's splitting (see round_veltkamp), unguarded: the fields are in range. The
  // perforate level has sigma = 2, which leaves its factors exact (2x - x = x).
  const __m512d gx = _mm512_mul_pd(sigma, X), gy = _mm512_mul_pd(sigma, Y);
  const __m512d xr = _mm512_sub_pd(gx, _mm512_sub_pd(gx, X));
  const __m512d yr = _mm512_sub_pd(gy, _mm512_sub_pd(gy, Y));
  const __m512d prod = _mm512_mul_pd(xr, yr);
  accumulate8(L, prod, _mm512_mask_mov_pd(prod, perforated, _mm512_setzero_pd()), c, K);
  if constexpr (count) L.packed = _mm512_add_epi64(L.packed, _mm512_sllv_epi64(K.one, _mm512_slli_epi64(l, 3)));
}

// Slots of a block with AVX-512: the exponent fields give the bin directly; the rare
// subnormal factors fall back to the scalar rule.
template <class T, bool prefetch>
EBLA_AVX512 inline void slots_avx512(const T* x, const T* y, std::size_t len, std::int32_t* idx) {
  const __m512i abs_mask = _mm512_set1_epi64(static_cast<long long>(binary64::abs_mask));
  const __m512i f7ff = _mm512_set1_epi64(0x7ff);
  const __m512i offset = _mm512_set1_epi64(qdot_offset - 2046);
  const __m512i slot_zero = _mm512_set1_epi64(qdot_slot_zero);
  const __m512i slot_nonfinite = _mm512_set1_epi64(qdot_slot_nonfinite);
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    if (prefetch) {  // arrays from memory: ask for them ahead of the hardware prefetcher
      _mm_prefetch(reinterpret_cast<const char*>(x + i) + prefetch_distance, _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(y + i) + prefetch_distance, _MM_HINT_T0);
    }
    const __m512i ax = _mm512_and_si512(_mm512_castpd_si512(load8(x + i)), abs_mask);
    const __m512i ay = _mm512_and_si512(_mm512_castpd_si512(load8(y + i)), abs_mask);
    const __m512i fx = _mm512_srli_epi64(ax, 52), fy = _mm512_srli_epi64(ay, 52);
    const __mmask8 zero = _mm512_testn_epi64_mask(ax, ax) | _mm512_testn_epi64_mask(ay, ay);
    const __mmask8 subnormal = (_mm512_testn_epi64_mask(fx, fx) | _mm512_testn_epi64_mask(fy, fy)) & static_cast<__mmask8>(~zero);
    const __mmask8 nonfinite = _mm512_cmpeq_epi64_mask(fx, f7ff) | _mm512_cmpeq_epi64_mask(fy, f7ff);
    __m512i sl = _mm512_add_epi64(_mm512_add_epi64(fx, fy), offset);
    sl = _mm512_mask_mov_epi64(sl, zero, slot_zero);
    sl = _mm512_mask_mov_epi64(sl, nonfinite, slot_nonfinite);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + i), _mm512_cvtepi64_epi32(sl));
    if (__builtin_expect(subnormal != 0, 0))
      for (int w = 0; w < 8; ++w) idx[i + w] = slot(x[i + w], y[i + w]);
  }
  for (; i < len; ++i) idx[i] = slot(x[i], y[i]);
}

// Bit-sliced counting of a block whose bin slots span at most 64 (Harley and Seal's
// carry-save adders, as in positional population counts): each component becomes the
// one-hot word 2^(slot - lo); level[k] holds bit k of the per-lane count of every bin,
// kept by full adders on whole vectors (two ternary-logic instructions per 8 components
// where one-by-one counting needs a load and a store per component). Special slots
// (zero, NaN/Inf: shift counts >= 64 give an empty word) are counted one by one.
EBLA_AVX512 inline void full_add(__m512i& carry, __m512i& sum, __m512i a, __m512i b, __m512i c) {
  carry = _mm512_ternarylogic_epi64(a, b, c, 0xe8);  // majority
  sum = _mm512_ternarylogic_epi64(a, b, c, 0x96);    // parity
}

// Adds `carry` into the slices level[from, levels) (a carry rippling up).
EBLA_AVX512 [[gnu::always_inline]] inline void ripple(__m512i* level, int levels, __m512i carry, int from) {
  for (int k = from; k < levels; ++k) {
    const __m512i next = _mm512_and_si512(level[k], carry);
    level[k] = _mm512_xor_si512(level[k], carry);
    carry = next;
  }
}

// Sixteen words w[0, 16) into the slices level[0, levels): a tree of full adders into levels
// 0-3 (eight words make a carry of weight 8, two of those one of weight 16), that carry
// rippled into the levels above.
EBLA_AVX512 [[gnu::always_inline]] inline __m512i add_eight(__m512i* level, const __m512i* w) {
  __m512i twos_a, twos_b, fours_a, fours_b, eights;
  full_add(twos_a, level[0], level[0], w[0], w[1]);
  full_add(twos_b, level[0], level[0], w[2], w[3]);
  full_add(fours_a, level[1], level[1], twos_a, twos_b);
  full_add(twos_a, level[0], level[0], w[4], w[5]);
  full_add(twos_b, level[0], level[0], w[6], w[7]);
  full_add(fours_b, level[1], level[1], twos_a, twos_b);
  full_add(eights, level[2], level[2], fours_a, fours_b);
  return eights;
}
EBLA_AVX512 [[gnu::always_inline]] inline void add_sixteen(__m512i* level, int levels, const __m512i* w) {
  const __m512i eights_a = add_eight(level, w), eights_b = add_eight(level, w + 8);
  __m512i sixteens;
  full_add(sixteens, level[3], level[3], eights_a, eights_b);
  ripple(level, levels, sixteens, 4);
}

// The per-bin counts held in bit slices: bit b of lane w of level[k] is bit k of lane w's
// count of bin b; count[b] receives the sum over the 8 lanes (at most 8 (2^levels - 1)).
EBLA_AVX512 inline void slice_counts(const __m512i* level, int levels, std::uint16_t* count) {
  __m512i total_lo = _mm512_setzero_si512(), total_hi = _mm512_setzero_si512();  // 16-bit counts
  alignas(64) std::uint64_t words[8];
  for (int k = 0; k < levels; ++k) {
    _mm512_store_si512(words, level[k]);
    __m512i lanes_set = _mm512_setzero_si512();  // byte b: lanes whose word has bit b
    for (int w = 0; w < 8; ++w)
      lanes_set = _mm512_mask_add_epi8(lanes_set, static_cast<__mmask64>(words[w]), lanes_set, _mm512_set1_epi8(1));
    total_lo = _mm512_add_epi16(total_lo, _mm512_slli_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(lanes_set)), k));
    total_hi = _mm512_add_epi16(total_hi, _mm512_slli_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(lanes_set, 1)), k));
  }
  _mm512_store_si512(count, total_lo);
  _mm512_store_si512(count + 32, total_hi);
}

struct BitslicedCounter {
  static constexpr int levels = 8;  // per-lane counts up to block / 8 = 128 < 2^8
  static_assert(block / 8 < (1 << levels), "bit-sliced counts overflow");

  // The one-hot words of the slots idx[i, i + 8); special slots counted into h.
  EBLA_AVX512 static __m512i onehot(const std::int32_t* idx, __m512i base, std::uint32_t* h) {
    const __m512i k = _mm512_sub_epi64(_mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx))), base);
    const __mmask8 special = _mm512_cmpgt_epu64_mask(k, _mm512_set1_epi64(63));
    if (__builtin_expect(special != 0, 0))
      for (int w = 0; w < 8; ++w)
        if (special >> w & 1) ++h[idx[w]];
    return _mm512_sllv_epi64(_mm512_set1_epi64(1), k);
  }

  // Adds the counts held in level[] (bins lo + b, b <= span) to out.
  EBLA_AVX512 static void decode(const __m512i* level, std::int32_t lo, std::int32_t span, std::int64_t* out) {
    alignas(64) std::uint16_t count[64];
    slice_counts(level, levels, count);
    for (std::int32_t b = 0; b <= span; ++b) out[lo + b] += count[b];
  }

  EBLA_AVX512 bool operator()(const std::int32_t* idx, std::size_t len, std::int32_t lo, std::int32_t hi,
                              std::int64_t* out, std::uint32_t* h) const {
    if (hi < lo || hi - lo >= 64) return false;
    const __m512i base = _mm512_set1_epi64(lo);
    __m512i level[levels];
    for (auto& v : level) v = _mm512_setzero_si512();
    std::size_t i = 0;
    for (; i + 128 <= len; i += 128) {  // 16 words of 8 lanes per round
      __m512i words[16];
      for (int v = 0; v < 16; ++v) words[v] = onehot(idx + i + 8 * v, base, h);
      add_sixteen(level, levels, words);
    }
    decode(level, lo, hi - lo, out);
    for (; i < len; ++i) ++h[idx[i]];  // the tail, one by one
    return true;
  }
};

// The histogram counted inside the AVX-512 computation (one pass): a component whose bin
// lies in a window of 64 bins (where the plan being tried has most components) becomes the
// one-hot word 2^(bin - window), and the words are summed by carry-save adders as in
// BitslicedCounter, sixteen vectors a round; every other component (another bin, a zero,
// NaN/Inf, a subnormal or extreme factor) is counted one by one.
struct WindowHistogram {
  static constexpr int levels = 9;  // per-lane counts up to 511: decoded every 16 * 255 components
  __m512i level[levels];
  __m512i pending[16];
  int waiting = 0;
  __m512i base;        // fx + fy (biased exponent fields) of the window's first bin
  std::int64_t first;  // the histogram slot of the window's first bin
  std::int64_t* h;     // the histogram counted into
  std::size_t missed = 0;  // components counted one by one
};

EBLA_AVX512 inline void window_start(WindowHistogram& W, std::int64_t window, std::int64_t* h) {
  for (auto& v : W.level) v = _mm512_setzero_si512();
  W.waiting = 0;
  W.base = _mm512_set1_epi64(window + 2046);
  W.first = window + qdot_offset;
  W.h = h;
}

// Sixteen pending vectors into the slices.
EBLA_AVX512 [[gnu::always_inline]] inline void window_round_inline(WindowHistogram& W) {
  add_sixteen(W.level, WindowHistogram::levels, W.pending);
  W.waiting = 0;
}
// The same as a call: in the computation's loop, whose registers are all taken, a call
// costs less than the spills of an inlined tree.
EBLA_AVX512 [[gnu::noinline]] void window_round_call(WindowHistogram& W) { window_round_inline(W); }

// Counts the lanes of X and Y (values of x and y as doubles) marked in `elsewhere` one by one.
EBLA_AVX512 [[gnu::noinline]] void window_elsewhere(WindowHistogram& W, __m512d X, __m512d Y, __mmask8 elsewhere) {
  alignas(64) double xs[8], ys[8];
  _mm512_store_pd(xs, X);
  _mm512_store_pd(ys, Y);
  for (int w = 0; w < 8; ++w)
    if (elsewhere >> w & 1) ++W.h[slot(xs[w], ys[w])];
  W.missed += static_cast<std::size_t>(__builtin_popcount(elsewhere));
}

// Counts the components of X and Y (values of x and y as doubles); `alone`: in a loop of
// its own (selection), else inside the computation's.
template <bool alone>
EBLA_AVX512 [[gnu::always_inline]] inline void window_add(WindowHistogram& W, __m512d X, __m512d Y,
                                                          const Fields& F, const Avx512Consts& K) {
  const __m512i k = _mm512_sub_epi64(F.sum, W.base);
  const __mmask8 elsewhere = F.unusual | _mm512_cmpgt_epu64_mask(k, _mm512_set1_epi64(63));
  if (__builtin_expect(elsewhere != 0, 0)) window_elsewhere(W, X, Y, elsewhere);
  W.pending[W.waiting++] = _mm512_maskz_sllv_epi64(static_cast<__mmask8>(~elsewhere), K.one, k);
  if (W.waiting == 16) {
    if constexpr (alone)
      window_round_inline(W);
    else
      window_round_call(W);
  }
}

// Adds the counts held in the slices to the histogram and clears them.
EBLA_AVX512 inline void window_decode(WindowHistogram& W) {
  for (int v = 0; v < W.waiting; ++v) ripple(W.level, WindowHistogram::levels, W.pending[v], 0);
  W.waiting = 0;
  alignas(64) std::uint16_t count[64];
  slice_counts(W.level, WindowHistogram::levels, count);
  for (auto& v : W.level) v = _mm512_setzero_si512();
  for (int b = 0; b < 64; ++b)
    if (W.first + b < qdot_bins) W.h[W.first + b] += count[b];
}

// The window of a selection: 64 bins centred on the median bin of the first (at most 64)
// components with a bin; the window's first bin e = fexp(x) + fexp(y) as window_start takes it.
template <class T>
std::int64_t median_window(const T* x, const T* y, std::size_t n) {
  std::int32_t seen[64];
  int k = 0;
  for (std::size_t i = 0; i < n && k < 64; ++i) {
    const std::int32_t s = slot(x[i], y[i]);
    if (s < qdot_bins) seen[k++] = s;
  }
  if (k == 0) return 0;
  std::nth_element(seen, seen + k / 2, seen + k);
  return std::max<std::int64_t>(seen[k / 2] - 32, 0) - qdot_offset;  // slots start at 0
}

// The histogram of a selection with AVX-512: every component counted into the window of
// 64 bins (WindowHistogram) in a loop that only loads, shifts and adds, as fast as memory
// brings x and y. Data whose bins the window catches poorly (more than one component in
// eight elsewhere during the first round) is left to the block counter (BitslicedCounter):
// returns how many components it counted, [0, returned). The counts are integers: the
// same whichever way a component was counted.
template <class T, bool prefetch>
EBLA_AVX512 std::size_t histogram_window(const T* x, const T* y, std::size_t n, std::int64_t* out) {
  Avx512Consts K;
  K.abs_mask = _mm512_set1_epi64(static_cast<long long>(binary64::abs_mask));
  K.one = _mm512_set1_epi64(1);
  K.f_small = _mm512_set1_epi64(60);
  K.f_span = _mm512_set1_epi64(1992 - 60);
  WindowHistogram W;
  window_start(W, median_window(x, y, n), out);
  constexpr std::size_t round = 16 * 255;  // per-lane counts stay below 2^9
  const std::size_t main = n - n % 16;
  for (std::size_t b0 = 0; b0 < main; b0 += round) {
    const std::size_t end = main - b0 < round ? main : b0 + round;
    for (std::size_t i = b0; i < end; i += 16) {
      if (prefetch)
        for (int line = 0; line < static_cast<int>(16 * sizeof(T)); line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(x + i) + prefetch_distance + line, _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(y + i) + prefetch_distance + line, _MM_HINT_T0);
        }
      const __m512d xa = load8(x + i), ya = load8(y + i), xb = load8(x + i + 8), yb = load8(y + i + 8);
      window_add<true>(W, xa, ya, fields(xa, ya, K), K);
      window_add<true>(W, xb, yb, fields(xb, yb, K), K);
    }
    window_decode(W);
    if (b0 == 0 && W.missed > (end - b0) / 8) return end;  // a poor catch
  }
  for (std::size_t i = main; i < n; ++i) ++out[slot(x[i], y[i])];
  return n;
}

EBLA_AVX512 inline void store_lanes(const Avx512Lanes& L, Lanes& a, int offset) {
  _mm512_storeu_pd(a.s + offset, L.s);
  _mm512_storeu_pd(a.c + offset, L.c);
  _mm512_storeu_pd(a.q + offset, L.q);
  _mm512_storeu_pd(a.b + offset, L.b);
  alignas(64) std::uint64_t p[8];
  _mm512_store_si512(p, L.packed);
  for (int w = 0; w < 8; ++w)
    for (int m = 0; m < qdot_max_levels; ++m) a.count[m][offset + w] += static_cast<std::int64_t>((p[w] >> (8 * m)) & 0xff);
  a.outside[offset] += static_cast<std::int64_t>(L.outside);
  a.nonfinite[offset] += static_cast<std::int64_t>(L.nonfinite);
}

// Eight components of CG's update (CgUpdate) from offset i: r and u written, the squares
// of r added, r returned.
EBLA_AVX512 [[gnu::always_inline]] inline __m512d cg_update8(const CgUpdate& up, std::size_t i, __m512d alpha,
                                                             __m512d& squares) {
  const __m512d r = _mm512_sub_pd(_mm512_loadu_pd(up.r + i), _mm512_mul_pd(alpha, _mm512_loadu_pd(up.q + i)));
  _mm512_storeu_pd(up.r + i, r);
  _mm512_storeu_pd(up.u + i, _mm512_add_pd(_mm512_loadu_pd(up.u + i), _mm512_mul_pd(alpha, _mm512_loadu_pd(up.p + i))));
  squares = _mm512_add_pd(squares, _mm512_mul_pd(r, r));
  return r;
}

// update: x and y are up->r, which the loop computes as it goes (CgUpdate; double only).
template <class T, bool bytes, bool count, bool fused = false, bool update = false>
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vbmi,avx2,bmi,bmi2,fma"))) QdotAccum
compute_avx512_loop(const T* x, const T* y, std::size_t n, const Tables& t, CgUpdate* up = nullptr) {
  static_assert(!update || (fused && std::is_same<T, double>::value), "the update rides in a one-pass qdot of doubles");
  Avx512Consts K;
  K.abs_mask = _mm512_set1_epi64(static_cast<long long>(binary64::abs_mask));
  K.one = _mm512_set1_epi64(1);
  K.f7ff = _mm512_set1_epi64(0x7ff);
  K.bins = _mm512_set1_epi64(t.bins);
  K.lanes_e_min = _mm512_set1_epi64(2046 + t.L.e_min);
  K.perforate = _mm512_set1_epi64(t.L.perforate);
  alignas(64) double c[8], sigma[8];
  for (int l = 0; l < 8; ++l) {
    c[l] = t.L.c[l];
    sigma[l] = static_cast<double>(std::int64_t{1} << t.L.shift[l]) + 1.0;  // 2^(53 - t) + 1
  }
  K.c = _mm512_load_pd(c);
  K.sigma = _mm512_load_pd(sigma);
  K.f_small = _mm512_set1_epi64(60);     // 2^(60 - 1023) = 2^-963
  K.f_large = _mm512_set1_epi64(1992);   // 2^(1993 - 1023) = 2^970
  K.f_span = _mm512_set1_epi64(1992 - 60);
  K.two64 = _mm512_set1_pd(18446744073709551616.0);
  K.level = t.level;
  const int plain = exact_level<T>(t.L);
  K.has_plain = plain >= 0 && t.plain_first <= t.plain_last;
  K.plain_base = _mm512_set1_epi64(K.has_plain ? 2046 + t.L.e_min + t.plain_first : 0);
  K.plain_span = _mm512_set1_epi64(K.has_plain ? t.plain_last - t.plain_first : 0);
  K.plain_count = _mm512_set1_epi64(K.has_plain ? std::int64_t{1} << (8 * plain) : 0);
  K.plain_c = _mm512_set1_pd(K.has_plain ? t.L.c[plain] : 0.0);
  alignas(64) std::uint8_t level_bytes[128] = {};
  for (std::int64_t b = 0; b < t.bins && b < 128; ++b) level_bytes[b] = static_cast<std::uint8_t>(t.level[b]);
  K.level_lo = _mm512_load_si512(level_bytes);
  K.level_hi = _mm512_load_si512(level_bytes + 64);
  Lanes a;
  std::memset(&a, 0, sizeof a);
  const std::size_t main = n - n % 16;
  const bool large = t.stream;
  WindowHistogram W;
  if constexpr (fused) window_start(W, t.window, t.hist);
  __m512d alpha = _mm512_setzero_pd(), squares = _mm512_setzero_pd();
  if constexpr (update) alpha = _mm512_set1_pd(up->alpha);
  for (std::size_t b0 = 0; b0 < main; b0 += 16 * 255) {  // the 8-bit level counters hold 255
    Avx512Lanes A{}, B{};
    A.s = A.c = A.q = A.b = B.s = B.c = B.q = B.b = _mm512_setzero_pd();
    A.packed = B.packed = _mm512_setzero_si512();
    const std::size_t end = main - b0 < 16 * 255 ? main : b0 + 16 * 255;
    for (std::size_t i = b0; i < end; i += 16) {
      if (large)  // arrays from memory: ask for them ahead of the hardware prefetcher
        for (int line = 0; line < static_cast<int>(16 * sizeof(T)); line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(x + i) + prefetch_distance + line, _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(y + i) + prefetch_distance + line, _MM_HINT_T0);
        }
      // fused: the counts per level are the selected plan's (finish_host), not counted
      __m512d xa, ya;
      if constexpr (update)
        xa = ya = cg_update8(*up, i, alpha, squares);
      else
        xa = load8(x + i), ya = load8(y + i);
      const Fields Fa = fields(xa, ya, K);
      if constexpr (fused) window_add<false>(W, xa, ya, Fa, K);
      step8<bytes, count, count && !fused>(A, xa, ya, Fa, K);
      __m512d xb, yb;
      if constexpr (update)
        xb = yb = cg_update8(*up, i + 8, alpha, squares);
      else
        xb = load8(x + i + 8), yb = load8(y + i + 8);
      const Fields Fb = fields(xb, yb, K);
      if constexpr (fused) window_add<false>(W, xb, yb, Fb, K);
      step8<bytes, count, count && !fused>(B, xb, yb, Fb, K);
    }
    if constexpr (fused) window_decode(W);
    // merge this chunk's lanes into the running ones exactly (TwoSum per lane)
    Lanes chunk;
    std::memset(&chunk, 0, sizeof chunk);
    store_lanes(A, chunk, 0);
    store_lanes(B, chunk, 8);
    // zeros: the components of the chunk that are neither counted in a level nor non-finite
    std::int64_t counted = 0;
    for (int w = 0; w < lanes; ++w) {
      for (int m = 0; m < qdot_max_levels; ++m) counted += chunk.count[m][w];
      counted += chunk.nonfinite[w];
    }
    chunk.zeros[0] = static_cast<std::int64_t>(end - b0) - counted;
    for (int w = 0; w < lanes; ++w) {
      double sum, err;
      two_sum(a.s[w], chunk.s[w], sum, err);
      a.s[w] = sum;
      a.c[w] += chunk.c[w] + err;
      a.q[w] += chunk.q[w];
      a.b[w] += chunk.b[w];
      for (int m = 0; m < qdot_max_levels; ++m) a.count[m][w] += chunk.count[m][w];
      a.zeros[w] += chunk.zeros[w];
      a.nonfinite[w] += chunk.nonfinite[w];
      a.outside[w] += chunk.outside[w];
    }
  }
  LevelArrays la;
  for (int l = 0; l < qdot_max_levels; ++l) {
    la.shift[l] = t.L.shift[l];
    la.c[l] = t.L.c[l];
  }
  if constexpr (update) {  // the squares of the vectors, then the rest of the update
    _mm512_storeu_pd(up->squares, squares);
    cg_update_loop(*up, main, n);
  }
  for (int w = 0; main + static_cast<std::size_t>(w) < n; ++w) {
    lane_step(a, w, x[main + w], y[main + w], t, la.shift, la.c, t.L.e_min, t.bins, t.L.perforate);
    if constexpr (fused) ++t.hist[slot(x[main + w], y[main + w])];
  }
  for (int w = 0; w < lanes; ++w)
    for (int m = 0; m < qdot_max_levels; ++m) a.count[m][w] += static_cast<std::int64_t>((a.packed[w] >> (8 * m)) & 0xff);
  return join_lanes(a);
}

// The one-pass qdot of r with itself with CG's update riding in it (t.hist set).
EBLA_AVX512 QdotAccum compute_avx512_update(std::size_t n, const Tables& t, CgUpdate& up) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  if (vbmi && t.bins <= 128) return compute_avx512_loop<double, true, true, true, true>(up.r, up.r, n, t, &up);
  return compute_avx512_loop<double, false, true, true, true>(up.r, up.r, n, t, &up);
}

template <class T>
EBLA_AVX512 QdotAccum compute_avx512_intrinsics(const T* x, const T* y, std::size_t n, const Tables& t) {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi");
  if (t.hist) {  // with the histogram (plans being tried count their components)
    if (vbmi && t.bins <= 128) return compute_avx512_loop<T, true, true, true>(x, y, n, t);
    return compute_avx512_loop<T, false, true, true>(x, y, n, t);
  }
  if (vbmi && t.bins <= 128)
    return t.count_levels ? compute_avx512_loop<T, true, true>(x, y, n, t) : compute_avx512_loop<T, true, false>(x, y, n, t);
  return t.count_levels ? compute_avx512_loop<T, false, true>(x, y, n, t) : compute_avx512_loop<T, false, false>(x, y, n, t);
}
#pragma GCC diagnostic pop
#undef EBLA_AVX512
#endif

// One entry point per element type, operation and instruction set.
template <class T>
struct Kernels {
  static void hist_baseline(const T* x, const T* y, std::size_t n, std::int64_t* out, bool) {
    histogram(x, y, n, out, slots<T>, NoBlockCounter{});
  }
  static QdotAccum compute_baseline(const T* x, const T* y, std::size_t n, const Tables& t) {
    return compute(x, y, n, t);
  }
#if defined(__x86_64__) && defined(__GNUC__)
  __attribute__((target("avx2,bmi,bmi2,fma"))) static void hist_avx2(const T* x, const T* y, std::size_t n,
                                                                     std::int64_t* out, bool) {
    histogram(x, y, n, out, [](const T* a, const T* b, std::size_t len, std::int32_t* idx) {
      for (std::size_t i = 0; i < len; ++i) idx[i] = slot(a[i], b[i]);
    }, NoBlockCounter{});
  }
  __attribute__((target("avx2,bmi,bmi2,fma"))) static QdotAccum compute_avx2(const T* x, const T* y,
                                                                             std::size_t n, const Tables& t) {
    return compute(x, y, n, t);
  }
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma"))) static void hist_avx512(
      const T* x, const T* y, std::size_t n, std::int64_t* out, bool stream) {
    const std::size_t done = stream ? histogram_window<T, true>(x, y, n, out) : histogram_window<T, false>(x, y, n, out);
    if (done == n) return;
    if (stream)
      histogram(x + done, y + done, n - done, out, slots_avx512<T, true>, BitslicedCounter{});
    else
      histogram(x + done, y + done, n - done, out, slots_avx512<T, false>, BitslicedCounter{});
  }
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma"))) static QdotAccum
  compute_avx512(const T* x, const T* y, std::size_t n, const Tables& t) {
    return compute_avx512_intrinsics(x, y, n, t);
  }
#else
  static void hist_avx2(const T* x, const T* y, std::size_t n, std::int64_t* out, bool) { histogram(x, y, n, out, slots<T>, NoBlockCounter{}); }
  static void hist_avx512(const T* x, const T* y, std::size_t n, std::int64_t* out, bool) { histogram(x, y, n, out, slots<T>, NoBlockCounter{}); }
  static QdotAccum compute_avx2(const T* x, const T* y, std::size_t n, const Tables& t) { return compute(x, y, n, t); }
  static QdotAccum compute_avx512(const T* x, const T* y, std::size_t n, const Tables& t) { return compute(x, y, n, t); }
#endif

  static void hist(HostIsa isa, const T* x, const T* y, std::size_t n, std::int64_t* out, bool stream) {
    switch (isa) {
      case HostIsa::avx512: hist_avx512(x, y, n, out, stream); return;
      case HostIsa::avx2: hist_avx2(x, y, n, out, stream); return;
      case HostIsa::baseline: hist_baseline(x, y, n, out, stream); return;
    }
  }
  static QdotAccum run(HostIsa isa, const T* x, const T* y, std::size_t n, const Tables& t) {
#if defined(__x86_64__) && defined(__GNUC__)
    const bool histogram_inside = isa == HostIsa::avx512;  // the AVX-512 loop counts it itself
#else
    const bool histogram_inside = false;
#endif
    if (t.hist && !histogram_inside) hist(isa, x, y, n, t.hist, false);  // in a loop of its own
    switch (isa) {
      case HostIsa::avx512: return compute_avx512(x, y, n, t);
      case HostIsa::avx2: return compute_avx2(x, y, n, t);
      case HostIsa::baseline: break;
    }
    return compute_baseline(x, y, n, t);
  }
  // run on up.r with itself (t.hist set), CG's update riding in the same loop with AVX-512,
  // in a loop of its own just before otherwise
  static QdotAccum run_update(HostIsa isa, std::size_t n, const Tables& t, CgUpdate& up) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa == HostIsa::avx512) return compute_avx512_update(n, t, up);
#endif
    cg_update_loop(up, 0, n);
    return run(isa, up.r, up.r, n, t);
  }
};

// An input of the chunked loops below: an array, whose chunk at component b starts at p + b,
// or a constant vector (BLAS increment 0), whose every chunk is the block p of copies of its
// component, at least a chunk long: the kernels read the values a contiguous copy would hold,
// in the same chunks, so the result is that copy's to the bit, without an array of n.
template <class T>
struct Input {
  const T* p;
  bool constant = false;
  Input(const T* array) : p(array) {}  // NOLINT(google-explicit-constructor): an array is an input
  Input(const T* block, bool repeated) : p(block), constant(repeated) {}
  const T* chunk_at(std::size_t b) const { return constant ? p : p + b; }
  T operator[](std::size_t i) const { return constant ? p[0] : p[i]; }
};

// The histogram of x and y into out[0, qdot_hist_size) (overwritten): chunk by chunk on every
// host thread, each thread counting into its own copy (integer counts: the same for any
// thread count).
template <class T>
void histogram_threads(HostIsa isa, Input<T> x, Input<T> y, std::size_t n, std::int64_t* out) {
  const std::size_t chunk = stream_chunk(n);
  const bool stream = streaming<T>(n);
  count_over_chunks(chunk_count(n, chunk), qdot_hist_size, out, [=](std::size_t c, std::int64_t* h) {
    const std::size_t b = c * chunk;
    Kernels<T>::hist(isa, x.chunk_at(b), y.chunk_at(b), std::min(chunk, n - b), h, stream);
  });
}

// The chunks' sums merged in chunk order by TwoSum. The merge tree is fixed by n alone, so
// the result is the same bits for any thread count; any merge tree keeps the bound of
// qdot.hpp (it counts the rounded additions of a tree with n leaves).
QdotAccum merge_in_order(const std::vector<QdotAccum>& part) {
  QdotAccum acc = part[0];
  for (std::size_t c = 1; c < part.size(); ++c) qdot_accum_join(acc, part[c]);
  return acc;
}

// The accumulation of x and y under the tables t: every chunk on its own, on every host
// thread, then merged in chunk order.
template <class T>
QdotAccum accumulate_threads(HostIsa isa, Input<T> x, Input<T> y, std::size_t n, Tables t) {
  const std::size_t chunk = stream_chunk(n);
  const std::size_t chunks = chunk_count(n, chunk);
  t.stream = streaming<T>(n);
  if (chunks <= 1) return Kernels<T>::run(isa, x.p, y.p, n, t);
  std::vector<QdotAccum> part(chunks);
  for_each_chunk(chunks, [&](std::size_t c) {
    const std::size_t b = c * chunk;
    part[c] = Kernels<T>::run(isa, x.chunk_at(b), y.chunk_at(b), std::min(chunk, n - b), t);
  });
  return merge_in_order(part);
}

// Both in one pass over x and y: each chunk's histogram (into hist, overwritten) and its
// accumulation under the tables t, in one loop (AVX-512) or in two while the chunk is in
// cache. The accumulation is the same bits as accumulate_threads under t.
template <class T>
QdotAccum histogram_and_accumulate(HostIsa isa, const T* x, const T* y, std::size_t n, Tables t,
                                   std::int64_t* hist) {
  const std::size_t chunk = stream_chunk(n);
  const std::size_t chunks = chunk_count(n, chunk);
  t.stream = streaming<T>(n);
  if (chunks == 0) {
    std::fill(hist, hist + qdot_hist_size, std::int64_t{0});
    return Kernels<T>::run(isa, x, y, n, t);
  }
  std::vector<QdotAccum> part(chunks);
  count_over_chunks(chunks, qdot_hist_size, hist, [&](std::size_t c, std::int64_t* h) {
    const std::size_t b = c * chunk, len = std::min(chunk, n - b);
    Tables counting = t;
    counting.hist = h;
    part[c] = Kernels<T>::run(isa, x + b, y + b, len, counting);
  });
  return merge_in_order(part);
}

template <class T>
QdotPlan select_host(Input<T> x, Input<T> y, std::size_t n, const QdotOptions& options, HostIsa isa) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::int64_t> h(qdot_hist_size, 0);
  histogram_threads(isa, x, y, n, h.data());
  QdotPlan plan = plan_from_histogram(h.data(), n, std::is_same<T, double>::value ? 53 : 24, options);
  plan.select_seconds = seconds_since(t0);
  return plan;
}

// The result of an accumulation under `plan`. count_levels = false: the data is the plan's
// own, so the counts per level are the plan's and nothing lies outside it.
template <class T>
QdotResult finish_host(Input<T> x, Input<T> y, std::size_t n, const QdotPlan& plan, QdotAccum acc,
                       bool count_levels) {
  if (!count_levels) {
    const auto per = plan.count_per_level();
    std::int64_t counted = 0;
    for (std::size_t l = 0; l < per.size(); ++l) {
      acc.count[l] = static_cast<std::int64_t>(per[l]);
      counted += acc.count[l];
    }
    acc.zeros = static_cast<std::int64_t>(n) - counted - acc.nonfinite;  // the rest
    acc.outside = 0;
  }
  QdotResult r = finish_result(plan, acc, n);
  if (r.stats.nonfinite) {  // the plain dot product, NaN/Inf as it gives them
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(y[i]);
    r.value = sum;
  }
  return r;
}

// The level lookup of a plan as the kernels take it.
struct LevelTable {
  std::vector<std::int64_t> level;
  Tables tables;
  LevelTable(const QdotPlan& plan, bool count_levels) : level(plan.level.begin(), plan.level.end()) {
    if (level.empty()) level.push_back(0);  // no bins: every lookup is masked, but stays in bounds
    tables = Tables{level.data(), static_cast<std::int64_t>(plan.level.size()), kernel_levels(plan), count_levels};
    tables.window = busiest_window(plan);
    plain_run(plan, tables);
  }
  // The run of consecutive bins at the level that leaves the input exact (level 0 of a
  // binary64 ladder) that holds the most of the plan's components (the first such run on
  // a tie): where all eight components of a vector fall in it, the AVX-512 loop skips the
  // level lookup and the rounding, which change nothing there. Only a run that holds at
  // least 127 in 128 components is kept: then at least 94 % of the vectors of the plan's
  // data fall in it whole, and the test's branch is predictable; a smaller run would cost
  // more in mispredictions than it saves.
  static void plain_run(const QdotPlan& plan, Tables& t) {
    const int plain = plan.input_t == 24 ? exact_level<float>(t.L) : exact_level<double>(t.L);
    if (plain < 0) return;
    std::int64_t start = 0, sum = 0, most = -1, total = 0;
    for (std::size_t c : plan.count) total += static_cast<std::int64_t>(c);
    for (std::size_t j = 0; j < plan.level.size(); ++j) {
      const std::int64_t k = static_cast<std::int64_t>(j);
      if (plan.level[j] != plain) {
        start = k + 1;
        sum = 0;
        continue;
      }
      sum += static_cast<std::int64_t>(plan.count[j]);
      if (sum > most) {
        most = sum;
        t.plain_first = start;
        t.plain_last = k;
      }
    }
    if (128 * most < 127 * total) t.plain_first = 0, t.plain_last = -1;  // too few: no run
  }
  // The first bin of the 64 consecutive bins that hold the most of the plan's components.
  static std::int64_t busiest_window(const QdotPlan& plan) {
    std::int64_t best = plan.e_min, most = -1, sum = 0;
    const std::size_t bins = plan.count.size();
    for (std::size_t j = 0; j < bins; ++j) {  // sum over bins [j - 63, j]
      sum += plan.count[j] - (j >= 64 ? plan.count[j - 64] : 0);
      if (sum > most) {
        most = sum;
        best = plan.e_min + std::max<std::int64_t>(0, static_cast<std::int64_t>(j) - 63);
      }
    }
    return best;
  }
};

template <class T>
QdotResult compute_host(Input<T> x, Input<T> y, std::size_t n, const QdotPlan& plan, HostIsa isa,
                        bool count_levels) {
  const auto t0 = std::chrono::steady_clock::now();
  const LevelTable table(plan, count_levels);
  QdotResult r = finish_host(x, y, n, plan, accumulate_threads(isa, x, y, n, table.tables), count_levels);
  r.stats.compute_seconds = seconds_since(t0);
  return r;
}

// Whether the two plans have the same ladder, as the kernels see it.
bool same_ladder(const QdotPlan& plan, const QdotPlan& hint) {
  if (hint.input_t != plan.input_t || hint.ladder.size() != plan.ladder.size()) return false;
  const QdotKernelLevels a = kernel_levels(plan), b = kernel_levels(hint);
  if (a.perforate != b.perforate) return false;
  for (int l = 0; l < a.count; ++l)
    if (a.shift[l] != b.shift[l] || bit_cast<std::uint64_t>(a.c[l]) != bit_cast<std::uint64_t>(b.c[l])) return false;
  return true;
}

// The level at which an accumulation under `hint` computed the components of bin e: the
// hint's level inside its range, the input precision (level 0) outside.
std::uint8_t level_under(const QdotPlan& hint, std::int64_t e) {
  const std::int64_t k = e - hint.e_min;
  return k >= 0 && k < static_cast<std::int64_t>(hint.level.size()) ? hint.level[static_cast<std::size_t>(k)]
                                                                      : std::uint8_t{0};
}

// Whether the accumulation under `hint` computed every component of x and y as `plan`
// does: the same ladder, and every bin `plan` fills at the same level (a bin outside the
// hint's range was computed at the input precision, level 0).
bool same_levels(const QdotPlan& plan, const QdotPlan& hint) {
  if (!same_ladder(plan, hint)) return false;
  for (std::size_t j = 0; j < plan.count.size(); ++j)
    if (plan.count[j] != 0 && level_under(hint, plan.e_min + static_cast<std::int64_t>(j)) != plan.level[j]) return false;
  return true;
}

// Whether the accumulation under `hint` computed every component at least as precisely as
// `plan` asks: on every bin `plan` fills, a level no further down the ladder (the ladder is
// strictly decreasing in precision, perforate last). Each product's error is then at most
// what plan's level allows, so plan's budget holds for that accumulation too.
bool dominates(const QdotPlan& hint, const QdotPlan& plan) {
  if (!same_ladder(plan, hint)) return false;
  for (std::size_t j = 0; j < plan.count.size(); ++j)
    if (plan.count[j] != 0 && level_under(hint, plan.e_min + static_cast<std::int64_t>(j)) > plan.level[j]) return false;
  return true;
}

// The level `hint` gives bin e when it is widened: its lowest bin's level below its range,
// its highest bin's above it (the budget gives the largest products the most precise
// levels, so a bin the data moved into above the plan's range most likely takes that of
// the plan's top), a filled bin's level inside it, and -1 (no opinion) for an empty bin
// inside it. A guess only: dominates() decides whether the pass is kept.
int opinion(const QdotPlan& hint, std::int64_t e) {
  if (e < hint.e_min) return hint.level.front();
  const std::int64_t k = e - hint.e_min;
  if (k >= static_cast<std::int64_t>(hint.count.size())) return hint.level.back();
  return hint.count[static_cast<std::size_t>(k)] != 0 ? hint.level[static_cast<std::size_t>(k)] : -1;
}

// The level at which an accumulation under widened(hint, m) computes bin e: for m = 0 the
// hint's own (level_under); else, within the widened range e_min - m .. e_max + m, the most
// precise opinion of the bins within m of e (0 where none has one), and 0 outside it.
std::uint8_t widened_level(const QdotPlan& hint, std::int64_t e, int m) {
  if (m == 0 || hint.count.empty()) return level_under(hint, e);
  if (e < hint.e_min - m || e > hint.e_max + m) return 0;
  int most = -1;  // the most precise level seen (lowest index)
  for (std::int64_t d = -m; d <= m; ++d) {
    const int l = opinion(hint, e + d);
    if (l >= 0 && (most < 0 || l < most)) most = l;
  }
  return static_cast<std::uint8_t>(most < 0 ? 0 : most);
}

// The plan `hint` widened by m bins (QdotOptions::plan_margin): bins e_min - m .. e_max + m,
// each at widened_level. Where the data's bins move by at most m from call to call and the
// levels follow them, the plan selected next is dominated by this one.
QdotPlan widened(const QdotPlan& hint, int m) {
  if (m == 0 || hint.count.empty()) return hint;
  QdotPlan w = hint;
  w.e_min = hint.e_min - m;
  w.e_max = hint.e_max + m;
  const std::size_t bins = hint.count.size() + 2 * static_cast<std::size_t>(m);
  w.level.assign(bins, 0);
  w.count.assign(bins, 0);
  for (std::size_t j = 0; j < bins; ++j) {
    w.level[j] = widened_level(hint, w.e_min + static_cast<std::int64_t>(j), m);
    if (j >= static_cast<std::size_t>(m) && j - m < hint.count.size()) w.count[j] = hint.count[j - m];
  }
  return w;
}

// The least m <= cap for which widened(before, m) dominates `now` (cap where none does): the
// first m at which the widened plan computes every bin `now` fills at least as precisely as
// `now` asks (m by m: a bin that fits at m need not fit at m + 1, where a coarser neighbour
// comes in reach). A solver's qdot widens its last plan by the margin its last calls
// needed, not by the whole plan_margin, so that it computes no more precisely than it must.
int margin_needed(const QdotPlan& before, const QdotPlan& now, int cap) {
  if (before.count.empty() || !same_ladder(now, before)) return cap;
  auto fits = [&](int m) {
    for (std::size_t j = 0; j < now.count.size(); ++j)
      if (now.count[j] != 0 && widened_level(before, now.e_min + static_cast<std::int64_t>(j), m) > now.level[j])
        return false;
    return true;
  };
  for (int m = 0; m < cap; ++m)
    if (fits(m)) return m;
  return cap;
}

// The result of an accumulation under `tried` that dominates `plan`, selected from the same
// data: the bound is a posteriori (acc.b sums each product's constant at the level it was
// computed at); the counts per level are those of the levels used, from plan's histogram.
template <class T>
QdotResult finish_tried(const T* x, const T* y, std::size_t n, const QdotPlan& plan, const QdotPlan& tried,
                        QdotAccum acc) {
  std::int64_t counted = 0;
  for (auto& c : acc.count) c = 0;
  for (std::size_t j = 0; j < plan.count.size(); ++j) {
    if (plan.count[j] == 0) continue;
    acc.count[level_under(tried, plan.e_min + static_cast<std::int64_t>(j))] += plan.count[j];
    counted += plan.count[j];
  }
  acc.zeros = static_cast<std::int64_t>(n) - counted - acc.nonfinite;
  acc.outside = 0;  // every component lies in a bin of plan, the plan reported
  return finish_host<T>(x, y, n, plan, acc, true);
}

// qdot in one pass where `hint` still holds: the histogram and the accumulation under the
// hint in the same pass; the plan the histogram selects is compared with the hint, and
// where a bin's level differs the products are computed again under the selected plan.
// Either way the result is qdot_compute(x, y, qdot_select(x, y, options)), bit for bit.
template <class T>
QdotResult one_pass_host(const T* x, const T* y, std::size_t n, const QdotOptions& options, const QdotPlan& hint,
                         HostIsa isa, QdotPlan& selected, int widen) {
  const auto t0 = std::chrono::steady_clock::now();
  const QdotPlan tried = widened(hint, widen < 0 ? margin_of(options) : std::min(widen, margin_of(options)));
  const LevelTable table(tried, true);
  std::vector<std::int64_t> h(qdot_hist_size, 0);
  const QdotAccum acc = histogram_and_accumulate(isa, x, y, n, table.tables, h.data());
  selected = plan_from_histogram(h.data(), n, std::is_same<T, double>::value ? 53 : 24, options);
  selected.select_seconds = seconds_since(t0);
  const bool same = same_levels(selected, tried);
  if (!same && margin_of(options) > 0 && dominates(tried, selected)) {
    QdotResult r = finish_tried(x, y, n, selected, tried, acc);
    r.stats.select_seconds = selected.select_seconds;
    r.stats.passes = 1;
    return r;
  }
  if (!same) {
    QdotResult r = compute_host<T>(x, y, n, selected, isa, false);
    r.stats.select_seconds = selected.select_seconds;
    r.stats.passes = 2;
    return r;
  }
  QdotResult r = finish_host<T>(x, y, n, selected, acc, false);
  r.stats.select_seconds = selected.select_seconds;
  r.stats.passes = 1;
  return r;
}

}  // namespace

QdotPlan qdot_select_host(const double* x, const double* y, std::size_t n, const QdotOptions& o, HostIsa isa) {
  return select_host<double>(x, y, n, o, isa);
}
QdotPlan qdot_select_host(const float* x, const float* y, std::size_t n, const QdotOptions& o, HostIsa isa) {
  return select_host<float>(x, y, n, o, isa);
}
QdotResult qdot_compute_host(const double* x, const double* y, std::size_t n, const QdotPlan& p, HostIsa isa,
                             bool count_levels) {
  return compute_host<double>(x, y, n, p, isa, count_levels);
}
QdotResult qdot_compute_host(const float* x, const float* y, std::size_t n, const QdotPlan& p, HostIsa isa,
                             bool count_levels) {
  return compute_host<float>(x, y, n, p, isa, count_levels);
}

QdotResult qdot_one_pass_host(const double* x, const double* y, std::size_t n, const QdotOptions& o,
                              const QdotPlan& hint, QdotPlan& selected, HostIsa isa, int widen) {
  return one_pass_host(x, y, n, o, hint, isa, selected, widen);
}
QdotResult qdot_one_pass_host(const float* x, const float* y, std::size_t n, const QdotOptions& o,
                              const QdotPlan& hint, QdotPlan& selected, HostIsa isa, int widen) {
  return one_pass_host(x, y, n, o, hint, isa, selected, widen);
}

namespace {

// The input of a host vector: an array as it is, a constant vector as a block of copies of
// its component, a chunk long, held in `block`.
template <class T>
Input<T> input_of(HostVector<T> v, std::size_t n, std::vector<T>& block) {
  if (!v.constant || n == 0) return Input<T>(v.p);
  block.assign(std::min(n, stream_chunk(n)), v.p[0]);
  return Input<T>(block.data(), true);
}

template <class T>
QdotPlan select_vectors(HostVector<T> x, HostVector<T> y, std::size_t n, const QdotOptions& o) {
  resolve_ladder(o, std::is_same<T, double>::value ? 53 : 24, "ebla::qdot_select");  // before any work
  std::vector<T> bx, by;
  return select_host<T>(input_of(x, n, bx), input_of(y, n, by), n, o, best_host_isa());
}

template <class T>
QdotResult compute_vectors(HostVector<T> x, HostVector<T> y, std::size_t n, const QdotPlan& p, bool count_levels) {
  std::vector<T> bx, by;
  return compute_host<T>(input_of(x, n, bx), input_of(y, n, by), n, p, best_host_isa(), count_levels);
}

}  // namespace

QdotPlan qdot_select_host(HostVector<double> x, HostVector<double> y, std::size_t n, const QdotOptions& o) {
  return select_vectors(x, y, n, o);
}
QdotPlan qdot_select_host(HostVector<float> x, HostVector<float> y, std::size_t n, const QdotOptions& o) {
  return select_vectors(x, y, n, o);
}
QdotResult qdot_compute_host(HostVector<double> x, HostVector<double> y, std::size_t n, const QdotPlan& p,
                             bool count_levels) {
  return compute_vectors(x, y, n, p, count_levels);
}
QdotResult qdot_compute_host(HostVector<float> x, HostVector<float> y, std::size_t n, const QdotPlan& p,
                             bool count_levels) {
  return compute_vectors(x, y, n, p, count_levels);
}

int needed_margin(const QdotPlan& before, const QdotPlan& now, int cap) { return margin_needed(before, now, cap); }

// ---- QdotStream: a qdot riding in the caller's pass ----------------------------------------

struct QdotStream::Impl {
  Impl(const double* x_, const double* y_, std::size_t n_, const QdotOptions& o)
      : x(x_), y(y_), n(n_), chunk(stream_chunk(n_)), chunks(chunk_count(n_, chunk)), options(o) {}
  const double* x;
  const double* y;
  std::size_t n, chunk, chunks;
  QdotOptions options;
  HostIsa isa = best_host_isa();
  std::unique_ptr<QdotPlan> hint;     // the plan tried, if any
  std::unique_ptr<LevelTable> table;  // its lookup
  std::vector<QdotAccum> part;        // products per chunk under the hint
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
};

QdotStream::QdotStream(const double* x, const double* y, std::size_t n, const QdotOptions& options)
    : impl_(std::make_unique<Impl>(x, y, n, options)) {
  resolve_ladder(options, 53, "ebla::qdot_select");
  int widen = 0;
  if (const QdotPlan* h = plan_hint(x, y, n, options, 53, &widen)) {
    impl_->hint = std::make_unique<QdotPlan>(widened(*h, widen));
    impl_->table = std::make_unique<LevelTable>(*impl_->hint, true);
    impl_->part.resize(impl_->chunks);
  }
}

QdotStream::~QdotStream() = default;
std::size_t QdotStream::chunk() const { return impl_->chunk; }
std::size_t QdotStream::chunks() const { return impl_->chunks; }
std::size_t QdotStream::histogram_size() { return qdot_hist_size; }

void QdotStream::add(std::size_t c, std::int64_t* hist) {
  Impl& s = *impl_;
  const std::size_t b = c * s.chunk, len = std::min(s.chunk, s.n - b);
  // the caller just wrote the chunk: it is in cache
  if (!s.hint) {
    Kernels<double>::hist(s.isa, s.x + b, s.y + b, len, hist, false);
    return;
  }
  Tables counting = s.table->tables;
  counting.hist = hist;
  s.part[c] = Kernels<double>::run(s.isa, s.x + b, s.y + b, len, counting);
}

double cg_update(double alpha, const double* p, const double* q, double* u, double* r, std::size_t n) {
  CgUpdate up{alpha, p, q, u, r, {0, 0, 0, 0, 0, 0, 0, 0}};
  cg_update_loop(up, 0, n);
  return squares_total(up);
}

double QdotStream::update(std::size_t c, double alpha, const double* p, const double* q, double* u, double* r,
                          std::int64_t* hist) {
  Impl& s = *impl_;
  if (r != s.x || r != s.y) throw_invalid("ebla::detail::QdotStream::update", "r is not the stream's x and y");
  const std::size_t b = c * s.chunk, len = std::min(s.chunk, s.n - b);
  CgUpdate up{alpha, p + b, q + b, u + b, r + b, {0, 0, 0, 0, 0, 0, 0, 0}};
  if (!s.hint) {  // no plan to try: the update, then the histogram while the chunk is in cache
    const double squares = cg_update(alpha, p + b, q + b, u + b, r + b, len);
    Kernels<double>::hist(s.isa, r + b, r + b, len, hist, false);
    return squares;
  }
  Tables counting = s.table->tables;
  counting.hist = hist;
  s.part[c] = Kernels<double>::run_update(s.isa, len, counting, up);
  return squares_total(up);
}

QdotResult QdotStream::finish(const std::int64_t* hist) {
  Impl& s = *impl_;
  QdotPlan plan = plan_from_histogram(hist, s.n, 53, s.options);
  plan.select_seconds = seconds_since(s.t0);
  QdotResult r;
  const bool same = s.hint && same_levels(plan, *s.hint);
  if (same || (s.hint && margin_of(s.options) > 0 && dominates(*s.hint, plan))) {
    const QdotAccum acc = s.chunks > 0 ? merge_in_order(s.part) : Kernels<double>::run(s.isa, s.x, s.y, 0, s.table->tables);
    r = same ? finish_host<double>(s.x, s.y, s.n, plan, acc, false) : finish_tried(s.x, s.y, s.n, plan, *s.hint, acc);
    r.stats.passes = 0;
  } else {
    r = compute_host<double>(s.x, s.y, s.n, plan, s.isa, false);
    r.stats.passes = 1;
  }
  r.stats.select_seconds = plan.select_seconds;
  if (s.options.reuse_plan) remember_plan(s.x, s.y, s.n, plan, margin_of(s.options));
  return r;
}

void qdot_histogram_host(const double* x, const double* y, std::size_t n, std::int64_t* out, HostIsa isa) {
  histogram_threads<double>(isa, x, y, n, out);
}
void qdot_histogram_host(const float* x, const float* y, std::size_t n, std::int64_t* out, HostIsa isa) {
  histogram_threads<float>(isa, x, y, n, out);
}

QdotAccum qdot_accumulate_host(const double* x, const double* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa) {
  const LevelTable table(plan, true);
  return accumulate_threads<double>(isa, x, y, n, table.tables);
}
QdotAccum qdot_accumulate_host(const float* x, const float* y, std::size_t n, const QdotPlan& plan,
                               HostIsa isa) {
  const LevelTable table(plan, true);
  return accumulate_threads<float>(isa, x, y, n, table.tables);
}

}  // namespace ebla::detail
