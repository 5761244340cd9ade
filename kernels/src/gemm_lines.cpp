// The line kernels of ebla::gemm (one row of A or B per call), compiled once per instruction
// set, and the choice among them.
#include "gemm_internal.hpp"

#include <ebla/core/error.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace ebla {

namespace gemm_detail {

namespace {

// ---- line kernels ---------------------------------------------------------------------------
//
// The passes over one row of A or B: short loops the compiler vectorises (`omp simd`), forced
// inline into one set of functions per instruction set of quantize_host.hpp (baseline x86-64,
// AVX2, AVX-512), chosen at run time from what the CPU runs (detail::gemm_host_isa, which
// tests can set). Every set gives the same words, residuals, norms ||X||_inf and products
// (elementwise IEEE operations, or sums in a fixed order); the sums of the bounds may be
// ordered differently, which the bounds allow for (inflate()).
#define EBLA_INLINE [[gnu::always_inline]] inline

/// sums[r] = |x_r0| + |x_r1| + ... + |x_r,n-1| added in this order (||X||_inf as the plain sum
/// gives it), for R rows ld apart, side by side: R independent chains of additions.
template <int R>
EBLA_INLINE void ordered_abs_sums_body(const double* x, std::int64_t ld, std::int64_t n, double* sums) {
  double s[R] = {};
  for (std::int64_t j = 0; j < n; ++j)
    for (int r = 0; r < R; ++r) s[r] += std::fabs(x[r * ld + j]);
  for (int r = 0; r < R; ++r) sums[r] = s[r];
}

#if defined(__x86_64__) && defined(__GNUC__)
/// ordered_abs_sums_body<8> in AVX-512: each step loads eight entries of each of the eight
/// rows, transposes the 8 x 8 block so that vector c holds column j + c, and adds the columns
/// in order. Lane r makes row r's additions in row r's order, so the sums are the same bits.
__attribute__((target("avx512f"))) void ordered_abs_sums8_avx512(const double* x, std::int64_t ld,
                                                                 std::int64_t n, double* sums) {
  // lanes taken from (a, b) by permutex2var: index i < 8 is a[i], 8 + i is b[i]
  const __m512i evens = _mm512_setr_epi64(0, 8, 2, 10, 4, 12, 6, 14);
  const __m512i odds = _mm512_setr_epi64(1, 9, 3, 11, 5, 13, 7, 15);
  const __m512i low_pairs = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i high_pairs = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i low_quads = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i high_quads = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  __m512d s = _mm512_setzero_pd();
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m512d r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm512_abs_pd(_mm512_loadu_pd(x + i * ld + j));
    // t[2i] holds columns 0,2,4,6 of rows 2i, 2i+1 (interleaved); t[2i+1] columns 1,3,5,7
    __m512d t[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm512_permutex2var_pd(r[2 * i], evens, r[2 * i + 1]);
      t[2 * i + 1] = _mm512_permutex2var_pd(r[2 * i], odds, r[2 * i + 1]);
    }
    // rows 0-3 (u) and 4-7 (v): columns {0,4}, {1,5}, {2,6}, {3,7}, four rows each
    const __m512d u04 = _mm512_permutex2var_pd(t[0], low_pairs, t[2]);
    const __m512d u26 = _mm512_permutex2var_pd(t[0], high_pairs, t[2]);
    const __m512d u15 = _mm512_permutex2var_pd(t[1], low_pairs, t[3]);
    const __m512d u37 = _mm512_permutex2var_pd(t[1], high_pairs, t[3]);
    const __m512d v04 = _mm512_permutex2var_pd(t[4], low_pairs, t[6]);
    const __m512d v26 = _mm512_permutex2var_pd(t[4], high_pairs, t[6]);
    const __m512d v15 = _mm512_permutex2var_pd(t[5], low_pairs, t[7]);
    const __m512d v37 = _mm512_permutex2var_pd(t[5], high_pairs, t[7]);
    // the columns, rows 0-7 in lanes 0-7, added in order
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u04, low_quads, v04));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u15, low_quads, v15));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u26, low_quads, v26));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u37, low_quads, v37));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u04, high_quads, v04));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u15, high_quads, v15));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u26, high_quads, v26));
    s = _mm512_add_pd(s, _mm512_permutex2var_pd(u37, high_quads, v37));
  }
  _mm512_storeu_pd(sums, s);
  for (; j < n; ++j)  // the last columns, in order
    for (int i = 0; i < 8; ++i) sums[i] += std::fabs(x[i * ld + j]);
}
#endif

/// max_j |x_j| (exact in any order; a NaN is passed over: it is reported elsewhere).
EBLA_INLINE double max_abs_body(const double* x, std::int64_t n) {
  double m = 0;
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(x[j]);
    m = a > m ? a : m;
  }
  return m;
}

/// max_j = max(max_j, |x_j|) (the largest entry of each column of B).
EBLA_INLINE void max_abs_into_body(const double* x, double* max, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(x[j]);
    max[j] = a > max[j] ? a : max[j];
  }
}

/// round_to<nearest_even>(y) into the input format by one binary64 addition and subtraction,
/// for formats with t <= 52 and emax + 54 - t <= 1023 (those of the engines and the narrow
/// ones; not the unbounded-range variants). Let q be the format's quantum at |y|:
/// 2^(max(e_y, emin) - t + 1) with subnormals; 2^emin below fmin without (e_low is emin, or
/// emin + t - 1 without subnormals, and the exponent of q is e_q - t + 1 with e_q = e_low below
/// fmin, else min(e_y, emax + 1)). With s = 2^52 q, |y| < s (t <= 52), so |y| + s lies in
/// [s, 2s), where binary64's spacing is q: its rounding to nearest is s plus |y| rounded to a
/// multiple of q, ties to an even multiple (s is one), and subtracting s is exact (Sterbenz).
/// Above 2^(emax + 2) the exponent is held at emax + 1 (s stays finite) and the result still
/// exceeds fmax. Overflow, infinities and NaN then as round_to does; the sign is y's.
EBLA_INLINE double nearest_word(double y, const SplitConstants& k) {
  using namespace binary64;
  const std::uint64_t bits = bit_cast<std::uint64_t>(y);
  const std::uint64_t a = bits & abs_mask;
  const std::int64_t field = static_cast<std::int64_t>(a >> fraction_bits);
  const std::int64_t e = field - bias;
  const std::int64_t e_q = a < k.rc.fmin ? k.e_low : (e < k.e_high ? e : k.e_high);
  const double s = bit_cast<double>(static_cast<std::uint64_t>(e_q - k.t + 1 + fraction_bits + bias) << fraction_bits);
  std::uint64_t r = bit_cast<std::uint64_t>((bit_cast<double>(a) + s) - s);
  r = r > k.rc.fmax ? k.rc.overflow_bits : r;
  r = field == 0x7ff ? (a == exponent_mask ? k.rc.infinity_bits : a) : r;
  return bit_cast<double>((bits & sign_mask) | r);
}

/// round_to<nearest_even>(y) for the formats nearest_word does not take. Out of line: a loop
/// that calls it runs entry by entry, its sums added in order, whatever else is inlined.
[[gnu::noinline]] double rounded_word(double y, const RoundingConstants& c) {
  return round_to<Rounding::nearest_even>(y, c);
}

/// The P words of (4.5)-(4.6) of n entries in one pass: r = x s (s = scale_j if PerEntry, else
/// one_scale); per word w, y = r u^-w, word_w = fl(y), r = (y - word_w) u^w (exact but after a
/// saturated word: 2^-52 |r| per word covers that), and after the last one |rho| = |r| plus
/// those slacks and the underflow margin. Returns sum_j |rho_j| weight_j.
template <int P, bool PerEntry, bool Fast>
EBLA_INLINE double words_body(const SplitConstants& k, const double* x, const double* scale, double one_scale,
                              double* w0, double* w1, double* w2, double* rho, const double* weight,
                              std::int64_t n) {
  const SplitConstants kc = k;
  const RoundingConstants c = k.rc;
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < n; ++j) {
    double r = x[j] * (PerEntry ? scale[j] : one_scale);
    double slack = 0;
    for (int w = 0; w < P; ++w) {
      const double y = w == 0 ? r : r * kc.up[w];  // r / u^w (u^0 = 1)
      const double v = Fast ? nearest_word(y, kc) : rounded_word(y, c);  // (4.5)
      (w == 0 ? w0 : w == 1 ? w1 : w2)[j] = v;
      r = (y - v) * kc.down[w];  // exact (docs/gemm.md) but after a saturated word
      slack += 2 * binary64_u * std::fabs(r);
    }
    const double rh = std::fabs(r) + slack * (1 + 4 * binary64_u) + kc.margin[P - 1];
    rho[j] = rh;
    sum += rh * weight[j];
  }
  return sum;
}

/// to = from as binary32 (exact for the words of formats inside binary32).
EBLA_INLINE void to_binary32_body(const double* from, float* to, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) to[j] = static_cast<float>(from[j]);
}

/// to = from as bfloat16 bit patterns (exact for the words of formats inside bfloat16).
EBLA_INLINE void to_bfloat16_body(const double* from, std::uint16_t* to, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j)
    to[j] = static_cast<std::uint16_t>(bit_cast<std::uint32_t>(static_cast<float>(from[j])) >> 16);
}

// The sums below are loops of their own (not fused with the stores of the words): a loop's
// sums come out the same whatever else is kept, so gemm_normwise_bound equals gemm's bound.

/// One word of a row of A: sum_j |v_j| wR_j (if WithR) and sum_j |v_j| wW_j (the bound's R and
/// W), sum_j |v_j| and max_j |v_j| (the row's norms), added into sums[0..3].
template <bool WithR>
EBLA_INLINE void row_word_body(const double* v, const double* wR, const double* wW, std::int64_t n, double* sums) {
  double dr = 0, dw = 0, one = 0, max = 0;
#pragma omp simd reduction(+ : dr, dw, one) reduction(max : max)
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(v[j]);
    if (WithR) dr += a * wR[j];
    dw += a * wW[j];
    one += a;
    max = a > max ? a : max;
  }
  sums[0] += dr;
  sums[1] += dw;
  sums[2] += one;
  sums[3] = sums[3] > max ? sums[3] : max;
}

/// One word of a row of B: sum_j |v_j| weight_j (returned), |v_j| added to one_j and max_j
/// raised to it (B's column norms).
EBLA_INLINE double column_word_body(const double* v, const double* weight, double* one, double* max, std::int64_t n) {
  double d = 0;
#pragma omp simd reduction(+ : d)
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(v[j]);
    d += a * weight[j];
    one[j] += a;
    max[j] = a > max[j] ? a : max[j];
  }
  return d;
}

constexpr std::int64_t segment = 256;  // entries of a line split at a time: its buffers stay in L1

template <int P, bool PerEntry>
EBLA_INLINE double words_of(const SplitConstants& k, const LineJob& job, std::int64_t s, double* const* w,
                            double* rho, std::int64_t len) {
  const double* scale = PerEntry ? job.col_scale + s : nullptr;
  return k.fast ? words_body<P, PerEntry, true>(k, job.x + s, scale, job.scale, w[0], w[1], w[2], rho, job.rho_weight + s, len)
                : words_body<P, PerEntry, false>(k, job.x + s, scale, job.scale, w[0], w[1], w[2], rho, job.rho_weight + s, len);
}

/// The sums of word w of a segment, and its copy for the engine.
EBLA_INLINE void use_word(const LineJob& job, int w, const double* v, std::int64_t s, std::int64_t len, LineSums& out) {
  if (job.f32[w]) to_binary32_body(v, job.f32[w] + s, len);
  if (job.bf16[w]) to_bfloat16_body(v, job.bf16[w] + s, len);
  if (job.col_one[w]) {
    out.weighted[0][w] += column_word_body(v, job.weight[0][w] + s, job.col_one[w] + s, job.col_max + s, len);
    return;
  }
  double sums[4] = {0, 0, 0, out.max};
  if (job.weight[0][w])
    row_word_body<true>(v, job.weight[0][w] + s, job.weight[1][w] + s, len, sums);
  else
    row_word_body<false>(v, nullptr, job.weight[1][w] + s, len, sums);
  out.weighted[0][w] += sums[0];
  out.weighted[1][w] += sums[1];
  out.one[w] += sums[2];
  out.max = sums[3];
}

/// The words of one line (4.5)-(4.6), and in the same pass everything made of them: their
/// binary64, binary32 or bfloat16 copies, the line's norms and the weighted sums of the
/// normwise bound. Segment by segment, so that each word is read back from L1.
EBLA_INLINE LineSums split_line_body(const SplitConstants& k, const LineJob& job, std::int64_t n) {
  LineSums out;
  alignas(64) double words[3][segment], rho[segment];
  const int p = k.identity ? 1 : k.p;  // identity: the other words and rho are 0
  for (std::int64_t s = 0; s < n; s += segment) {
    const std::int64_t len = std::min(segment, n - s);
    double* at[3] = {};
    for (int w = 0; w < p; ++w) at[w] = job.word[w] ? job.word[w] + s : words[w];
    double* rh = job.rho ? job.rho + s : rho;
    if (k.identity) {
      at[0] = const_cast<double*>(job.x + s);
    } else if (job.col_scale) {
      out.rho += p == 1 ? words_of<1, true>(k, job, s, at, rh, len)
                 : p == 2 ? words_of<2, true>(k, job, s, at, rh, len) : words_of<3, true>(k, job, s, at, rh, len);
    } else {
      out.rho += p == 1 ? words_of<1, false>(k, job, s, at, rh, len)
                 : p == 2 ? words_of<2, false>(k, job, s, at, rh, len) : words_of<3, false>(k, job, s, at, rh, len);
    }
    for (int w = 0; w < p; ++w) use_word(job, w, at[w], s, len, out);
  }
  return out;
}


/// The last pass of the assembly (4.7) over a row: S = (First ? +0 : S) + P scale, then times
/// f c_j if Unscale (f c_j = 2^-(e_i + e_j), a normal number: exact unless the result is
/// subnormal). Returns whether every S_j is finite.
template <bool First, bool Unscale, class T>
EBLA_INLINE bool finish_row(double* S, const T* P, double scale, double f, const double* c, std::int64_t n) {
  constexpr double max_double = std::numeric_limits<double>::max();
  int finite = 1;
#pragma omp simd reduction(& : finite)
  for (std::int64_t j = 0; j < n; ++j) {
    double s = (First ? 0.0 : S[j]) + static_cast<double>(P[j]) * scale;
    if (Unscale) s *= f * c[j];
    S[j] = s;
    finite &= std::fabs(s) <= max_double ? 1 : 0;
  }
  return finite != 0;
}

/// S = (first ? +0 : S) + P scale (a power of two); with c (not null) then S_j *= f c_j; true
/// if every S_j is finite (checked on the last pass only).
template <class T>
EBLA_INLINE bool add_scaled_body(double* S, const T* P, double scale, bool first, double f,
                                 const double* c, std::int64_t n) {
  if (first) return c ? finish_row<true, true>(S, P, scale, f, c, n) : finish_row<true, false>(S, P, scale, f, c, n);
  return c ? finish_row<false, true>(S, P, scale, f, c, n) : finish_row<false, false>(S, P, scale, f, c, n);
}

// One namespace of wrappers per instruction set, each compiled for it.
#define EBLA_LINE_KERNELS(NS, TARGET, SUMS8)                                                     \
  namespace NS {                                                                                 \
  TARGET void ordered_abs_sums8(const double* x, std::int64_t ld, std::int64_t n, double* s) {   \
    SUMS8(x, ld, n, s);                                                                          \
  }                                                                                              \
  TARGET void ordered_abs_sums1(const double* x, std::int64_t ld, std::int64_t n, double* s) {   \
    ordered_abs_sums_body<1>(x, ld, n, s);                                                       \
  }                                                                                              \
  TARGET double max_abs(const double* x, std::int64_t n) { return max_abs_body(x, n); }          \
  TARGET void max_abs_into(const double* x, double* m, std::int64_t n) {                         \
    max_abs_into_body(x, m, n);                                                                  \
  }                                                                                              \
  TARGET LineSums split_line(const SplitConstants& k, const LineJob& job, std::int64_t n) {      \
    return split_line_body(k, job, n);                                                           \
  }                                                                                              \
  TARGET bool add_scaled64(double* S, const double* P, double sc, bool first, double f,          \
                           const double* c, std::int64_t n) {                                    \
    return add_scaled_body(S, P, sc, first, f, c, n);                                            \
  }                                                                                              \
  TARGET bool add_scaled32(double* S, const float* P, double sc, bool first, double f,           \
                           const double* c, std::int64_t n) {                                    \
    return add_scaled_body(S, P, sc, first, f, c, n);                                            \
  }                                                                                              \
  constexpr LineKernels kernels{ordered_abs_sums8, ordered_abs_sums1, max_abs,     max_abs_into, \
                                split_line,        add_scaled64,      add_scaled32};             \
  }

EBLA_LINE_KERNELS(line_baseline, , ordered_abs_sums_body<8>)
#if defined(__x86_64__) && defined(__GNUC__)
EBLA_LINE_KERNELS(line_avx2, __attribute__((target("avx2,bmi,bmi2,fma"))), ordered_abs_sums_body<8>)
EBLA_LINE_KERNELS(line_avx512, __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma"))),
                  ordered_abs_sums8_avx512)
#else
namespace line_avx2 { constexpr LineKernels kernels = line_baseline::kernels; }
namespace line_avx512 { constexpr LineKernels kernels = line_baseline::kernels; }
#endif

std::atomic<int> line_isa{-1};  // -1: not chosen yet

}  // namespace

/// The kernels of detail::gemm_host_isa().
const LineKernels& line() {
  switch (detail::gemm_host_isa()) {
    case detail::HostIsa::avx512: return line_avx512::kernels;
    case detail::HostIsa::avx2: return line_avx2::kernels;
    case detail::HostIsa::baseline: break;
  }
  return line_baseline::kernels;
}

}  // namespace gemm_detail

namespace detail {

HostIsa gemm_host_isa() {
  const int isa = gemm_detail::line_isa.load();
  return isa < 0 ? best_host_isa() : static_cast<HostIsa>(isa);
}

void set_gemm_host_isa(HostIsa isa) {
  const std::vector<HostIsa> ok = supported_host_isas();
  if (std::find(ok.begin(), ok.end(), isa) == ok.end())
    throw_invalid("ebla::detail::set_gemm_host_isa",
                  std::string("this CPU does not run ") + to_string(isa));
  gemm_detail::line_isa.store(static_cast<int>(isa));
}

}  // namespace detail

}  // namespace ebla
