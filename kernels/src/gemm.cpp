// Model 1 mixed-precision GEMM: scaling, words, products on an engine, certified bounds,
// and the tolerance-driven choice. The contract and the bound are in gemm.hpp; the
// derivations are in docs/gemm.md.
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/parallel.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace ebla {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double binary64_u = 0x1p-53;
constexpr double tiny = 0x1p-1074;  // binary64's smallest subnormal

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// x enlarged to cover the rounding of a binary64 sum of `terms` nonnegative roundings.
double inflate(double x, double terms) {
  if (!(x < inf)) return inf;  // NaN (inf * 0 in an absolute product) counts as unbounded
  return x * (1 + 2 * (terms + 4) * binary64_u) + (terms + 1) * tiny;
}

/// (1 + delta)^d - 1, rounded up (a margin of a few ulps covers exp and log).
double growth_minus_one(double delta, double d) {
  if (delta == 0 || d == 0) return 0;
  const double g = std::expm1(d * std::log1p(delta));
  return g * (1 + 0x1p-48) + tiny;
}

bool contains_format(const Format& outer, const Format& inner) {
  return inner.t <= outer.t && inner.emin >= outer.emin && inner.emax <= outer.emax &&
         (outer.subnormals || !inner.subnormals ||
          inner.emin - inner.t + 1 >= outer.emin);  // inner subnormals normal in outer
}

int pairs_of(int p) { return p * (p + 1) / 2; }

/// Asks the kernel to back a large, untouched allocation with huge pages: the first touch of
/// fresh memory costs one page fault per 4 KiB otherwise, which dominates the O(n^2) passes
/// of a large product. Advice only: nothing changes where it is not taken.
void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{1} << 21;
  if (bytes < 8 * huge) return;
  const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

/// Scratch matrices of 1 MiB or more are kept after use and handed out again: a fresh
/// allocation costs a page fault and a cleared page per page, which otherwise dominates the
/// O(n^2) passes of a large product. A kept matrix is reused only when nothing else holds it
/// (use_count 1); at most 64 are kept, and all are released at Kokkos::finalize.
struct ScratchPool {
  std::mutex mutex;
  std::vector<HostMatrix> kept;
};

ScratchPool& scratch_pool() {
  static ScratchPool* pool = [] {
    auto* p = new ScratchPool;  // lives as long as the process; its views go at finalize
    Kokkos::push_finalize_hook([p] {
      const std::lock_guard<std::mutex> lock(p->mutex);
      p->kept.clear();
    });
    return p;
  }();
  return *pool;
}

/// A matrix whose every entry is written before it is read.
HostMatrix uninitialised(const char* label, std::int64_t rows, std::int64_t cols) {
  const bool large = static_cast<double>(rows) * static_cast<double>(cols) * sizeof(double) >= (1 << 20);
  ScratchPool& pool = scratch_pool();
  if (large) {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    for (const HostMatrix& M : pool.kept)
      if (M.use_count() == 1 && static_cast<std::int64_t>(M.extent(0)) == rows &&
          static_cast<std::int64_t>(M.extent(1)) == cols)
        return M;
  }
  HostMatrix M(Kokkos::view_alloc(std::string(label), Kokkos::WithoutInitializing), rows, cols);
  advise_huge_pages(M.data(), M.size() * sizeof(double));
  if (large) {
    const std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.kept.size() >= 64) {  // forget the oldest one that is free
      const auto free = std::find_if(pool.kept.begin(), pool.kept.end(),
                                     [](const HostMatrix& K) { return K.use_count() == 1; });
      if (free != pool.kept.end()) pool.kept.erase(free);
    }
    if (pool.kept.size() < 64) pool.kept.push_back(M);
  }
  return M;
}

/// n values of T in a scratch matrix (the words as an engine stores them, its binary32 results).
template <class T>
struct ScratchVector {
  HostMatrix owner;
  std::size_t n = 0;
  T* data() const { return reinterpret_cast<T*>(owner.data()); }
  T& operator()(std::size_t i) const { return data()[i]; }
  std::size_t size() const { return n; }
};

template <class T>
ScratchVector<T> uninitialised_vector(const char* label, std::size_t n) {
  const auto doubles = static_cast<std::int64_t>((n * sizeof(T) + sizeof(double) - 1) / sizeof(double));
  return ScratchVector<T>{uninitialised(label, 1, doubles), n};
}

/// x 2^-e: one multiplication when 2^-e is a normal binary64 number, else ldexp; either way
/// exact unless the result is subnormal (then one rounding).
double unscale(double x, int e) {
  return e >= -1022 && e <= 1022 ? x * pow2(-e) : std::ldexp(x, -e);
}

// ---- the config as it runs ------------------------------------------------------------------

/// The config with its formats settled: the words' subnormals, the unit's input format.
GemmConfig settled(const GemmConfig& c) {
  GemmConfig s = c;
  if (s.engine == GemmEngine::dgemm) {
    s.input = formats::binary64();
    s.scaling = false;
    return s;
  }
  if (!s.subnormals) s.input.subnormals = false;
  if (s.engine == GemmEngine::emulated) {
    if (!s.subnormals) {
      s.unit.input_subnormals = false;
      s.unit.output_subnormals = false;
    }
    if (!s.unit.input_subnormals) s.input.subnormals = false;  // DAZ would flush subnormal words
    s.unit.input = s.input;
  }
  // VDPBF16PS reads bfloat16 subnormals as zero: such words are not made at all
  if (s.engine == GemmEngine::onednn_bf16 && s.input.subnormals &&
      s.input.emin - s.input.t + 1 < formats::bfloat16().emin)
    s.input.subnormals = false;
  return s;
}

Format accumulation_format(const GemmConfig& s) {
  switch (s.engine) {
    case GemmEngine::emulated: return s.unit.accumulation;
    case GemmEngine::dgemm: return formats::binary64();
    default: return formats::binary32();
  }
}

}  // namespace

const char* to_string(GemmEngine e) {
  switch (e) {
    case GemmEngine::emulated: return "emulated";
    case GemmEngine::sgemm: return "sgemm";
    case GemmEngine::onednn_bf16: return "onednn_bf16";
    case GemmEngine::dgemm: return "dgemm";
  }
  return "?";
}

GemmEngine gemm_engine_by_name(const std::string& name) {
  if (name == "emulated") return GemmEngine::emulated;
  if (name == "sgemm") return GemmEngine::sgemm;
  if (name == "onednn_bf16" || name == "onednn") return GemmEngine::onednn_bf16;
  if (name == "dgemm") return GemmEngine::dgemm;
  throw_invalid("ebla::gemm_engine_by_name",
                "unknown engine '" + name + "' (emulated, sgemm, onednn_bf16, dgemm)");
}

Format unbounded_range(const Format& f) {
  Format w = f;
  w.emin = -1022;
  w.emax = 1023;
  return w;
}

void validate(const GemmConfig& config, const char* function) {
  if (config.words < 1 || config.words > 3)
    throw_invalid(function, "words = " + std::to_string(config.words) + " is outside 1..3");
  if (!(config.failure > 0 && config.failure < 1))
    throw_invalid(function, "failure = " + std::to_string(config.failure) + " is outside (0, 1)");
  validate(config.input, function);
  const GemmConfig s = settled(config);
  switch (s.engine) {
    case GemmEngine::emulated:
      validate(s.unit, function);  // also: the accumulation format contains the input format
      break;
    case GemmEngine::sgemm:
      if (!contains_format(formats::binary32(), s.input))
        throw_invalid(function, "engine sgemm needs an input format inside binary32, not " +
                                    format_name(config.input));
      break;
    case GemmEngine::onednn_bf16:
      if (!contains_format(formats::bfloat16(), s.input))
        throw_invalid(function, "engine onednn_bf16 needs an input format inside bfloat16, not " +
                                    format_name(config.input));
      if (!host::gemm_engines().onednn_bf16)
        throw_invalid(function, "engine onednn_bf16: oneDNN does not run bfloat16 on this CPU");
      break;
    case GemmEngine::dgemm:
      if (config.words != 1)
        throw_invalid(function, "engine dgemm computes with one word, not words = " +
                                    std::to_string(config.words));
      break;
  }
}

std::string describe(const GemmConfig& config) {
  std::ostringstream s;
  if (config.engine == GemmEngine::dgemm) return "binary64 on dgemm";
  s << format_name(config.input) << " x" << config.words << " on " << to_string(config.engine);
  if (config.engine == GemmEngine::emulated) {
    // the preset the unit is, its input format aside (gemm replaces it); among presets that
    // differ only in their input format, the first with the config's
    auto same = [](const Format& x, const Format& y) {
      return x.t == y.t && x.emin == y.emin && x.emax == y.emax && x.subnormals == y.subnormals &&
             x.specials == y.specials && x.overflow == y.overflow;
    };
    std::string unit = "custom unit";
    bool input_matches = false;
    for (const auto& entry : matrix_unit_catalogue()) {
      MatrixUnit a = entry.unit, b = config.unit;
      a.input = b.input = Format{};
      if (to_string(a) != to_string(b)) continue;
      const bool matches = same(entry.unit.input, config.input);
      if (unit == "custom unit" || (matches && !input_matches)) {
        unit = entry.name;
        input_matches = matches;
      }
    }
    s << "(" << unit << ")";
  }
  if (!config.scaling) s << ", unscaled";
  if (!config.subnormals) s << ", no subnormals";
  return s.str();
}

// ---- the accumulation model -----------------------------------------------------------------

AccumulationModel accumulation_model(const GemmConfig& config, std::int64_t k) {
  const GemmConfig s = settled(config);
  const Format acc = accumulation_format(s);
  AccumulationModel m;
  m.T = acc.t;
  m.Fmax = acc.fmax();
  const double U = acc.u();
  const double K = static_cast<double>(k);
  if (s.engine != GemmEngine::emulated) {
    // any order: k products, at most k roundings from a product to the result (a product
    // rounding plus k - 1 additions, or k FMAs), at most 2k - 1 roundings in all
    m.delta = U;
    m.depth = K;
    m.steps = std::max(2 * K - 1, 0.0);
    // sgemm / onednn: flush to zero allowed (fmin); dgemm: gradual underflow (u fmin)
    m.G = s.engine == GemmEngine::dgemm ? U * acc.fmin() : acc.fmin();
    return m;
  }
  const MatrixUnit& u = s.unit;
  const bool nearest = u.rounding == Rounding::nearest_even;
  const double Ur = nearest ? U : 2 * U;  // one rounding of a sum: u, or 2u toward zero
  const bool after = u.addend == AddendJoin::after_products;
  const double b = u.block, h = u.chains;
  const double q = std::ceil(K / b);  // unit operations per entry (seed 000 Algorithm 1)
  // operands of one multi-operand addition, and what alignment truncation loses of their sum
  // (b + 1 also covers the two-term addition of c after the products)
  const double operands = u.normalisation == Normalisation::at_end ? b + 1 : 2;
  const double truncation =
      u.extra_bits == MatrixUnit::unbounded ? 0 : operands * std::ldexp(1.0, 1 - acc.t - u.extra_bits);
  // Seed 000's (7) gives every addition of a block its own (1 + delta) with delta <= U; a
  // unit that normalises at the end rounds once per block but truncates its operands first,
  // and a V100-like unit rounds toward zero: delta must cover both (docs/gemm.md).
  m.delta = Ur + truncation * (1 + Ur);
  // longest path from a product to the result, and the steps, per unit operation
  double depth_op = 1, steps_op = 1;
  if (u.normalisation == Normalisation::each_addition) {
    depth_op = std::ceil(b / h) + (h - 1);  // its chain, then the chains added in order
    steps_op = b + (h - 1);
  }
  if (after) {  // d = c + (sum of the products): one more addition
    depth_op += 1;
    steps_op += 1;
  }
  m.depth = q * depth_op;
  m.steps = q * steps_op;
  m.G = u.output_subnormals ? Ur * acc.fmin() : acc.fmin();  // FTZ: anything below fmin
  if (!u.exact_products) {  // one more rounding (nearest, gradual underflow) per product
    m.delta = std::max(m.delta, u.product.u());
    m.depth += 1;
    m.steps += q * b;
    m.G = std::max(m.G, u.product.u() * u.product.fmin());
    m.Fmax = std::min(m.Fmax, u.product.fmax());  // a product beyond it would saturate or overflow
  }
  m.unbiased = nearest && truncation == 0;
  if (k == 0) m.depth = m.steps = 0;
  return m;
}

namespace {
// ---- the host passes: chunks of rows on every thread ----------------------------------------
//
// Every O(m k + k n + m n) pass runs on the threads of the default host execution space
// (detail::for_each_chunk). A matrix's rows are cut into chunks whose size depends on its
// shape only; a sum along a row is one thread's, in one order; whatever is summed over rows
// (B's column norms) is summed per chunk and the chunks' sums added in chunk order. So every
// result, C and every bound, is the same bits on any number of threads.

constexpr std::int64_t group = 8;  // rows whose in-order sums run side by side

/// Rows per chunk of a matrix with `cols` columns: about 2^16 entries, a multiple of `group`.
std::int64_t rows_per_chunk(std::int64_t cols) {
  return group * std::max<std::int64_t>(1, (std::int64_t{1} << 13) / std::max<std::int64_t>(cols, 1));
}

/// `rows` rows cut into chunks of rows_per_chunk(cols).
struct RowChunks {
  std::int64_t rows, size;
  RowChunks(std::int64_t rows_, std::int64_t cols) : rows(rows_), size(rows_per_chunk(cols)) {}
  std::size_t count() const {
    return detail::chunk_count(static_cast<std::size_t>(rows), static_cast<std::size_t>(size));
  }
  std::int64_t begin(std::size_t c) const { return static_cast<std::int64_t>(c) * size; }
  std::int64_t end(std::size_t c) const { return std::min(rows, begin(c) + size); }
};

/// f(i) for every row i < rows of a matrix with `cols` columns, by chunks on every thread.
template <class F>
void for_each_row(std::int64_t rows, std::int64_t cols, const F& f) {
  const RowChunks chunks(rows, cols);
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    for (std::int64_t i = chunks.begin(c); i < chunks.end(c); ++i) f(i);
  });
}

/// Row i of a row-major matrix.
template <class View>
auto row_of(const View& X, std::int64_t i) {
  return X.data() + i * static_cast<std::int64_t>(X.stride_0());
}

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

/// The constants of the split (4.5)-(4.6) of one matrix into p words.
struct SplitConstants {
  int p = 1;
  bool identity = false;  ///< binary64 words of an unscaled matrix: X^(0) = X, the rest 0, rho = 0
  RoundingConstants rc{};
  double up[3] = {}, down[3] = {};  ///< u^-w and u^w
  double margin[3] = {};            ///< the underflow margin of |rho| after w + 1 words
  // nearest_word: the format's exponents (see there), when `fast`
  bool fast = false;
  std::int64_t t = 0, e_low = 0, e_high = 0;
};

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
      const double v = Fast ? nearest_word(y, kc) : round_to<Rounding::nearest_even>(y, c);  // (4.5)
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

/// One line of a split (a row of A or of B) and what the pass over it writes (null: not wanted).
struct LineJob {
  const double* x = nullptr;
  const double* col_scale = nullptr;  ///< mu_j per entry (B), or null: `scale` for all (A)
  double scale = 1;
  double* word[3] = {};                  ///< the words in binary64
  double* rho = nullptr;                 ///< |rho|
  float* f32[3] = {};                    ///< the words as binary32
  std::uint16_t* bf16[3] = {};           ///< the words as bfloat16
  const double* rho_weight = nullptr;    ///< LineSums::rho = sum_j |rho_j| rho_weight_j (not identity)
  const double* weight[2][3] = {};       ///< LineSums::weighted[s][w] = sum_j |X^(w)_j| weight[s][w]_j
  double* col_one[3] = {};  ///< B: |X^(w)_j| added to col_one[w]_j, max into col_max_j (weight[1]
  double* col_max = nullptr;  ///< unused); null: A, summed over the line into LineSums::one and max
};

/// The sums of one line's pass.
struct LineSums {
  double rho = 0;
  double weighted[2][3] = {};
  double one[3] = {};  ///< sum_j |X^(w)_j|
  double max = 0;      ///< max_(w, j) |X^(w)_j|
};

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

/// The line kernels of one instruction set.
struct LineKernels {
  void (*ordered_abs_sums8)(const double*, std::int64_t, std::int64_t, double*);
  void (*ordered_abs_sums1)(const double*, std::int64_t, std::int64_t, double*);
  double (*max_abs)(const double*, std::int64_t);
  void (*max_abs_into)(const double*, double*, std::int64_t);
  LineSums (*split_line)(const SplitConstants&, const LineJob&, std::int64_t);
  bool (*add_scaled64)(double*, const double*, double, bool, double, const double*, std::int64_t);
  bool (*add_scaled32)(double*, const float*, double, bool, double, const double*, std::int64_t);
};

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

/// The kernels of detail::gemm_host_isa().
const LineKernels& line() {
  switch (detail::gemm_host_isa()) {
    case detail::HostIsa::avx512: return line_avx512::kernels;
    case detail::HostIsa::avx2: return line_avx2::kernels;
    case detail::HostIsa::baseline: break;
  }
  return line_baseline::kernels;
}

/// f(i, s_i) for the rows i of X in [begin, end), in order, with s_i = ||row i||_1 added in
/// order (the sums of `group` rows side by side).
template <class F>
void rows_with_sums(const ConstHostMatrix& X, std::int64_t begin, std::int64_t end, const F& f) {
  const std::int64_t cols = X.extent(1), ld = X.stride_0();
  double sums[group];
  for (std::int64_t g = begin; g < end; g += group) {
    const std::int64_t count = std::min(group, end - g);
    if (count == group)
      line().ordered_abs_sums8(row_of(X, g), ld, cols, sums);
    else
      for (std::int64_t r = 0; r < count; ++r) line().ordered_abs_sums1(row_of(X, g + r), ld, cols, sums + r);
    for (std::int64_t r = 0; r < count; ++r) f(g + r, sums[r]);
  }
}

// ---- scaling and words ----------------------------------------------------------------------

/// Per row of A (or column of B): max over words of the 1-norm and of the largest magnitude.
struct LineNorms {
  std::vector<double> one, max;
};

using FloatVector = ScratchVector<float>;
using Bf16Vector = ScratchVector<std::uint16_t>;

/// A or B as words: X = Scale^-1 (sum_w u^w words[w] + rho), Scale = diag(2^exps).
struct Words {
  std::vector<ConstHostMatrix> w;  ///< words[w] in binary64 (kept when asked: Keep)
  ConstHostMatrix rho;             ///< |residual|, enlarged to cover binary64 underflow (likewise)
  std::vector<FloatVector> f32;    ///< the words as the engine reads them (likewise)
  std::vector<Bf16Vector> bf16;
  std::vector<int> exps;   ///< scaling exponents, per row of A or per column of B
  LineNorms norms;         ///< of the words, per row of A or column of B
  double inf_norm = 0;     ///< ||X||_inf of the matrix as given
};

/// What a split keeps besides the norms and the normwise bound.
struct Keep {
  bool words = false;   ///< the words in binary64 (the emulated and dgemm engines, entrywise bounds)
  bool rho = false;     ///< the residuals (entrywise bounds)
  bool engine = false;  ///< the words as binary32 (sgemm) or bfloat16 (onednn_bf16)
};

/// theta of (3.2).
double theta_of(const GemmConfig& s, std::int64_t k) {
  const double fmax = s.input.fmax();
  const double Fmax = accumulation_format(s).fmax();
  return std::min(fmax, std::sqrt(Fmax / static_cast<double>(std::max<std::int64_t>(k, 1))));
}

/// The largest e with 2^e max <= theta (max > 0 and finite), kept inside binary64's range.
int scale_exponent(double max, double theta) {
  if (max == 0 || !std::isfinite(max)) return 0;  // not finite: reported, never used
  int e = std::ilogb(theta) - std::ilogb(max);
  while (std::ldexp(max, e) > theta) --e;
  while (std::ldexp(max, e + 1) <= theta) ++e;
  return std::clamp(e, -1000, 1000);
}

/// The first entry of a matrix that is not finite (row -1: none).
struct BadEntry {
  std::int64_t i = -1, j = -1;
  double value = 0;
};

/// Records in `bad` the first entry of row i that is not finite, unless a row before it has one;
/// `sum` is the row's 1-norm (finite: no entry to look for).
void check_row(const ConstHostMatrix& X, std::int64_t i, double sum, BadEntry& bad) {
  if (sum <= std::numeric_limits<double>::max() || bad.i >= 0) return;  // inf, NaN or overflow
  const double* x = row_of(X, i);
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(X.extent(1)); ++j)
    if (!std::isfinite(x[j])) {
      bad = BadEntry{i, j, x[j]};
      return;
    }
}

/// The first of the chunks' first bad entries.
BadEntry first_bad(const std::vector<BadEntry>& chunks) {
  for (const BadEntry& b : chunks)
    if (b.i >= 0) return b;
  return {};
}

[[noreturn]] void throw_not_finite(const BadEntry& b, const char* name, const char* function) {
  std::ostringstream msg;
  msg << name << "(" << b.i << ", " << b.j << ") = " << b.value << " is not finite";
  throw_invalid(function, msg.str());
}

/// The split's constants for a settled config.
SplitConstants split_constants(const GemmConfig& s) {
  SplitConstants k;
  k.p = s.words;
  k.identity = s.input.t == 53 && s.input.emin == -1022 && s.input.subnormals && !s.scaling;
  k.rc = rounding_constants(s.input);
  for (int w = 0; w < s.words; ++w) {
    k.up[w] = pow2(w * s.input.t);
    k.down[w] = pow2(-w * s.input.t);
    // |rho| after w + 1 words, and the subnormal roundings of the scalings (half an ulp of
    // 2^-1074 each)
    k.margin[w] = (w + 3) * tiny;
  }
  const Format& f = s.input;
  k.fast = f.t <= 52 && f.emax + 54 - f.t <= 1023;
  k.t = f.t;
  k.e_low = f.subnormals ? f.emin : f.emin + f.t - 1;
  k.e_high = f.emax + 1;
  return k;
}

/// The matrices and vectors a split writes into, as `keep` asks; the binary64 words of an
/// identity split are X itself (copied only if not contiguous) and zeros.
void allocate_words(const ConstHostMatrix& X, const GemmConfig& s, const SplitConstants& k,
                    const Keep& keep, Words& out) {
  const std::int64_t rows = X.extent(0), cols = X.extent(1);
  const std::size_t size = static_cast<std::size_t>(rows * cols);
  for (int w = 0; keep.words && w < s.words; ++w) {
    if (k.identity && w == 0 && X.span_is_contiguous()) {
      out.w.push_back(X);
      continue;
    }
    HostMatrix W = uninitialised("word", rows, cols);
    if (k.identity && w == 0) Kokkos::deep_copy(W, X);
    else if (k.identity) Kokkos::deep_copy(W, 0.0);
    out.w.push_back(W);
  }
  if (keep.rho) {
    HostMatrix rho = uninitialised("rho", rows, cols);
    if (k.identity) Kokkos::deep_copy(rho, 0.0);
    out.rho = rho;
  }
  for (int w = 0; keep.engine && w < s.words; ++w) {
    if (s.engine == GemmEngine::sgemm) out.f32.push_back(uninitialised_vector<float>("words_f32", size));
    if (s.engine == GemmEngine::onednn_bf16)
      out.bf16.push_back(uninitialised_vector<std::uint16_t>("words_bf16", size));
  }
}

/// A job for row i of X with the stored words of `out` (those the split writes itself).
LineJob stored_line(const ConstHostMatrix& X, std::int64_t i, const SplitConstants& k, const Words& out) {
  LineJob job;
  job.x = row_of(X, i);
  const std::int64_t at = i * static_cast<std::int64_t>(X.extent(1));
  if (k.identity) return job;
  for (std::size_t w = 0; w < out.w.size(); ++w) job.word[w] = const_cast<double*>(row_of(out.w[w], i));
  if (out.rho.size() > 0) job.rho = const_cast<double*>(row_of(out.rho, i));
  for (std::size_t w = 0; w < out.f32.size(); ++w) job.f32[w] = out.f32[w].data() + at;
  for (std::size_t w = 0; w < out.bf16.size(); ++w) job.bf16[w] = out.bf16[w].data() + at;
  return job;
}

/// B's column scaling: the exponents mu_j = 2^e_j from the largest entry of each column (per
/// chunk of rows, then over the chunks), with ||B||_inf and the check of B's entries, which
/// this first pass makes too.
void scale_columns(const ConstHostMatrix& B, double theta, Words& out, BadEntry& bad) {
  const std::int64_t k = B.extent(0), n = B.extent(1);
  const RowChunks chunks(k, n);
  HostMatrix col_max = uninitialised("column_max", static_cast<std::int64_t>(chunks.count()), n);
  std::vector<double> sums(static_cast<std::size_t>(k));
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    double* m = row_of(col_max, static_cast<std::int64_t>(c));
    std::fill(m, m + n, 0.0);
    rows_with_sums(B, chunks.begin(c), chunks.end(c), [&](std::int64_t l, double sum) {
      sums[static_cast<std::size_t>(l)] = sum;
      check_row(B, l, sum, bads[c]);
      line().max_abs_into(row_of(B, l), m, n);
    });
  });
  bad = first_bad(bads);
  for (double s : sums) out.inf_norm = std::max(out.inf_norm, s);
  for_each_row(n, static_cast<std::int64_t>(chunks.count()), [&](std::int64_t j) {
    double top = 0;
    for (std::size_t c = 0; c < chunks.count(); ++c) top = std::max(top, col_max(static_cast<std::int64_t>(c), j));
    out.exps[static_cast<std::size_t>(j)] = scale_exponent(top, theta);
  });
}

/// B's side of the normwise bound, made while B is split: per row l of B, the sums over j with
/// the weights mu_j^-1 of |rho_y| and of every word |Y^(w)| (docs/gemm.md: the bound's row sums
/// are matrix-vector products), and sum_j mu_j^-1.
struct ColumnSums {
  std::vector<double> rho;                 ///< sum_j mu_j^-1 |rho_y,lj|
  std::vector<std::vector<double>> words;  ///< [w][l]: sum_j mu_j^-1 |Y^(w)_lj|
  double mu_sum = 0;                       ///< sum_j mu_j^-1
};

/// Splits B (k x n) by rows with the column scaling: the words as `keep` asks, the norms of
/// every column (summed per chunk of rows, the chunks in order) and B's side of the normwise
/// bound; `bad` is the first entry that is not finite.
ColumnSums split_columns(const ConstHostMatrix& B, const GemmConfig& s, double theta, const Keep& keep,
                         Words& out, BadEntry& bad) {
  const std::int64_t k = B.extent(0), n = B.extent(1);
  const int p = s.words;
  const SplitConstants sc = split_constants(s);
  const int computed = sc.identity ? 1 : p;  // words with anything nonzero
  out.exps.assign(static_cast<std::size_t>(n), 0);
  if (s.scaling) scale_columns(B, theta, out, bad);
  std::vector<double> scale(static_cast<std::size_t>(n)), mu_inv(scale.size());  // 2^e, |e| <= 1000
  for (std::size_t j = 0; j < scale.size(); ++j) {
    scale[j] = pow2(out.exps[j]);
    mu_inv[j] = pow2(-out.exps[j]);
  }
  allocate_words(B, s, sc, keep, out);
  ColumnSums sums;
  sums.rho.assign(static_cast<std::size_t>(k), 0.0);
  sums.words.assign(static_cast<std::size_t>(p), std::vector<double>(static_cast<std::size_t>(k), 0.0));
  for (double v : mu_inv) sums.mu_sum += v;
  // per chunk of rows: the sums of |Y^(w)| per column (p rows of n), then their maxima
  const RowChunks chunks(k, n);
  HostMatrix partial = uninitialised("column_norms", static_cast<std::int64_t>(chunks.count()), (computed + 1) * n);
  std::vector<double> row_sums(s.scaling ? 0 : static_cast<std::size_t>(k));
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    double* part = row_of(partial, static_cast<std::int64_t>(c));
    std::fill(part, part + (computed + 1) * n, 0.0);
    auto split = [&](std::int64_t l) {
      LineJob job = stored_line(B, l, sc, out);
      job.col_scale = scale.data();
      job.rho_weight = sc.identity ? nullptr : mu_inv.data();
      for (int w = 0; w < computed; ++w) {
        job.weight[0][w] = mu_inv.data();
        job.col_one[w] = part + w * n;
      }
      job.col_max = part + computed * n;
      const LineSums ls = line().split_line(sc, job, n);
      sums.rho[static_cast<std::size_t>(l)] = ls.rho;
      for (int w = 0; w < computed; ++w) sums.words[static_cast<std::size_t>(w)][static_cast<std::size_t>(l)] = ls.weighted[0][w];
    };
    if (s.scaling) {  // checked and summed by scale_columns
      for (std::int64_t l = chunks.begin(c); l < chunks.end(c); ++l) split(l);
      return;
    }
    rows_with_sums(B, chunks.begin(c), chunks.end(c), [&](std::int64_t l, double sum) {
      row_sums[static_cast<std::size_t>(l)] = sum;
      check_row(B, l, sum, bads[c]);
      split(l);
    });
  });
  if (!s.scaling) {
    bad = first_bad(bads);
    for (double v : row_sums) out.inf_norm = std::max(out.inf_norm, v);
  }
  // the column norms: the chunks' sums added in chunk order
  const double terms = 2.0 * static_cast<double>(k + n);
  out.norms = LineNorms{std::vector<double>(static_cast<std::size_t>(n), 0.0), std::vector<double>(static_cast<std::size_t>(n), 0.0)};
  for_each_row(n, static_cast<std::int64_t>(chunks.count()) * (computed + 1), [&](std::int64_t j) {
    const auto J = static_cast<std::size_t>(j);
    for (int w = 0; w < computed; ++w) {
      double one = 0;
      for (std::size_t c = 0; c < chunks.count(); ++c) one += partial(static_cast<std::int64_t>(c), w * n + j);
      out.norms.one[J] = std::max(out.norms.one[J], inflate(one, terms));
    }
    for (std::size_t c = 0; c < chunks.count(); ++c)
      out.norms.max[J] = std::max(out.norms.max[J], partial(static_cast<std::int64_t>(c), computed * n + j));
  });
  return sums;
}

/// The weights of A's residual and words in the normwise bound, from B's side (gemm.hpp):
/// rows of Ytil mu^-1 for |rho_x|; per word v of A, the weights of |X^(v)| in R (|rho_y| and
/// the neglected pairs) and in W (the computed pairs).
struct RowWeights {
  std::vector<double> rho;
  std::vector<std::vector<double>> R, W;
};

RowWeights row_weights(const ColumnSums& b, int p, int t) {
  RowWeights out;
  out.rho = b.rho;
  for (int w = 0; w < p; ++w)
    for (std::size_t l = 0; l < out.rho.size(); ++l) out.rho[l] += b.words[static_cast<std::size_t>(w)][l] * pow2(-w * t);
  out.R.assign(static_cast<std::size_t>(p), b.rho);
  out.W.assign(static_cast<std::size_t>(p), std::vector<double>(b.rho.size(), 0.0));
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w) {
      std::vector<double>& c = v + w < p ? out.W[static_cast<std::size_t>(v)] : out.R[static_cast<std::size_t>(v)];
      for (std::size_t l = 0; l < c.size(); ++l) c[l] += b.words[static_cast<std::size_t>(w)][l] * pow2(-w * t);
    }
  return out;
}

/// The constants of a row's sum of entrywise bounds (gemm.hpp): lambda_i^-1 [R_i + acc W_i +
/// under], R_i and W_i summed over j with the weights mu_j^-1, each enlarged for its rounding.
struct RowBound {
  double terms = 0;  ///< terms of the sums R_i and W_i
  double acc = 0;    ///< g + c (1 + g)
  double under = 0;  ///< the underflow terms, summed over j with mu_j^-1
  double operator()(double R, double W, int e) const {
    const double row = inflate(R, terms) + acc * inflate(W, terms) + under;
    return inflate(std::ldexp(row, -e), 4);
  }
};

/// Splits A (m x k) by rows, one pass per row: the check of its entries, ||A||_inf, the row's
/// scaling exponent, its words (as `keep` asks) and norms, and its sum of the entrywise bounds
/// (`bound`, with B's side in `weights`) into row_bound; `bad` is the first entry that is not
/// finite.
void split_rows(const ConstHostMatrix& A, const GemmConfig& s, double theta, const Keep& keep,
                const RowWeights& weights, const RowBound& bound, Words& out,
                std::vector<double>& row_bound, BadEntry& bad) {
  const std::int64_t m = A.extent(0), k = A.extent(1);
  const int p = s.words, t = s.input.t;
  const SplitConstants sc = split_constants(s);
  const int computed = sc.identity ? 1 : p;
  const double terms = 2.0 * static_cast<double>(m + k);
  out.exps.assign(static_cast<std::size_t>(m), 0);
  out.norms = LineNorms{std::vector<double>(static_cast<std::size_t>(m), 0.0), std::vector<double>(static_cast<std::size_t>(m), 0.0)};
  row_bound.assign(static_cast<std::size_t>(m), 0.0);
  allocate_words(A, s, sc, keep, out);
  std::vector<double> row_sums(static_cast<std::size_t>(m));
  const RowChunks chunks(m, k);
  std::vector<BadEntry> bads(chunks.count());
  detail::for_each_chunk(chunks.count(), [&](std::size_t c) {
    rows_with_sums(A, chunks.begin(c), chunks.end(c), [&](std::int64_t i, double sum) {
      const auto I = static_cast<std::size_t>(i);
      row_sums[I] = sum;
      check_row(A, i, sum, bads[c]);
      const int e = s.scaling ? scale_exponent(line().max_abs(row_of(A, i), k), theta) : 0;
      out.exps[I] = e;
      LineJob job = stored_line(A, i, sc, out);
      job.scale = pow2(e);
      // R: |rho_x| and the words against the weights from B (an identity split has no R)
      job.rho_weight = sc.identity ? nullptr : weights.rho.data();
      for (int v = 0; v < computed; ++v) {
        job.weight[0][v] = sc.identity ? nullptr : weights.R[static_cast<std::size_t>(v)].data();
        job.weight[1][v] = weights.W[static_cast<std::size_t>(v)].data();
      }
      const LineSums ls = line().split_line(sc, job, k);
      double R = ls.rho, W = 0;
      for (int v = 0; v < computed; ++v) {
        out.norms.one[I] = std::max(out.norms.one[I], inflate(ls.one[v], terms));
        R += ls.weighted[0][v] * pow2(-v * t);
        W += ls.weighted[1][v] * pow2(-v * t);
      }
      out.norms.max[I] = ls.max;
      row_bound[I] = bound(R, W, e);
    });
  });
  bad = first_bad(bads);
  for (double v : row_sums) out.inf_norm = std::max(out.inf_norm, v);
}

// ---- the bounds -----------------------------------------------------------------------------

/// Everything the bounds need that does not depend on the computed product.
struct Prepared {
  GemmConfig s;
  std::int64_t m = 0, k = 0, n = 0;
  double theta = 0;
  Words a, b;
  std::vector<double> row_bound;  ///< sum_j bound(i, j) per row, but for the overflow test
  AccumulationModel model;
  double g = 0;           ///< (1 + delta)^d - 1
  double g_prob = 0;      ///< gamma~ (or g when biased)
  double lambda = 0;
  double c = 0;           ///< gamma_(pairs-1)(2^-53): the binary64 sum of the products
  double norm_a = 0, norm_b = 0;
};

/// The constant terms of bound (gemm.hpp): (pairs) N G (1 + g)(1 + c).
double underflow_term(const Prepared& P, double g) {
  return pairs_of(P.s.words) * P.model.steps * P.model.G * (1 + g) * (1 + P.c);
}

/// The pairs (v, w) of words whose products are computed (v + w < p), or neglected.
std::vector<std::pair<int, int>> word_pairs(int p, bool computed) {
  std::vector<std::pair<int, int>> out;
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w)
      if ((v + w < p) == computed) out.emplace_back(v, w);
  return out;
}

/// Whether the accumulation of entry (i, j) may overflow (a priori; gemm.hpp).
struct OverflowCheck {
  const LineNorms &a, &b;
  double g, NG, Fmax;
  bool operator()(std::size_t i, std::size_t j) const {
    return !fits(std::min(a.one[i] * b.max[j], a.max[i] * b.one[j]));
  }
  /// false if no entry can overflow (the largest norms fit): the entrywise test is not needed
  bool anywhere() const {
    auto top = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
    return !fits(std::min(top(a.one) * top(b.max), top(a.max) * top(b.one)));
  }
  bool fits(double magnitude) const { return (1 + g) * (magnitude + NG) < Fmax; }
};

OverflowCheck overflow_check(const Prepared& P) {
  return OverflowCheck{P.a.norms, P.b.norms, P.g, P.model.steps * P.model.G, P.model.Fmax};
}

/// Splits A and B and sums the rows of the normwise bound (B first: A's rows need its side).
/// Throws as gemm.hpp says; a non-finite entry of A is named before one of B.
Prepared prepare(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config,
                 const char* function, const Keep& keep) {
  validate(config, function);
  if (A.extent(1) != B.extent(0))
    throw_invalid(function, "A is " + std::to_string(A.extent(0)) + " x " +
                                std::to_string(A.extent(1)) + " but B is " +
                                std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)));
  Prepared P;
  P.s = settled(config);
  P.m = A.extent(0);
  P.k = A.extent(1);
  P.n = B.extent(1);
  P.theta = theta_of(P.s, P.k);
  P.model = accumulation_model(P.s, P.k);
  P.g = growth_minus_one(P.model.delta, P.model.depth);
  P.g_prob = P.g;
  const int p = P.s.words;
  const double pairs = pairs_of(p);
  if (P.model.unbiased && P.model.depth > 0) {
    // every product carries at most d roundings to nearest: Higham & Mary Theorem 3.1 /
    // seed 000 Theorem 3.9, a union over the k products of each of the pairs
    const double f = P.s.failure / (static_cast<double>(P.k) * pairs);
    const double u = P.model.delta;
    P.lambda = std::min(bounds::hm_lambda(f, u), bounds::vibea_lambda(f, u, P.model.depth));
    P.g_prob = std::min(P.g, bounds::gamma_tilde(P.model.depth, u, P.lambda) * (1 + 0x1p-48));
  }
  P.c = pairs > 1 ? bounds::gamma(pairs - 1, binary64_u) : 0.0;
  BadEntry bad_a, bad_b;
  const ColumnSums columns = split_columns(B, P.s, P.theta, keep, P.b, bad_b);
  RowBound bound;
  bound.terms = static_cast<double>(P.n) + static_cast<double>(P.k) * (p * p + 4);
  bound.acc = P.g + P.c * (1 + P.g);
  bound.under = underflow_term(P, P.g) * inflate(columns.mu_sum, static_cast<double>(P.n));
  split_rows(A, P.s, P.theta, keep, row_weights(columns, p, P.s.input.t), bound, P.a, P.row_bound, bad_a);
  if (bad_a.i >= 0) throw_not_finite(bad_a, "A", function);
  if (bad_b.i >= 0) throw_not_finite(bad_b, "B", function);
  P.norm_a = P.a.inf_norm;
  P.norm_b = P.b.inf_norm;
  return P;
}

/// Whether any entry's accumulation may overflow (the entrywise test, by chunks of rows, only
/// when the largest norms do not already rule it out).
bool may_overflow(const Prepared& P) {
  const OverflowCheck overflow = overflow_check(P);
  if (!overflow.anywhere()) return false;
  std::vector<char> hit(static_cast<std::size_t>(P.m), 0);
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n && !hit[static_cast<std::size_t>(i)]; ++j)
      hit[static_cast<std::size_t>(i)] = overflow(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
  });
  return std::find(hit.begin(), hit.end(), 1) != hit.end();
}

/// The certified normwise bound: max_i sum_j bound(i, j), from the rows prepare() summed.
double normwise(const Prepared& P) {
  if (may_overflow(P)) return inf;
  double worst = 0;
  for (double row : P.row_bound) worst = std::max(worst, row);
  // the absolute margins of the entrywise bounds, n of them per row
  return inflate(worst + 16 * static_cast<double>(P.n) * tiny, 2);
}

// ---- the products ---------------------------------------------------------------------------

/// S = (first ? +0 : S) + u^(v+w) P_vw on every row, and on the last pass (`last`) the
/// unscaling of (4.7), C = Lambda^-1 S M^-1. Returns whether every entry is finite (last
/// pass only). P is m x n, binary64 or binary32.
template <class T>
bool add_product(const Prepared& P, const T* Pvw, double scale, bool first, bool last, HostMatrix& S) {
  const std::int64_t m = P.m, n = P.n;
  std::vector<double> col(static_cast<std::size_t>(n));  // 2^-e_j
  for (std::size_t j = 0; j < col.size(); ++j) col[j] = pow2(-P.b.exps[j]);
  const bool unscaling = last && P.s.scaling;
  // not a structured binding: the lambda below uses them (C++20, and clang only from 16)
  const auto range = std::minmax_element(P.b.exps.begin(), P.b.exps.end());
  const auto low = range.first, high = range.second;
  std::vector<char> finite(static_cast<std::size_t>(m), 1);
  for_each_row(m, n, [&](std::int64_t i) {
    double* s = row_of(S, i);
    const T* p = Pvw + i * n;
    const int e = P.a.exps[static_cast<std::size_t>(i)];
    // 2^-(e_i + e_j) normal for every j: one multiplication per entry; else ldexp
    const bool normal = unscaling && std::abs(e + *low) <= 1022 && std::abs(e + *high) <= 1022;
    bool ok;
    if constexpr (std::is_same<T, float>::value)
      ok = line().add_scaled32(s, p, scale, first, pow2(-e), normal ? col.data() : nullptr, n);
    else
      ok = line().add_scaled64(s, p, scale, first, pow2(-e), normal ? col.data() : nullptr, n);
    if (unscaling && !normal) {
      ok = true;
      for (std::int64_t j = 0; j < n; ++j) {
        s[j] = unscale(s[j], e + P.b.exps[static_cast<std::size_t>(j)]);
        ok = ok && std::isfinite(s[j]);
      }
    }
    finite[static_cast<std::size_t>(i)] = ok;
  });
  return std::find(finite.begin(), finite.end(), 0) == finite.end();
}

/// C = Lambda^-1 (sum_{v+w<p} u^(v+w) P_vw) M^-1 (4.7), the smallest level first, each P_vw
/// computed on the engine from zero; `finite` says whether every entry of C is.
HostMatrix product(const Prepared& P, bool& finite) {
  const GemmConfig& s = P.s;
  const std::int64_t m = P.m, k = P.k, n = P.n;
  HostMatrix S = uninitialised("C", m, n);
  finite = true;
  if (S.size() == 0) return S;
  if (s.engine == GemmEngine::dgemm) {  // A and B themselves, straight into C
    host::dgemm_by_rows(m, n, k, P.a.w[0].data(), P.b.w[0].data(), S.data());
    // finite inputs whose accumulation cannot overflow (the lemma's bound on the partial sums,
    // docs/gemm.md) give a finite C; where it might, the bound is +inf anyway
    finite = !may_overflow(P);
    return S;
  }
  const int pairs = pairs_of(s.words);
  int done = 0;
  for (int level = s.words - 1; level >= 0; --level)
    for (int v = 0; v <= level; ++v, ++done) {
      const int w = level - v;
      const double scale = pow2(-(v + w) * s.input.t);  // exact
      const bool first = done == 0, last = done == pairs - 1;
      const auto V = static_cast<std::size_t>(v), W = static_cast<std::size_t>(w);
      if (s.engine == GemmEngine::emulated) {
        HostMatrix Pvw("P", m, n);  // the unit adds to C: from zero
        unit_gemm(s.unit, P.a.w[V], P.b.w[W], Pvw);
        finite = add_product(P, Pvw.data(), scale, first, last, S);
        continue;
      }
      const FloatVector Pvw = uninitialised_vector<float>("P", static_cast<std::size_t>(m * n));
      if (s.engine == GemmEngine::sgemm)
        host::sgemm_by_rows(m, n, k, P.a.f32[V].data(), P.b.f32[W].data(), Pvw.data());
      else
        host::bf16_gemm(m, n, k, P.a.bf16[V].data(), P.b.bf16[W].data(), Pvw.data());
      finite = add_product(P, Pvw.data(), scale, first, last, S);
    }
  return S;
}

// ---- the entrywise bounds -------------------------------------------------------------------

/// Writes row r of one side of a block of absolute values (k entries of a left block, n of a
/// right one).
using AbsRows = std::function<void(std::int64_t, double*)>;

/// A block of an absolute-value product: left (m x k) times right (k x n), both >= 0.
struct AbsBlock {
  AbsRows left, right;
};

/// |X| 2^shift.
AbsRows abs_rows(const ConstHostMatrix& X, int shift) {
  return [X, f = pow2(shift)](std::int64_t r, double* out) {
    const double* x = row_of(X, r);
    for (std::int64_t j = 0; j < static_cast<std::int64_t>(X.extent(1)); ++j) out[j] = std::fabs(x[j]) * f;
  };
}

/// The residuals as kept (already magnitudes).
AbsRows rho_rows(const Words& X) {
  return [rho = X.rho](std::int64_t r, double* out) {
    std::copy_n(row_of(rho, r), rho.extent(1), out);
  };
}

/// (|rho| if with_rho) + sum_w u^w |X^(w)|, enlarged to cover the rounding of its p + 1 terms.
AbsRows weighted_rows(const Words& X, int t, bool with_rho) {
  return [&X, t, with_rho](std::int64_t r, double* out) {
    const std::int64_t cols = X.w[0].extent(1);
    for (std::int64_t j = 0; j < cols; ++j) {
      double v = with_rho ? row_of(X.rho, r)[j] : 0.0;
      for (std::size_t w = 0; w < X.w.size(); ++w) v += std::fabs(row_of(X.w[w], r)[j]) * pow2(-static_cast<int>(w) * t);
      out[j] = v * (1 + 2 * (static_cast<double>(X.w.size()) + 2) * binary64_u);
    }
  };
}

/// |rho_x| Ytil + Xtil' |rho_y| + sum_{v+w>=p} u^(v+w) |X^(v)| |Y^(w)|: the blocks of R.
std::vector<AbsBlock> representation_blocks(const Prepared& P) {
  if (P.s.engine == GemmEngine::dgemm) return {};  // A and B themselves: R = 0
  const int t = P.s.input.t;
  std::vector<AbsBlock> blocks;
  blocks.push_back({rho_rows(P.a), weighted_rows(P.b, t, true)});
  blocks.push_back({weighted_rows(P.a, t, false), rho_rows(P.b)});
  for (const auto& [v, w] : word_pairs(P.s.words, false))
    blocks.push_back({abs_rows(P.a.w[static_cast<std::size_t>(v)], -(v + w) * t),
                      abs_rows(P.b.w[static_cast<std::size_t>(w)], 0)});
  return blocks;
}

/// u^(v+w) |X^(v)|, |Y^(w)| for the computed pairs: the blocks of W.
std::vector<AbsBlock> accumulation_blocks(const Prepared& P) {
  const int t = P.s.input.t;
  std::vector<AbsBlock> blocks;
  for (const auto& [v, w] : word_pairs(P.s.words, true))
    blocks.push_back({abs_rows(P.a.w[static_cast<std::size_t>(v)], -(v + w) * t),
                      abs_rows(P.b.w[static_cast<std::size_t>(w)], 0)});
  return blocks;
}

/// sum over the blocks of left * right (m x n), by one binary64 DGEMM on the blocks side by
/// side, enlarged to cover its rounding.
HostMatrix abs_product(const std::vector<AbsBlock>& blocks, std::int64_t m, std::int64_t k,
                       std::int64_t n) {
  const std::int64_t nb = static_cast<std::int64_t>(blocks.size()), K = k * nb;
  HostMatrix L = uninitialised("abs_left", m, K), R = uninitialised("abs_right", K, n);
  for_each_row(m, K, [&](std::int64_t i) {
    for (std::int64_t b = 0; b < nb; ++b) blocks[static_cast<std::size_t>(b)].left(i, L.data() + i * K + b * k);
  });
  for_each_row(K, n, [&](std::int64_t l) { blocks[static_cast<std::size_t>(l / k)].right(l % k, row_of(R, l)); });
  HostMatrix out = uninitialised("abs_product", m, n);
  host::dgemm_by_rows(m, n, K, L.data(), R.data(), out.data());
  for_each_row(m, n, [&](std::int64_t i) {
    double* o = row_of(out, i);
    for (std::int64_t j = 0; j < n; ++j) o[j] = inflate(o[j], static_cast<double>(K));
  });
  return out;
}

/// Entrywise bound and probable_bound (gemm.hpp).
void componentwise(const Prepared& P, const HostMatrix& C, GemmResult& r) {
  const HostMatrix R = abs_product(representation_blocks(P), P.m, P.k, P.n);
  const HostMatrix W = abs_product(accumulation_blocks(P), P.m, P.k, P.n);
  const OverflowCheck overflow = overflow_check(P);
  r.bound = HostMatrix(Kokkos::view_alloc("bound", Kokkos::WithoutInitializing), P.m, P.n);
  r.probable_bound = HostMatrix(Kokkos::view_alloc("probable_bound", Kokkos::WithoutInitializing), P.m, P.n);
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n; ++j) {
      const int e = P.a.exps[static_cast<std::size_t>(i)] + P.b.exps[static_cast<std::size_t>(j)];
      auto entry = [&](double g) {
        const double core = R(i, j) + (g + P.c * (1 + g)) * W(i, j) + underflow_term(P, g);
        return inflate(std::ldexp(inflate(core, 4), -e) + tiny, 2);
      };
      const bool unbounded = !std::isfinite(C(i, j)) ||
                             overflow(static_cast<std::size_t>(i), static_cast<std::size_t>(j));
      r.bound(i, j) = unbounded ? inf : entry(P.g);
      r.probable_bound(i, j) = unbounded ? inf : entry(P.g_prob);
    }
  });
}

// ---- the papers' bounds ---------------------------------------------------------------------

/// Seed 001 Theorem 3.1 (3.25) for p = 1, Theorem 4.1 (4.32) for p > 1, as printed (u and
/// g_min of the input format, U and G_min of the accumulation format: 2U and 2G_min for a unit
/// rounding toward zero, as section 2.1 says). NaN without scaling (the theorems assume it).
double paper_normwise(const Prepared& P) {
  if (!P.s.scaling) return std::nan("");
  const Format acc = accumulation_format(P.s);
  const bool rz = P.s.engine == GemmEngine::emulated && P.s.unit.rounding == Rounding::toward_zero;
  const bool ftz = P.s.engine == GemmEngine::emulated ? !P.s.unit.output_subnormals
                                                      : P.s.engine == GemmEngine::onednn_bf16;
  const double u = P.s.input.u(), gmin = P.s.input.gmin();
  const double U = (rz ? 2 : 1) * acc.u();
  const double Gmin = (rz ? 2 : 1) * (ftz ? acc.fmin() / 2 : acc.u() * acc.fmin());
  const double n = static_cast<double>(P.k), th = P.theta, p = P.s.words;
  double c;
  if (P.s.words == 1) {
    const double omega = gmin / th;  // (3.15)
    c = (2 * u + u * u + 4 * n * n * omega * (1 + u + omega)) * (1 + n * U) + n * U +
        4 * n * n * Gmin / (th * th);
  } else {
    c = (p + 1) * std::pow(u, p) + 4 * n * std::pow(u, p - 1) * gmin / th + (n + p * p) * U +
        2 * p * (p + 1) * n * n * Gmin / (th * th);
  }
  return c * P.norm_a * P.norm_b;
}

/// Seed 000 Theorems 3.8 (DBEA) and 3.10 (VIBEA): (2u + u^2 + zeta (1 + u)^2) |A||B|, zeta =
/// gamma_(k-1)(U) + gamma_q(U) + their product (gamma~ for VIBEA; one lambda for the failure
/// probability per entry). For p > 1 the input term 2u + u^2 becomes (p + 1) u^p.
/// As printed these are not bounds for units that round toward zero and truncate in alignment
/// (V100): test_gemm's PrintedDbeaFailsOnAV100ChainAndTheCertifiedBoundHolds exhibits a
/// violation. The certified bound (componentwise(), above) takes U_r = 2U and the truncation.
void paper_componentwise(const Prepared& P, const ConstHostMatrix& A, const ConstHostMatrix& B,
                         GemmResult& r) {
  const Format acc = accumulation_format(P.s);
  const double U = acc.u(), u = P.s.input.u(), n = static_cast<double>(P.k);
  const double b = P.s.engine == GemmEngine::emulated ? P.s.unit.block : 1;
  const double q = std::ceil(n / b);
  const double input = P.s.words == 1 ? 2 * u + u * u : (P.s.words + 1) * std::pow(u, P.s.words);
  auto zeta = [](double x, double y) { return x + y + x * y; };
  const double z_det = zeta(bounds::gamma(std::max(n - 1, 0.0), U), bounds::gamma(q, U));
  const double lambda = P.k > 1 ? bounds::vibea_lambda(P.s.failure / 2, U, std::max(n - 1, 1.0)) : 0;
  const double z_prob = zeta(P.k > 1 ? bounds::gamma_tilde(n - 1, U, lambda) : 0,
                             bounds::gamma_tilde(q, U, lambda));
  const HostMatrix AB = abs_product({{abs_rows(A, 0), abs_rows(B, 0)}}, P.m, P.k, P.n);
  r.paper.dbea = HostMatrix(Kokkos::view_alloc("dbea", Kokkos::WithoutInitializing), P.m, P.n);
  r.paper.vibea = HostMatrix(Kokkos::view_alloc("vibea", Kokkos::WithoutInitializing), P.m, P.n);
  for_each_row(P.m, P.n, [&](std::int64_t i) {
    for (std::int64_t j = 0; j < P.n; ++j) {
      r.paper.dbea(i, j) = (input + z_det * (1 + u) * (1 + u)) * AB(i, j);
      r.paper.vibea(i, j) = (input + z_prob * (1 + u) * (1 + u)) * AB(i, j);
    }
  });
}

// ---- the reference --------------------------------------------------------------------------

/// A B correctly rounded to binary64: every product exact, the sum exact, one rounding.
HostMatrix exact_product(const ConstHostMatrix& A, const ConstHostMatrix& B) {
  const std::int64_t m = A.extent(0), k = A.extent(1), n = B.extent(1);
  HostMatrix E("exact", m, n);
  const detail::RoundingTarget rt =
      detail::rounding_target(formats::binary64(), Rounding::nearest_even, true);
  Kokkos::parallel_for(
      "ebla::gemm_reference",
      Kokkos::MDRangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Rank<2>>({0, 0}, {m, n}),
      [=](const std::int64_t i, const std::int64_t j) {
        detail::Wide w;
        w.clear(detail::wide_limbs, -2148);  // binary64 products are multiples of 2^-2148
        for (std::int64_t l = 0; l < k; ++l) {
          const detail::Term t = detail::product_term(A(i, l), B(l, j));
          if (!t.zero()) w.add(t);
        }
        const bool negative = w.take_sign();
        E(i, j) = w.leading_bit() < 0 ? 0.0 : detail::round_wide(w, negative, rt);
      });
  return E;
}

/// The observed error: ||C - A B||_inf (each row's sum in order) and max_ij |C - A B|_ij / bound_ij.
void observe(const ConstHostMatrix& A, const ConstHostMatrix& B, GemmResult& r) {
  r.exact = exact_product(A, B);
  const std::int64_t m = r.C.extent(0), n = r.C.extent(1);
  const bool ratios = r.bound.size() > 0;
  std::vector<double> row_error(static_cast<std::size_t>(m), 0.0), row_ratio(row_error.size(), 0.0);
  for_each_row(m, n, [&](std::int64_t i) {
    double row = 0, ratio = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double err = std::fabs(r.C(i, j) - r.exact(i, j));
      row += err;
      if (ratios && err > 0) ratio = std::max(ratio, err / r.bound(i, j));
    }
    row_error[static_cast<std::size_t>(i)] = row;
    row_ratio[static_cast<std::size_t>(i)] = ratio;
  });
  r.observed_normwise = 0;
  r.observed_max_ratio = ratios ? 0 : -1;
  for (std::size_t i = 0; i < row_error.size(); ++i) {
    r.observed_normwise = std::max(r.observed_normwise, row_error[i]);
    if (ratios) r.observed_max_ratio = std::max(r.observed_max_ratio, row_ratio[i]);
  }
}

}  // namespace

// ---- the entry points -----------------------------------------------------------------------

HostMatrix exact_gemm(const ConstHostMatrix& A, const ConstHostMatrix& B) {
  if (A.extent(1) != B.extent(0))
    throw_invalid("ebla::exact_gemm", "A is " + std::to_string(A.extent(0)) + " x " +
                                          std::to_string(A.extent(1)) + " but B is " +
                                          std::to_string(B.extent(0)) + " x " +
                                          std::to_string(B.extent(1)));
  return exact_product(A, B);
}

double gemm_normwise_bound(const ConstHostMatrix& A, const ConstHostMatrix& B,
                           const GemmConfig& config) {
  return normwise(prepare(A, B, config, "ebla::gemm_normwise_bound", Keep{}));
}

GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config) {
  auto start = std::chrono::steady_clock::now();
  Keep keep;  // the words as the engine reads them, and what the entrywise bounds need
  keep.engine = true;
  keep.words = config.engine == GemmEngine::emulated || config.engine == GemmEngine::dgemm || config.componentwise;
  keep.rho = config.componentwise && config.engine != GemmEngine::dgemm;
  const Prepared P = prepare(A, B, config, "ebla::gemm", keep);
  GemmResult r;
  r.config = P.s;
  r.theta = P.theta;
  r.model = P.model;
  r.norm_a = P.norm_a;
  r.norm_b = P.norm_b;
  r.lambda = P.lambda;
  r.split_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  bool finite = true;
  r.C = product(P, finite);
  r.product_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  r.normwise_bound = finite ? normwise(P) : inf;
  r.paper.normwise = paper_normwise(P);
  if (P.s.componentwise) {
    componentwise(P, r.C, r);
    paper_componentwise(P, A, B, r);
  }
  r.bound_seconds = seconds_since(start);
  if (P.s.reference) observe(A, B, r);
  return r;
}

GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmPlan& plan) {
  return gemm(A, B, plan.config);
}

// ---- selection ------------------------------------------------------------------------------

namespace {

template <class F>
double best_seconds(int repetitions, F&& f) {
  double best = inf;
  for (int r = 0; r < repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

const GemmCostModel& GemmCostModel::measured() {
  static const GemmCostModel model = [] {
    GemmCostModel c;
    const std::int64_t s = 512;  // large enough for the engines' steady rates
    const double flops = static_cast<double>(s * s * s);  // multiply-adds
    std::vector<double> a(static_cast<std::size_t>(s * s), 0.5), cd(a.size());
    std::vector<float> fa(a.size(), 0.5f), fc(a.size());
    std::vector<std::uint16_t> ha(a.size(), 0x3f00);
    // OpenBLAS's and oneDNN's threads spin for a while after a call and slow the other
    // library's next one: each engine is timed in two rounds, the best time kept
    c.dgemm = c.sgemm = c.onednn_bf16 = inf;
    for (int round = 0; round < 2; ++round) {
      if (host::gemm_engines().onednn_bf16)
        c.onednn_bf16 = std::min(c.onednn_bf16, best_seconds(3, [&] {
          host::bf16_gemm(s, s, s, ha.data(), ha.data(), fc.data());
        }) / flops);
      c.sgemm = std::min(c.sgemm, best_seconds(3, [&] {
        host::sgemm_by_rows(s, s, s, fa.data(), fa.data(), fc.data());
      }) / flops);
      c.dgemm = std::min(c.dgemm, best_seconds(3, [&] {
        host::dgemm_by_rows(s, s, s, a.data(), a.data(), cd.data());
      }) / flops);
    }
    const std::int64_t e = 32;
    HostMatrix X("X", e, e), Y("Y", e, e), Z("Z", e, e);
    Kokkos::deep_copy(X, 0.75);
    Kokkos::deep_copy(Y, 1.25);
    c.emulated = best_seconds(2, [&] { unit_gemm(units::fma_binary32(), X, Y, Z); }) /
                 static_cast<double>(e * e * e);
    // splitting, per element of A and B and per word: the words, the residuals, the norms and
    // the normwise bound's passes (a warm-up call first: fresh memory costs page faults)
    GemmConfig one;
    one.componentwise = false;
    const std::int64_t h = 512;
    HostMatrix big("big", h, h);
    Kokkos::deep_copy(big, 0.3);
    c.split = best_seconds(3, [&] { normwise(prepare(big, big, one, "ebla::GemmCostModel", Keep{})); }) /
              static_cast<double>(2 * h * h);
    return c;
  }();
  return model;
}

double GemmCostModel::seconds(const GemmConfig& config, std::int64_t m, std::int64_t k,
                              std::int64_t n) const {
  const double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double per = config.engine == GemmEngine::emulated ? emulated
                     : config.engine == GemmEngine::sgemm  ? sgemm
                     : config.engine == GemmEngine::onednn_bf16 ? onednn_bf16
                                                                : dgemm;
  double t = pairs_of(config.words) * mnk * per;
  // splitting (for dgemm only the checks and norms: about half of one word's cost)
  const double words = config.engine == GemmEngine::dgemm ? 0.5 : config.words;
  t += words * split * static_cast<double>(m * k + k * n);
  if (config.componentwise) {  // the absolute-value products of the bounds, on DGEMM
    const double blocks = config.engine == GemmEngine::dgemm
                              ? 2
                              : 2 + (config.words * config.words - pairs_of(config.words)) +
                                    pairs_of(config.words) + 1;
    t += blocks * mnk * dgemm;
  }
  return t;
}

std::vector<GemmConfig> default_gemm_candidates(bool scaling, bool subnormals) {
  std::vector<GemmConfig> out;
  auto add = [&](const Format& f, int p, GemmEngine e) {
    GemmConfig c;
    c.input = f;
    c.words = p;
    c.engine = e;
    c.scaling = scaling;
    c.subnormals = subnormals;
    out.push_back(c);
  };
  const bool onednn = host::gemm_engines().onednn_bf16;
  for (int p = 1; p <= 3; ++p) {
    add(formats::bfloat16(), p, onednn ? GemmEngine::onednn_bf16 : GemmEngine::sgemm);
    add(formats::binary16(), p, GemmEngine::sgemm);
    add(formats::tf32(), p, GemmEngine::sgemm);
  }
  add(formats::binary32(), 1, GemmEngine::sgemm);
  add(formats::binary64(), 1, GemmEngine::dgemm);
  return out;
}

GemmPlan gemm_select(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmOptions& options) {
  const char* function = "ebla::gemm_select";
  if (!(options.tolerance > 0 && options.tolerance < inf))
    throw_invalid(function, "tolerance = " + std::to_string(options.tolerance) +
                                " is not positive and finite");
  std::vector<GemmConfig> candidates = options.candidates;
  if (candidates.empty()) candidates = default_gemm_candidates(options.scaling, options.subnormals);
  for (GemmConfig& c : candidates) {
    c.failure = options.failure;
    c.componentwise = options.componentwise;
  }
  for (const GemmConfig& c : candidates) validate(c, function);
  const GemmCostModel& cost = GemmCostModel::measured();
  GemmPlan plan;
  plan.tolerance = options.tolerance;
  int chosen = -1, smallest = -1;
  // each candidate's bound by the passes gemm makes, without keeping the words
  for (const GemmConfig& c : candidates) {
    GemmCandidateReport rep;
    rep.config = c;
    const Prepared P = prepare(A, B, c, function, Keep{});
    const double bound = normwise(P);
    const double scale = P.norm_a * P.norm_b;  // ||A||_inf ||B||_inf
    rep.relative_bound = scale > 0 ? bound / scale : (bound > 0 ? inf : 0);
    rep.seconds = cost.seconds(c, A.extent(0), A.extent(1), B.extent(1));
    plan.candidates.push_back(rep);
  }
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const GemmCandidateReport& rep = plan.candidates[i];
    const int idx = static_cast<int>(i);
    if (rep.relative_bound <= options.tolerance &&
        (chosen < 0 || rep.seconds < plan.candidates[static_cast<std::size_t>(chosen)].seconds))
      chosen = idx;
    if (smallest < 0 ||
        rep.relative_bound < plan.candidates[static_cast<std::size_t>(smallest)].relative_bound)
      smallest = idx;
  }
  if (smallest < 0) throw_invalid(function, "the candidate list is empty");
  plan.meets_tolerance = chosen >= 0;
  const GemmCandidateReport& pick = plan.candidates[static_cast<std::size_t>(chosen >= 0 ? chosen : smallest)];
  plan.config = pick.config;
  plan.relative_bound = pick.relative_bound;
  plan.seconds = pick.seconds;
  return plan;
}

namespace detail {

HostIsa gemm_host_isa() {
  const int isa = line_isa.load();
  return isa < 0 ? best_host_isa() : static_cast<HostIsa>(isa);
}

void set_gemm_host_isa(HostIsa isa) {
  const std::vector<HostIsa> ok = supported_host_isas();
  if (std::find(ok.begin(), ok.end(), isa) == ok.end())
    throw_invalid("ebla::detail::set_gemm_host_isa",
                  std::string("this CPU does not run ") + to_string(isa));
  line_isa.store(static_cast<int>(isa));
}

}  // namespace detail

}  // namespace ebla
