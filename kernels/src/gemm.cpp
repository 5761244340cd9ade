// Model 1 mixed-precision GEMM: scaling, words, products on an engine, certified bounds,
// and the tolerance-driven choice. The contract and the bound are in gemm.hpp; the
// derivations are in docs/gemm.md.
#include <ebla/core/bounds.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
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

// ---- scaling and words ----------------------------------------------------------------------

/// A or B as words: X = Scale^-1 (sum_w u^w words[w] + rho), Scale = diag(2^exps).
/// Per row of A (or column of B): max over words of the 1-norm and of the largest magnitude.
struct LineNorms {
  std::vector<double> one, max;
};

struct Words {
  std::vector<HostMatrix> w;  ///< words[w], values of the input format
  HostMatrix rho;             ///< |residual|, enlarged to cover binary64 underflow
  std::vector<int> exps;      ///< scaling exponents, per row of A or per column of B
  LineNorms norms;            ///< of the words, per row of A or column of B
  double inf_norm = 0;        ///< ||X||_inf of the matrix as given
  std::vector<HostMatrix> rho_after;  ///< |residual| after 1, 2, .. words (the last is rho)
};

/// The first p words of a split into more (views, no copies); the line norms stay those of
/// all the words, an upper bound.
Words first_words(const Words& all, int p) {
  Words out = all;
  out.w.resize(static_cast<std::size_t>(p));
  out.rho = all.rho_after[static_cast<std::size_t>(p - 1)];
  out.rho_after.resize(static_cast<std::size_t>(p));
  return out;
}

/// theta of (3.2).
double theta_of(const GemmConfig& s, std::int64_t k) {
  const double fmax = s.input.fmax();
  const double Fmax = accumulation_format(s).fmax();
  return std::min(fmax, std::sqrt(Fmax / static_cast<double>(std::max<std::int64_t>(k, 1))));
}

/// The largest e with 2^e max <= theta (max > 0), kept inside binary64's range.
int scale_exponent(double max, double theta) {
  if (max == 0) return 0;
  int e = std::ilogb(theta) - std::ilogb(max);
  while (std::ldexp(max, e) > theta) --e;
  while (std::ldexp(max, e + 1) <= theta) ++e;
  return std::clamp(e, -1000, 1000);
}

/// Splits X into p words (4.5)-(4.6). by_row: the scaling is per row (A), else per column (B).
/// The largest magnitude of every line (row if by_row, else column) and ||X||_inf; throws
/// naming `name` and the position of a NaN or infinite entry.
std::vector<double> line_maxima(const ConstHostMatrix& X, bool by_row, const char* name,
                                const char* function, double& inf_norm) {
  const std::int64_t rows = X.extent(0), cols = X.extent(1);
  std::vector<double> max(static_cast<std::size_t>(by_row ? rows : cols), 0.0);
  inf_norm = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* x = &X(i, 0);
    double sum = 0, row_max = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double a = std::fabs(x[j]);
      sum += a;  // in order: ||X||_inf as the plain sum gives it
      if (by_row)
        row_max = std::max(row_max, a);
      else
        max[static_cast<std::size_t>(j)] = std::max(max[static_cast<std::size_t>(j)], a);
    }
    if (!(sum <= std::numeric_limits<double>::max()))  // inf, NaN, or an overflowing row
      for (std::int64_t j = 0; j < cols; ++j)
        if (!std::isfinite(x[j])) {
          std::ostringstream msg;
          msg << name << "(" << i << ", " << j << ") = " << x[j] << " is not finite";
          throw_invalid(function, msg.str());
        }
    if (by_row) max[static_cast<std::size_t>(i)] = row_max;
    inf_norm = std::max(inf_norm, sum);
  }
  return max;
}

/// Adds one word's line norms.
void add_line_norms(const HostMatrix& W, bool by_row, LineNorms& norms) {
  const std::int64_t rows = W.extent(0), cols = W.extent(1);
  std::vector<double> one(norms.one.size(), 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::size_t l = static_cast<std::size_t>(by_row ? i : j);
      one[l] += std::fabs(W(i, j));
      norms.max[l] = std::max(norms.max[l], std::fabs(W(i, j)));
    }
  for (std::size_t l = 0; l < one.size(); ++l)
    norms.one[l] = std::max(norms.one[l], inflate(one[l], 2.0 * static_cast<double>(rows + cols)));
}

// The passes over one row of A or B: short loops the compiler vectorises (`omp simd`), forced
// inline into one set of functions per instruction set of quantize_host.hpp (baseline x86-64,
// AVX2, AVX-512), chosen at run time from what the CPU runs (detail::gemm_host_isa, which
// tests can set). Every set gives the same words, residuals and products (elementwise IEEE
// operations); sums may be ordered differently, which the bounds allow for (inflate()).
#define EBLA_INLINE [[gnu::always_inline]] inline

/// r = x s (one scale, or one per element), slack = 0.
EBLA_INLINE void scale_line_body(const double* x, const double* scale, double one_scale,
                                 double* r, double* slack, std::int64_t n) {
  if (scale != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) {
      r[j] = x[j] * scale[j];
      slack[j] = 0;
    }
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) {
      r[j] = x[j] * one_scale;
      slack[j] = 0;
    }
  }
}

/// One word of (4.5) for a line: word = fl(r u^-w), r = (r u^-w - word) u^w, and |rho|.
EBLA_INLINE void word_line_body(double* r, double* slack, double up, double down,
                                const RoundingConstants& rc, double* word, double* rho,
                                double margin, std::int64_t n) {
  const RoundingConstants c = rc;
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) {
    const double y = r[j] * up;                                // r / u^w
    const double v = round_to<Rounding::nearest_even>(y, c);  // (4.5)
    word[j] = v;
    const double rest = (y - v) * down;  // y - v is exact (docs/gemm.md) but after a
    r[j] = rest;                         // saturated word; an ulp covers that case
    slack[j] += 2 * binary64_u * std::fabs(rest);
    rho[j] = std::fabs(rest) + slack[j] * (1 + 4 * binary64_u) + margin;
  }
}

/// one += |v|, max = max(max, |v|), elementwise (the norms of B's columns).
EBLA_INLINE void add_abs_body(const double* v, double* one, double* max, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(v[j]);
    one[j] += a;
    max[j] = a > max[j] ? a : max[j];
  }
}

/// sum and max of |v| (the norms of A's rows).
EBLA_INLINE void sum_max_abs_body(const double* v, std::int64_t n, double& sum, double& max) {
  double s = 0, m = 0;
#pragma omp simd reduction(+ : s) reduction(max : m)
  for (std::int64_t j = 0; j < n; ++j) {
    const double a = std::fabs(v[j]);
    s += a;
    m = a > m ? a : m;
  }
  sum = s;
  max = m;
}

/// sum_j |v_j| c_j (c >= 0).
EBLA_INLINE double abs_dot_body(const double* v, const double* c, std::int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t j = 0; j < n; ++j) s += std::fabs(v[j]) * c[j];
  return s;
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

/// S = (first ? +0 : S) + P scale (from +0, as a sum does; scale a power of two).
template <class T>
EBLA_INLINE void add_scaled_body(double* S, const T* P, double scale, bool first, std::int64_t n) {
  if (first) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) S[j] = 0.0 + static_cast<double>(P[j]) * scale;
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) S[j] = S[j] + static_cast<double>(P[j]) * scale;
  }
}

/// S_j *= f c_j, f c_j a normal power of two (exact unless S_j f c_j is subnormal).
EBLA_INLINE void scale_by_body(double* S, double f, const double* c, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) S[j] *= f * c[j];
}

/// The line kernels of one instruction set.
struct LineKernels {
  void (*scale_line)(const double*, const double*, double, double*, double*, std::int64_t);
  void (*word_line)(double*, double*, double, double, const RoundingConstants&, double*, double*,
                    double, std::int64_t);
  void (*add_abs)(const double*, double*, double*, std::int64_t);
  void (*sum_max_abs)(const double*, std::int64_t, double&, double&);
  double (*abs_dot)(const double*, const double*, std::int64_t);
  void (*to_binary32)(const double*, float*, std::int64_t);
  void (*to_bfloat16)(const double*, std::uint16_t*, std::int64_t);
  void (*add_scaled64)(double*, const double*, double, bool, std::int64_t);
  void (*add_scaled32)(double*, const float*, double, bool, std::int64_t);
  void (*scale_by)(double*, double, const double*, std::int64_t);
};

// One namespace of wrappers per instruction set, each compiled for it.
#define EBLA_LINE_KERNELS(NS, TARGET)                                                            \
  namespace NS {                                                                                 \
  TARGET void scale_line(const double* x, const double* s, double o, double* r, double* sl,      \
                         std::int64_t n) { scale_line_body(x, s, o, r, sl, n); }                 \
  TARGET void word_line(double* r, double* sl, double up, double down,                           \
                        const RoundingConstants& rc, double* w, double* rho, double m,           \
                        std::int64_t n) { word_line_body(r, sl, up, down, rc, w, rho, m, n); }   \
  TARGET void add_abs(const double* v, double* one, double* max, std::int64_t n) {               \
    add_abs_body(v, one, max, n);                                                                \
  }                                                                                              \
  TARGET void sum_max_abs(const double* v, std::int64_t n, double& s, double& m) {               \
    sum_max_abs_body(v, n, s, m);                                                                \
  }                                                                                              \
  TARGET double abs_dot(const double* v, const double* c, std::int64_t n) {                      \
    return abs_dot_body(v, c, n);                                                                \
  }                                                                                              \
  TARGET void to_binary32(const double* f, float* t, std::int64_t n) { to_binary32_body(f, t, n); } \
  TARGET void to_bfloat16(const double* f, std::uint16_t* t, std::int64_t n) {                   \
    to_bfloat16_body(f, t, n);                                                                   \
  }                                                                                              \
  TARGET void add_scaled64(double* S, const double* P, double sc, bool first, std::int64_t n) {  \
    add_scaled_body(S, P, sc, first, n);                                                         \
  }                                                                                              \
  TARGET void add_scaled32(double* S, const float* P, double sc, bool first, std::int64_t n) {   \
    add_scaled_body(S, P, sc, first, n);                                                         \
  }                                                                                              \
  TARGET void scale_by(double* S, double f, const double* c, std::int64_t n) {                   \
    scale_by_body(S, f, c, n);                                                                   \
  }                                                                                              \
  constexpr LineKernels kernels{scale_line,  word_line,   add_abs,      sum_max_abs,  abs_dot,   \
                                to_binary32, to_bfloat16, add_scaled64, add_scaled32, scale_by}; \
  }

EBLA_LINE_KERNELS(line_baseline, )
#if defined(__x86_64__) && defined(__GNUC__)
EBLA_LINE_KERNELS(line_avx2, __attribute__((target("avx2,bmi,bmi2,fma"))))
EBLA_LINE_KERNELS(line_avx512, __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,bmi,bmi2,fma"))))
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

/// The words and residuals of (4.5)-(4.6), line by line, and the words' line norms.
void split_rows(const ConstHostMatrix& X, bool by_row, const Format& input, int p,
                const std::vector<double>& scale, Words& out) {
  const std::int64_t rows = X.extent(0), cols = X.extent(1);
  const RoundingConstants rc = rounding_constants(input);
  const std::size_t lines = scale.size();
  std::vector<double> one(static_cast<std::size_t>(p) * lines, 0.0);  // per word and line
  std::vector<double> r(static_cast<std::size_t>(cols)), slack(r.size());
  for (std::int64_t i = 0; i < rows; ++i) {
    line().scale_line(&X(i, 0), by_row ? nullptr : scale.data(),
               by_row ? scale[static_cast<std::size_t>(i)] : 0.0, r.data(), slack.data(), cols);
    for (int w = 0; w < p; ++w) {
      double* word = &out.w[static_cast<std::size_t>(w)](i, 0);
      // |rho| after w + 1 words, and the subnormal roundings of the scalings (half an ulp of
      // 2^-1074 each)
      line().word_line(r.data(), slack.data(), pow2(w * input.t), pow2(-w * input.t), rc, word,
                &out.rho_after[static_cast<std::size_t>(w)](i, 0), (w + 3) * tiny, cols);
      if (by_row) {
        double sum, max;
        line().sum_max_abs(word, cols, sum, max);
        one[static_cast<std::size_t>(w) * lines + static_cast<std::size_t>(i)] = sum;
        out.norms.max[static_cast<std::size_t>(i)] = std::max(out.norms.max[static_cast<std::size_t>(i)], max);
      } else {
        line().add_abs(word, &one[static_cast<std::size_t>(w) * lines], out.norms.max.data(), cols);
      }
    }
  }
  const double terms = 2.0 * static_cast<double>(rows + cols);
  for (int w = 0; w < p; ++w)
    for (std::size_t l = 0; l < lines; ++l)
      out.norms.one[l] = std::max(out.norms.one[l], inflate(one[static_cast<std::size_t>(w) * lines + l], terms));
}

Words split_words(const ConstHostMatrix& X, bool by_row, const GemmConfig& s, double theta,
                  const char* name, const char* function) {
  const std::int64_t rows = X.extent(0), cols = X.extent(1);
  const std::size_t lines = static_cast<std::size_t>(by_row ? rows : cols);
  Words out;
  const std::vector<double> max = line_maxima(X, by_row, name, function, out.inf_norm);
  out.exps.assign(lines, 0);
  if (s.scaling)
    for (std::size_t l = 0; l < lines; ++l) out.exps[l] = scale_exponent(max[l], theta);
  out.norms = LineNorms{std::vector<double>(lines, 0.0), std::vector<double>(lines, 0.0)};
  for (int w = 0; w < s.words; ++w) out.w.push_back(uninitialised("word", rows, cols));
  for (int w = 0; w < s.words; ++w) out.rho_after.push_back(uninitialised("rho", rows, cols));
  out.rho = out.rho_after.back();
  if (s.input.t == 53 && s.input.emin == -1022 && s.input.subnormals && !s.scaling) {  // binary64
    Kokkos::deep_copy(out.w[0], X);
    for (int w = 1; w < s.words; ++w) Kokkos::deep_copy(out.w[static_cast<std::size_t>(w)], 0.0);
    for (const HostMatrix& r : out.rho_after) Kokkos::deep_copy(r, 0.0);
    add_line_norms(out.w[0], by_row, out.norms);
    return out;
  }
  std::vector<double> scale(lines);  // 2^e, |e| <= 1000
  for (std::size_t l = 0; l < lines; ++l) scale[l] = pow2(out.exps[l]);
  split_rows(X, by_row, s.input, s.words, scale, out);
  return out;
}

// ---- the products ---------------------------------------------------------------------------

using FloatVector = ScratchVector<float>;
using Bf16Vector = ScratchVector<std::uint16_t>;

FloatVector as_floats(const HostMatrix& X) {
  FloatVector f = uninitialised_vector<float>("words_f32", X.size());
  line().to_binary32(X.data(), f.data(), static_cast<std::int64_t>(X.size()));
  return f;
}

Bf16Vector as_bfloat16(const HostMatrix& X) {
  Bf16Vector b = uninitialised_vector<std::uint16_t>("words_bf16", X.size());
  line().to_bfloat16(X.data(), b.data(), static_cast<std::int64_t>(X.size()));
  return b;
}

/// The words of A and B in the engine's own storage.
struct EngineWords {
  std::vector<FloatVector> fa, fb;
  std::vector<Bf16Vector> ha, hb;
};

EngineWords engine_words(const GemmConfig& s, const Words& a, const Words& b) {
  EngineWords e;
  for (int w = 0; w < s.words; ++w) {
    if (s.engine == GemmEngine::sgemm) {
      e.fa.push_back(as_floats(a.w[static_cast<std::size_t>(w)]));
      e.fb.push_back(as_floats(b.w[static_cast<std::size_t>(w)]));
    } else if (s.engine == GemmEngine::onednn_bf16) {
      e.ha.push_back(as_bfloat16(a.w[static_cast<std::size_t>(w)]));
      e.hb.push_back(as_bfloat16(b.w[static_cast<std::size_t>(w)]));
    }
  }
  return e;
}

/// S = (first) or S += u^(v+w) A^(v) B^(w), the product computed on the engine from zero.
void add_word_product(const GemmConfig& s, const Words& a, const Words& b, const EngineWords& e,
                      int v, int w, bool first, HostMatrix& S) {
  const HostMatrix& X = a.w[static_cast<std::size_t>(v)];
  const HostMatrix& Y = b.w[static_cast<std::size_t>(w)];
  const std::int64_t m = X.extent(0), k = X.extent(1), n = Y.extent(1);
  const double scale = pow2(-(v + w) * s.input.t);  // exact
  const auto size = static_cast<std::int64_t>(S.size());
  switch (s.engine) {
    case GemmEngine::emulated: {
      HostMatrix P("P", m, n);  // the unit adds to C: from zero
      unit_gemm(s.unit, X, Y, P);
      line().add_scaled64(S.data(), P.data(), scale, first, size);
      break;
    }
    case GemmEngine::dgemm:  // one word, no scaling: straight into S
      host::dgemm(m, n, k, X.data(), Y.data(), S.data());
      break;
    case GemmEngine::sgemm: {
      const FloatVector c = uninitialised_vector<float>("P", static_cast<std::size_t>(m * n));
      host::sgemm(m, n, k, e.fa[static_cast<std::size_t>(v)].data(),
                  e.fb[static_cast<std::size_t>(w)].data(), c.data());
      line().add_scaled32(S.data(), c.data(), scale, first, size);
      break;
    }
    case GemmEngine::onednn_bf16: {
      const FloatVector c = uninitialised_vector<float>("P", static_cast<std::size_t>(m * n));
      host::bf16_gemm(m, n, k, e.ha[static_cast<std::size_t>(v)].data(),
                      e.hb[static_cast<std::size_t>(w)].data(), c.data());
      line().add_scaled32(S.data(), c.data(), scale, first, size);
      break;
    }
  }
}

/// C = Lambda^-1 (sum_{v+w<p} u^(v+w) P_vw) M^-1 (4.7), the smallest level first.
HostMatrix product(const GemmConfig& s, const Words& a, const Words& b) {
  const std::int64_t m = a.w[0].extent(0), n = b.w[0].extent(1);
  const EngineWords e = engine_words(s, a, b);
  HostMatrix S = uninitialised("C", m, n);
  if (S.size() == 0) return S;
  bool first = true;
  for (int level = s.words - 1; level >= 0; --level)
    for (int v = 0; v <= level; ++v, first = false) add_word_product(s, a, b, e, v, level - v, first, S);
  if (!s.scaling) return S;
  std::vector<double> col(static_cast<std::size_t>(n));  // 2^-e_j
  for (std::size_t j = 0; j < col.size(); ++j) col[j] = pow2(-b.exps[j]);
  const auto [low, high] = std::minmax_element(b.exps.begin(), b.exps.end());
  for (std::int64_t i = 0; i < m; ++i) {
    const int e = a.exps[static_cast<std::size_t>(i)];
    if (std::abs(e + *low) <= 1022 && std::abs(e + *high) <= 1022) {  // 2^-(e_i + e_j) normal
      line().scale_by(&S(i, 0), pow2(-e), col.data(), n);
      continue;
    }
    for (std::int64_t j = 0; j < n; ++j) S(i, j) = unscale(S(i, j), e + b.exps[static_cast<std::size_t>(j)]);
  }
  return S;
}

// ---- the bounds -----------------------------------------------------------------------------

/// Everything the bounds need that does not depend on the computed product.
struct Prepared {
  GemmConfig s;
  std::int64_t m = 0, k = 0, n = 0;
  double theta = 0;
  Words a, b;
  AccumulationModel model;
  double g = 0;           ///< (1 + delta)^d - 1
  double g_prob = 0;      ///< gamma~ (or g when biased)
  double lambda = 0;
  double c = 0;           ///< gamma_(pairs-1)(2^-53): the binary64 sum of the products
  double norm_a = 0, norm_b = 0;
};

/// The pairs (v, w) of words whose products are computed (v + w < p), or neglected.
std::vector<std::pair<int, int>> word_pairs(int p, bool computed) {
  std::vector<std::pair<int, int>> out;
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w)
      if ((v + w < p) == computed) out.emplace_back(v, w);
  return out;
}

/// A block of the absolute-value products: left (m x k) times right (k x n), both >= 0.
struct AbsBlock {
  HostMatrix left, right;
};

/// |rho_x| Ytil + Xtil' |rho_y| + sum_{v+w>=p} u^(v+w) |X^(v)| |Y^(w)|: the blocks of R.
std::vector<AbsBlock> representation_blocks(const Prepared& P) {
  if (P.s.engine == GemmEngine::dgemm) return {};  // A and B themselves: R = 0
  const int p = P.s.words, t = P.s.input.t;
  auto weighted_sum = [&](const Words& X, bool with_rho) {
    HostMatrix S = uninitialised("sum", X.rho.extent(0), X.rho.extent(1));
    for (std::size_t l = 0; l < S.size(); ++l) {
      double v = with_rho ? X.rho.data()[l] : 0.0;
      for (int w = 0; w < p; ++w)
        v += std::fabs(X.w[static_cast<std::size_t>(w)].data()[l]) * pow2(-w * t);
      S.data()[l] = v * (1 + 2 * (p + 2) * binary64_u);  // rounding of the p + 1 terms
    }
    return S;
  };
  auto absolute = [](const HostMatrix& X, int shift) {
    HostMatrix Y = uninitialised("abs", X.extent(0), X.extent(1));
    for (std::size_t l = 0; l < Y.size(); ++l) Y.data()[l] = std::fabs(X.data()[l]) * pow2(shift);
    return Y;
  };
  std::vector<AbsBlock> blocks;
  blocks.push_back({P.a.rho, weighted_sum(P.b, true)});
  blocks.push_back({weighted_sum(P.a, false), P.b.rho});
  for (const auto& [v, w] : word_pairs(p, false))
    blocks.push_back({absolute(P.a.w[static_cast<std::size_t>(v)], -(v + w) * t),
                      absolute(P.b.w[static_cast<std::size_t>(w)], 0)});
  return blocks;
}

/// u^(v+w) |X^(v)|, |Y^(w)| for the computed pairs: the blocks of W.
std::vector<AbsBlock> accumulation_blocks(const Prepared& P) {
  const int t = P.s.input.t;
  std::vector<AbsBlock> blocks;
  for (const auto& [v, w] : word_pairs(P.s.words, true)) {
    AbsBlock blk{uninitialised("l", P.m, P.k), uninitialised("r", P.k, P.n)};
    const HostMatrix& X = P.a.w[static_cast<std::size_t>(v)];
    const HostMatrix& Y = P.b.w[static_cast<std::size_t>(w)];
    for (std::size_t l = 0; l < X.size(); ++l)
      blk.left.data()[l] = std::fabs(X.data()[l]) * pow2(-(v + w) * t);
    for (std::size_t l = 0; l < Y.size(); ++l) blk.right.data()[l] = std::fabs(Y.data()[l]);
    blocks.push_back(blk);
  }
  return blocks;
}

/// sum over the blocks of left * right (m x n), by one binary64 DGEMM on the blocks side by
/// side, enlarged to cover its rounding.
HostMatrix abs_product(const std::vector<AbsBlock>& blocks, std::int64_t m, std::int64_t k,
                       std::int64_t n) {
  const std::int64_t nb = static_cast<std::int64_t>(blocks.size()), K = k * nb;
  std::vector<double> L(static_cast<std::size_t>(m * K)), R(static_cast<std::size_t>(K * n));
  for (std::int64_t b = 0; b < nb; ++b) {
    const AbsBlock& blk = blocks[static_cast<std::size_t>(b)];
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t l = 0; l < k; ++l) L[static_cast<std::size_t>(i * K + b * k + l)] = blk.left(i, l);
    for (std::int64_t l = 0; l < k; ++l)
      for (std::int64_t j = 0; j < n; ++j) R[static_cast<std::size_t>((b * k + l) * n + j)] = blk.right(l, j);
  }
  HostMatrix out("abs_product", m, n);
  host::dgemm(m, n, K, L.data(), R.data(), out.data());
  for (std::size_t l = 0; l < out.size(); ++l) out.data()[l] = inflate(out.data()[l], static_cast<double>(K));
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

/// A split of A and B that several configs share (gemm_select): the words of `words` > p.
struct SharedSplit {
  Words a, b;
};

Prepared prepare(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config,
                 const char* function, const SharedSplit* shared = nullptr) {
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
  if (shared) {
    P.a = first_words(shared->a, P.s.words);
    P.b = first_words(shared->b, P.s.words);
  } else {
    P.a = split_words(A, true, P.s, P.theta, "A", function);
    P.b = split_words(B, false, P.s, P.theta, "B", function);
  }
  P.model = accumulation_model(P.s, P.k);
  P.g = growth_minus_one(P.model.delta, P.model.depth);
  P.g_prob = P.g;
  const double pairs = pairs_of(P.s.words);
  if (P.model.unbiased && P.model.depth > 0) {
    // every product carries at most d roundings to nearest: Higham & Mary Theorem 3.1 /
    // seed 000 Theorem 3.9, a union over the k products of each of the pairs
    const double f = P.s.failure / (static_cast<double>(P.k) * pairs);
    const double u = P.model.delta;
    P.lambda = std::min(bounds::hm_lambda(f, u), bounds::vibea_lambda(f, u, P.model.depth));
    P.g_prob = std::min(P.g, bounds::gamma_tilde(P.model.depth, u, P.lambda) * (1 + 0x1p-48));
  }
  P.c = pairs > 1 ? bounds::gamma(pairs - 1, binary64_u) : 0.0;
  P.norm_a = P.a.inf_norm;
  P.norm_b = P.b.inf_norm;
  return P;
}

/// The constant terms of bound (gemm.hpp): (pairs) N G (1 + g)(1 + c).
double underflow_term(const Prepared& P, double g) {
  return pairs_of(P.s.words) * P.model.steps * P.model.G * (1 + g) * (1 + P.c);
}

/// The certified normwise bound: max_i sum_j bound(i, j), O(p^2 (m k + k n) + m n).
double normwise(const Prepared& P) {
  const int p = P.s.words, t = P.s.input.t;
  std::vector<double> mu_inv(static_cast<std::size_t>(P.n));
  for (std::size_t j = 0; j < mu_inv.size(); ++j) mu_inv[j] = pow2(-P.b.exps[j]);  // |e| <= 1000
  // B's side: sum_j mu_j^-1 |M_lj| for M = rho_y and every word Y^(w)
  auto row_sums = [&](const HostMatrix& M) {
    std::vector<double> r(static_cast<std::size_t>(P.k));
    for (std::int64_t l = 0; l < P.k; ++l) r[static_cast<std::size_t>(l)] = P.n > 0 ? line().abs_dot(&M(l, 0), mu_inv.data(), P.n) : 0.0;
    return r;
  };
  const std::vector<double> rv = row_sums(P.b.rho);
  std::vector<std::vector<double>> bw;
  for (const HostMatrix& Y : P.b.w) bw.push_back(row_sums(Y));
  std::vector<double> yv = rv;  // rows of Ytil mu^-1
  for (int w = 0; w < p; ++w)
    for (std::size_t l = 0; l < yv.size(); ++l) yv[l] += bw[static_cast<std::size_t>(w)][l] * pow2(-w * t);
  // per word v of A: the weights of |X^(v)| in R (|rho_y| and the neglected pairs) and in W
  std::vector<std::vector<double>> cR(static_cast<std::size_t>(p), rv), cW(static_cast<std::size_t>(p), std::vector<double>(rv.size(), 0.0));
  for (int v = 0; v < p; ++v)
    for (int w = 0; w < p; ++w) {
      std::vector<double>& c = v + w < p ? cW[static_cast<std::size_t>(v)] : cR[static_cast<std::size_t>(v)];
      for (std::size_t l = 0; l < c.size(); ++l) c[l] += bw[static_cast<std::size_t>(w)][l] * pow2(-w * t);
    }
  // A's side, one pass: R_i and W_i of gemm.hpp summed over j with the weights mu_j^-1
  const double terms = static_cast<double>(P.n) + static_cast<double>(P.k) * (p * p + 4);
  const double acc = P.g + P.c * (1 + P.g);
  double mu_sum = 0;  // sum_j mu_j^-1
  for (double v : mu_inv) mu_sum += v;
  const double under = underflow_term(P, P.g) * inflate(mu_sum, static_cast<double>(P.n));
  const OverflowCheck overflow{P.a.norms, P.b.norms, P.g, P.model.steps * P.model.G,
                               P.model.Fmax};
  const bool check = overflow.anywhere();
  double worst = 0;
  for (std::int64_t i = 0; i < P.m; ++i) {
    for (std::int64_t j = 0; check && j < P.n; ++j)
      if (overflow(static_cast<std::size_t>(i), static_cast<std::size_t>(j))) return inf;
    double R = 0, W = 0;
    if (P.k > 0) {
      R = line().abs_dot(&P.a.rho(i, 0), yv.data(), P.k);
      for (int v = 0; v < p; ++v) {
        const double* x = &P.a.w[static_cast<std::size_t>(v)](i, 0);
        R += line().abs_dot(x, cR[static_cast<std::size_t>(v)].data(), P.k) * pow2(-v * t);
        W += line().abs_dot(x, cW[static_cast<std::size_t>(v)].data(), P.k) * pow2(-v * t);
      }
    }
    const double row = inflate(R, terms) + acc * inflate(W, terms) + under;
    worst = std::max(worst, inflate(std::ldexp(row, -P.a.exps[static_cast<std::size_t>(i)]), 4));
  }
  // the absolute margins of the entrywise bounds, n of them per row
  return inflate(worst + 16 * static_cast<double>(P.n) * tiny, 2);
}

/// Entrywise bound and probable_bound (gemm.hpp).
void componentwise(const Prepared& P, const HostMatrix& C, GemmResult& r) {
  const HostMatrix R = abs_product(representation_blocks(P), P.m, P.k, P.n);
  const HostMatrix W = abs_product(accumulation_blocks(P), P.m, P.k, P.n);
  const OverflowCheck overflow{P.a.norms, P.b.norms, P.g, P.model.steps * P.model.G,
                               P.model.Fmax};
  r.bound = HostMatrix("bound", P.m, P.n);
  r.probable_bound = HostMatrix("probable_bound", P.m, P.n);
  for (std::int64_t i = 0; i < P.m; ++i)
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
  std::vector<AbsBlock> ab{{HostMatrix("absA", P.m, P.k), HostMatrix("absB", P.k, P.n)}};
  for (std::size_t l = 0; l < A.size(); ++l) ab[0].left.data()[l] = std::fabs(A.data()[l]);
  for (std::size_t l = 0; l < B.size(); ++l) ab[0].right.data()[l] = std::fabs(B.data()[l]);
  const HostMatrix AB = abs_product(ab, P.m, P.k, P.n);
  r.paper.dbea = HostMatrix("dbea", P.m, P.n);
  r.paper.vibea = HostMatrix("vibea", P.m, P.n);
  for (std::size_t l = 0; l < AB.size(); ++l) {
    r.paper.dbea.data()[l] = (input + z_det * (1 + u) * (1 + u)) * AB.data()[l];
    r.paper.vibea.data()[l] = (input + z_prob * (1 + u) * (1 + u)) * AB.data()[l];
  }
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

void observe(const ConstHostMatrix& A, const ConstHostMatrix& B, GemmResult& r) {
  r.exact = exact_product(A, B);
  r.observed_normwise = 0;
  r.observed_max_ratio = r.bound.size() > 0 ? 0 : -1;
  for (std::size_t i = 0; i < r.C.extent(0); ++i) {
    double row = 0;
    for (std::size_t j = 0; j < r.C.extent(1); ++j) {
      const double err = std::fabs(r.C(i, j) - r.exact(i, j));
      row += err;
      if (r.bound.size() > 0 && err > 0)
        r.observed_max_ratio = std::max(r.observed_max_ratio, err / r.bound(i, j));
    }
    r.observed_normwise = std::max(r.observed_normwise, row);
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
  return normwise(prepare(A, B, config, "ebla::gemm_normwise_bound"));
}

GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config) {
  auto start = std::chrono::steady_clock::now();
  const Prepared P = prepare(A, B, config, "ebla::gemm");
  GemmResult r;
  r.config = P.s;
  r.theta = P.theta;
  r.model = P.model;
  r.norm_a = P.norm_a;
  r.norm_b = P.norm_b;
  r.lambda = P.lambda;
  r.split_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  r.C = product(P.s, P.a, P.b);
  r.product_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  r.normwise_bound = normwise(P);
  for (std::size_t l = 0; l < r.C.size(); ++l)
    if (!std::isfinite(r.C.data()[l])) r.normwise_bound = inf;
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
        host::sgemm(s, s, s, fa.data(), fa.data(), fc.data());
      }) / flops);
      c.dgemm = std::min(c.dgemm, best_seconds(3, [&] {
        host::dgemm(s, s, s, a.data(), a.data(), cd.data());
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
    c.split = best_seconds(3, [&] { normwise(prepare(big, big, one, "ebla::GemmCostModel")); }) /
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
  const GemmCostModel& cost = GemmCostModel::measured();
  GemmPlan plan;
  plan.tolerance = options.tolerance;
  int chosen = -1, smallest = -1;
  // candidates with the same words (format, subnormals, scaling, theta) share one split into
  // as many words as the most of them use; one group's split is alive at a time, so its
  // scratch matrices serve the next group
  auto key_of = [&](const GemmConfig& c) {
    validate(c, function);
    const GemmConfig s = settled(c);
    std::ostringstream key;
    const Format& f = s.input;
    key << f.t << ' ' << f.emin << ' ' << f.emax << ' ' << f.subnormals << ' '
        << static_cast<int>(f.specials) << ' ' << static_cast<int>(f.overflow) << ' ' << s.scaling
        << ' ' << std::hexfloat << theta_of(s, static_cast<std::int64_t>(A.extent(1)));
    return key.str();
  };
  std::vector<std::string> keys;
  std::map<std::string, int> most;
  for (const GemmConfig& c : candidates) {
    keys.push_back(key_of(c));
    int& p = most[keys.back()];
    p = std::max(p, c.words);
  }
  plan.candidates.resize(candidates.size());
  for (const auto& [key, words] : most) {
    GemmConfig widest;
    std::size_t first = 0;
    while (keys[first] != key) ++first;
    widest = candidates[first];
    widest.words = words;
    SharedSplit split;
    {
      const Prepared P = prepare(A, B, widest, function);
      split = SharedSplit{P.a, P.b};
    }
    for (std::size_t i = first; i < candidates.size(); ++i) {
      if (keys[i] != key) continue;
      GemmCandidateReport& rep = plan.candidates[i];
      rep.config = candidates[i];
      const double bound = normwise(prepare(A, B, candidates[i], function, &split));
      const double scale = split.a.inf_norm * split.b.inf_norm;  // ||A||_inf ||B||_inf
      rep.relative_bound = scale > 0 ? bound / scale : (bound > 0 ? inf : 0);
      rep.seconds = cost.seconds(candidates[i], A.extent(0), A.extent(1), B.extent(1));
    }
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
