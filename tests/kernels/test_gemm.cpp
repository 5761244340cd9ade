// Tests of the mixed-precision GEMM (ebla/kernels/gemm.hpp), from its contract and
// docs/gemm.md, with seed 001 (Mary & Mikaitis) and seed 000 (Bhola & Duraisamy) at hand:
//
//  1. The computation, bit for bit: the header's steps 1-4 written out here (theta (3.2), the
//     power-of-two scaling, the words (4.5)-(4.6) by ebla::round_to, the products by
//     ebla::unit_dot from zero, their binary64 sum from the highest level down, v ascending
//     within a level, the unscaling), against ebla::gemm on small random cases of every input
//     format, p, scaling and subnormal setting, on six units; and hand-computed cases.
//  2. The certified bounds against __float128 references of A B (whose own error is allowed
//     for: gamma_k(2^-113) sum |a b|), entrywise and normwise, on random and adversarial data
//     (seed 001 section 5's +-10^phi, U(-1, 1), all positive, cancellation, entries at the input
//     formats' underflow thresholds, zero rows and columns, huge entries without scaling), every
//     unit of the catalogue and variants (rounded products, c after the products, chains,
//     pairwise trees, truncating and toward-zero adders, binary16 accumulation with large k),
//     and the engines sgemm, onednn_bf16 and dgemm.
//  3. The normwise bound: gemm_normwise_bound, the row sums of the entrywise bound; the
//     accumulation model against the table of docs/gemm.md.
//  4. The probabilistic bound: below the certified one, failing no more often than `failure`,
//     and equal to it on biased units.
//  5. The papers' bounds: a case where seed 000's DBEA (Theorem 3.8) is violated and the
//     certified bound holds; seed 001's (3.25) and (4.32) recomputed here.
//  6. The reference option (exact product, observed errors).
//  7. gemm_select.
//  8. The fast engines against the emulation, bit for bit where every partial sum is exact.
//  9. Bad input.
// Case counts are printed by each test ("[ counts   ]").
#include <ebla/core/bounds.hpp>
#include <ebla/core/bits.hpp>
#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>
#include <ebla/core/rounding.hpp>
#include <ebla/kernels/gemm.hpp>
#include <ebla/kernels/gemm_host.hpp>
#include <ebla/kernels/matrix_unit.hpp>

#include <gtest/gtest.h>
#include <quadmath.h>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "checks.hpp"
#include "../quad_vector.hpp"

namespace {
using ebla_test::bits_of;
using ebla_test::hex;
using ebla_test::same;

using ebla_test::Tally;

using ebla::Format;
using ebla::GemmConfig;
using ebla::GemmEngine;
using ebla::GemmResult;
using ebla::HostMatrix;
using ebla::MatrixUnit;
using ebla::Rounding;
namespace formats = ebla::formats;
namespace units = ebla::units;

__extension__ typedef __float128 quad;

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();


std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

quad qabs(quad x) { return x < 0 ? -x : x; }

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

HostMatrix matrix(std::size_t rows, std::size_t cols, double value = 0.0) {
  HostMatrix m("M", rows, cols);
  Kokkos::deep_copy(m, value);
  return m;
}

HostMatrix matrix(const std::vector<std::vector<double>>& rows) {
  HostMatrix m = matrix(rows.size(), rows.empty() ? 0 : rows[0].size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j];
  return m;
}

HostMatrix transpose(const HostMatrix& a) {
  HostMatrix t = matrix(a.extent(1), a.extent(0));
  for (std::size_t i = 0; i < a.extent(0); ++i)
    for (std::size_t j = 0; j < a.extent(1); ++j) t(j, i) = a(i, j);
  return t;
}

double norm_inf(const HostMatrix& a) {
  double best = 0;
  for (std::size_t i = 0; i < a.extent(0); ++i) {
    double s = 0;
    for (std::size_t j = 0; j < a.extent(1); ++j) s += std::abs(a(i, j));
    best = std::max(best, s);
  }
  return best;
}

Format without_subnormals(Format f) {
  f.subnormals = false;
  return f;
}

/// A config on the emulated engine.
GemmConfig emulated(const MatrixUnit& unit, const Format& input, int words, bool scaling = true,
                    bool subnormals = true) {
  GemmConfig c;
  c.engine = GemmEngine::emulated;
  c.unit = unit;
  c.input = input;
  c.words = words;
  c.scaling = scaling;
  c.subnormals = subnormals;
  return c;
}

GemmConfig on_engine(GemmEngine engine, const Format& input, int words, bool scaling = true,
                     bool subnormals = true) {
  GemmConfig c;
  c.engine = engine;
  c.input = input;
  c.words = words;
  c.scaling = scaling;
  c.subnormals = subnormals;
  return c;
}

std::string what(const GemmConfig& c) {
  return ebla::describe(c) + (c.scaling ? ", scaling" : ", no scaling") +
         (c.subnormals ? ", subnormals" : ", no subnormals");
}

/// A binary16-accumulation unit (NVIDIA's fp16-in, fp16-accumulate mode, Table 2.2 of seed
/// 001): b products and c in one addition rounded to nearest, nothing dropped in alignment.
MatrixUnit binary16_accumulation(int block = 4) {
  MatrixUnit u;
  u.block = block;
  u.input = formats::binary16();
  u.accumulation = formats::binary16();
  u.rounding = Rounding::nearest_even;
  u.extra_bits = MatrixUnit::unbounded;
  u.normalisation = ebla::Normalisation::at_end;
  return u;
}

/// The same adder rounding toward zero with no extra alignment bit (a V100 adder in binary16).
MatrixUnit binary16_truncating(int block = 8) {
  MatrixUnit u = binary16_accumulation(block);
  u.rounding = Rounding::toward_zero;
  u.extra_bits = 0;
  return u;
}

/// Does the accumulation format hold every value of the input format (the unit model's rule)?
bool contains(const Format& acc, const Format& in) {
  return in.t <= acc.t && in.emin >= acc.emin && in.emax <= acc.emax;
}

/// Overflow threshold of the accumulation of a config.
double accumulation_fmax(const GemmConfig& c) {
  switch (c.engine) {
    case GemmEngine::emulated: return c.unit.accumulation.fmax();
    case GemmEngine::sgemm:
    case GemmEngine::onednn_bf16: return formats::binary32().fmax();
    case GemmEngine::dgemm: break;
  }
  return formats::binary64().fmax();
}

/// theta = min(fmax, sqrt(Fmax / k)), seed 001 (3.2).
double theta_of(const GemmConfig& c, std::size_t k) {
  return std::min(c.input.fmax(), std::sqrt(accumulation_fmax(c) / static_cast<double>(k)));
}

// ===========================================================================================
// The steps of the header, written out

/// The exponent e of the largest 2^e with 2^e max <= theta (clamped to [-1000, 1000] as
/// docs/gemm.md says); 0 for a zero row, whose words are zero whatever it is.
int scale_exponent(double max, double theta) {
  if (max == 0) return 0;
  int e = std::ilogb(theta) - std::ilogb(max);
  while (e > -1000 && std::ldexp(max, e) > theta) --e;
  while (e < 1000 && std::ldexp(max, e + 1) <= theta) ++e;
  return std::clamp(e, -1000, 1000);
}

/// The words of a matrix whose rows (by_rows) or columns are scaled: word v of entry (i, j)
/// in w[v](i, j), the exponents of the scale factors in e.
struct Words {
  std::vector<HostMatrix> w;
  std::vector<int> e;
};

/// The words' format: the input format, without subnormals when the config says so or when
/// the unit reads subnormal inputs as zero (DAZ). A subnormal word would reach a DAZ unit as
/// zero and the residual rho would not hold what was lost; rounded without subnormals, the
/// residual carries the difference (docs/gemm.md says the same of oneDNN's bfloat16 words).
Format words_format(const GemmConfig& c) {
  const bool daz = c.engine == GemmEngine::emulated && !c.unit.input_subnormals;
  return c.subnormals && !daz ? c.input : without_subnormals(c.input);
}

Words split(const HostMatrix& M, bool by_rows, const GemmConfig& c, double theta) {
  const std::size_t rows = M.extent(0), cols = M.extent(1);
  const std::size_t lines = by_rows ? rows : cols, len = by_rows ? cols : rows;
  const Format f = words_format(c);
  Words out;
  for (int v = 0; v < c.words; ++v) out.w.push_back(matrix(rows, cols));
  for (std::size_t a = 0; a < lines; ++a) {
    double max = 0;
    for (std::size_t b = 0; b < len; ++b)
      max = std::max(max, std::abs(by_rows ? M(a, b) : M(b, a)));
    const int e = c.scaling ? scale_exponent(max, theta) : 0;
    out.e.push_back(e);
    for (std::size_t b = 0; b < len; ++b) {
      const std::size_t i = by_rows ? a : b, j = by_rows ? b : a;
      double r = std::ldexp(M(i, j), e);  // r_0 = lambda x
      for (int v = 0; v < c.words; ++v) {
        const double w = ebla::round_to(std::ldexp(r, v * c.input.t), f, Rounding::nearest_even);
        out.w[v](i, j) = w;                     // w_v = fl(r_v / u^v)
        r = r - std::ldexp(w, -v * c.input.t);  // r_(v+1) = r_v - u^v w_v
      }
    }
  }
  return out;
}

/// The unit as the config runs it: input format the words' format; DAZ/FTZ without subnormals.
MatrixUnit unit_as_run(const GemmConfig& c) {
  MatrixUnit u = c.unit;
  u.input = words_format(c);
  if (!c.subnormals) {
    u.input_subnormals = false;
    u.output_subnormals = false;
  }
  return u;
}

/// C as the header's steps 1-4 give it on the emulated engine.
HostMatrix expected_product(const HostMatrix& A, const HostMatrix& B, const GemmConfig& c) {
  const std::size_t m = A.extent(0), k = A.extent(1), n = B.extent(1);
  const double theta = theta_of(c, k);
  const Words X = split(A, true, c, theta), Y = split(B, false, c, theta);
  const MatrixUnit unit = unit_as_run(c);
  const int p = c.words, t = c.input.t;
  HostMatrix C = matrix(m, n);
  std::vector<double> row(k), col(k);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<std::vector<double>> P(p, std::vector<double>(p, 0.0));
      for (int v = 0; v < p; ++v)
        for (int w = 0; v + w < p; ++w) {
          for (std::size_t l = 0; l < k; ++l) row[l] = X.w[v](i, l), col[l] = Y.w[w](l, j);
          P[v][w] = ebla::unit_dot(unit, row, col, 0.0);
        }
      double s = 0.0;
      for (int level = p - 1; level >= 0; --level)
        for (int v = 0; v <= level; ++v) s += std::ldexp(P[v][level - v], -level * t);
      C(i, j) = std::ldexp(s, -(X.e[i] + Y.e[j]));
    }
  return C;
}

// ===========================================================================================
// Data

enum class Data { wide, uniform, positive, cancellation, tiny, zeros, huge, subnormal_results };
const char* to_string(Data d) {
  switch (d) {
    case Data::wide: return "+-10^phi";
    case Data::uniform: return "U(-1,1)";
    case Data::positive: return "U[1,2]";
    case Data::cancellation: return "cancellation";
    case Data::tiny: return "near underflow";
    case Data::zeros: return "zero rows/columns";
    case Data::huge: return "huge";
    case Data::subnormal_results: return "subnormal A B";
  }
  return "?";
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
double sign(std::mt19937_64& rng) { return rng() % 2 ? -1.0 : 1.0; }

/// `lines` vectors of length `len` (rows of A, or columns of B) of a kind. phi_max bounds the
/// exponents of +-10^phi; `theta` and the input format place the near-underflow entries.
std::vector<std::vector<double>> random_lines(std::mt19937_64& rng, std::size_t lines,
                                              std::size_t len, Data kind, double phi_max,
                                              const GemmConfig& c, double theta, bool is_a) {
  std::vector<std::vector<double>> out(lines, std::vector<double>(len, 0.0));
  for (std::size_t a = 0; a < lines; ++a) {
    auto& x = out[a];
    switch (kind) {
      case Data::wide:
        for (double& v : x) v = sign(rng) * std::pow(10.0, uniform(rng, -phi_max, phi_max));
        break;
      case Data::uniform:
        for (double& v : x) v = uniform(rng, -1, 1);
        break;
      case Data::positive:
        for (double& v : x) v = uniform(rng, 1, 2);
        break;
      case Data::cancellation:
        // A: x_1 .. x_h then -x_1 (1 + e_1) .. -x_h (1 + e_h); B: close to 1, so that
        // (A B)_ij is far below (|A| |B|)_ij
        if (is_a) {
          const std::size_t h = len / 2;
          for (std::size_t l = 0; l < h; ++l) {
            x[l] = uniform(rng, -1, 1);
            x[h + l] = -x[l] * (1 + uniform(rng, -1e-6, 1e-6));
          }
          if (len % 2 == 1) x[len - 1] = uniform(rng, -1e-7, 1e-7);
        } else {
          for (double& v : x) v = 1 + uniform(rng, -1e-3, 1e-3);
        }
        break;
      case Data::tiny: {
        // one entry of magnitude ~1 per line, the others at the input format's underflow
        // threshold once scaled: fmin 2^(-t-2 .. 2) / theta (fmin 2^(...) without scaling)
        const double scale = c.scaling ? theta : 1.0;
        const int lo = c.input.emin - c.input.t - 2, hi = c.input.emin + 2;
        for (double& v : x) {
          const int e = lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1));
          const double mag = std::ldexp(uniform(rng, 1, 2), e) / scale;
          v = sign(rng) * std::max(mag, std::ldexp(1.0, -1060));
        }
        if (len > 0) x[rng() % len] = sign(rng) * uniform(rng, 0.5, 1);
        break;
      }
      case Data::zeros:
        if (rng() % 3 != 0)
          for (double& v : x) v = rng() % 4 == 0 ? 0.0 : uniform(rng, -1, 1);
        break;
      case Data::huge:
        for (double& v : x) v = sign(rng) * std::pow(10.0, uniform(rng, 0, phi_max));
        break;
      case Data::subnormal_results:
        // products 2^-1080 .. 2^-1064: (A B)_ij lies among binary64's subnormals
        for (double& v : x)
          v = sign(rng) * std::ldexp(uniform(rng, 1, 2), -540 + static_cast<int>(rng() % 8));
        break;
    }
  }
  return out;
}

/// A (m x k) and B (k x n) of a kind.
std::pair<HostMatrix, HostMatrix> random_pair(std::mt19937_64& rng, std::size_t m, std::size_t k,
                                              std::size_t n, Data kind, double phi_max,
                                              const GemmConfig& c) {
  const double theta = theta_of(c, k);
  const HostMatrix A = matrix(random_lines(rng, m, k, kind, phi_max, c, theta, true));
  HostMatrix Bt = matrix(random_lines(rng, n, k, kind, phi_max, c, theta, false));
  if (k == 0) return {matrix(m, 0), matrix(0, n)};
  return {A, transpose(Bt)};
}

// ===========================================================================================
// 1. Bit-exactness

/// Compares ebla::gemm's C with the steps written out, entry by entry.
void compare_product(const HostMatrix& A, const HostMatrix& B, const GemmConfig& c,
                     const std::string& data, Tally& tally) {
  const GemmResult r = ebla::gemm(A, B, c);
  const HostMatrix E = expected_product(A, B, c);
  ASSERT_EQ(r.C.extent(0), A.extent(0));
  ASSERT_EQ(r.C.extent(1), B.extent(1));
  for (std::size_t i = 0; i < E.extent(0); ++i)
    for (std::size_t j = 0; j < E.extent(1); ++j) {
      ++tally.cases;
      if (!same(r.C(i, j), E(i, j)))
        tally.mismatch(what(c) + " x" + std::to_string(c.words) + ", " + data + ", " +
                       std::to_string(A.extent(0)) + "x" + std::to_string(A.extent(1)) + "x" +
                       std::to_string(B.extent(1)) + ": C(" + std::to_string(i) + ", " +
                       std::to_string(j) + ") = " + hex(r.C(i, j)) + ", expected " + hex(E(i, j)));
    }
}

TEST(GemmComputation, MatchesTheStepsOfTheHeaderBitForBit) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Format> inputs = {formats::binary16(), formats::bfloat16(),
                                      formats::fp8_e4m3(), formats::fp8_e5m2(),
                                      formats::fp6_e2m3(), formats::fp4_e2m1()};
  const std::vector<std::pair<std::string, MatrixUnit>> unit_list = {
      {"fma_binary32", units::fma_binary32()},
      {"v100_fp16", units::v100_fp16()},
      {"avx512_bf16_dot", units::avx512_bf16_dot()},
      {"amx_bf16", units::amx_bf16()},
      {"binary16_accumulation", binary16_accumulation()}};
  const Data kinds[] = {Data::wide,         Data::uniform, Data::positive,
                        Data::cancellation, Data::tiny,    Data::zeros};
  std::mt19937_64 rng(101);
  Tally tally;
  std::uint64_t configs = 0;
  for (const auto& [name, unit] : unit_list)
    for (const Format& in : inputs) {
      if (!contains(unit.accumulation, in)) continue;  // bfloat16 into binary16
      for (int p = 1; p <= 3; ++p)
        for (bool scaling : {true, false})
          for (bool subnormals : {true, false}) {
            const GemmConfig c = emulated(unit, in, p, scaling, subnormals);
            ++configs;
            for (int rep = 0; rep < 48; ++rep) {
              const std::size_t m = 1 + rng() % 4, n = 1 + rng() % 4;
              const std::size_t k = rep == 0 ? rng() % 3 : 1 + rng() % 40;
              const Data kind = kinds[rng() % 6];
              // without scaling keep the entries below fp8's overflow (448) so that the words
              // stay finite (fp6 and fp4 saturate)
              const double phi = scaling ? 10 : 2.5;
              const auto [A, B] = random_pair(rng, m, k, n, kind, phi, c);
              compare_product(A, B, c, to_string(kind), tally);
            }
          }
    }
  std::cout << "[ time     ] " << configs << " configs: " << seconds_since(start) << " s\n";
  tally.report("bit_exact_entries");
}

TEST(GemmComputation, MatchesTheStepsOnWideInputFormatsBitForBit) {
  // binary64, binary32 and tf32 words: with binary64 input every word after the first is zero
  // (the input is already in the format) and C is the unit's product of A and B, scaled
  const std::vector<std::pair<MatrixUnit, Format>> pairs = {
      {units::fma_binary64(), formats::binary64()}, {units::fma_binary64(), formats::binary32()},
      {units::fma_binary32(), formats::binary32()}, {units::fma_binary32(), formats::tf32()},
      {units::a100_tf32(), formats::tf32()},        {units::a100_tf32(), formats::binary16()},
      {units::fma_binary64(), formats::bfloat16()}};
  const Data kinds[] = {Data::wide,         Data::uniform, Data::positive,
                        Data::cancellation, Data::tiny,    Data::zeros};
  std::mt19937_64 rng(102);
  Tally tally;
  for (const auto& [unit, in] : pairs)
    for (int p = 1; p <= 3; ++p)
      for (bool scaling : {true, false})
        for (bool subnormals : {true, false}) {
          const GemmConfig c = emulated(unit, in, p, scaling, subnormals);
          for (int rep = 0; rep < 12; ++rep) {
            const std::size_t m = 1 + rng() % 4, n = 1 + rng() % 4, k = 1 + rng() % 30;
            const Data kind = kinds[rng() % 6];
            const auto [A, B] = random_pair(rng, m, k, n, kind, scaling ? 10 : 2.5, c);
            compare_product(A, B, c, to_string(kind), tally);
          }
        }
  // the smallest case: 1.5 * 1.25 in binary64 words is 1.875 whatever p, scaling, subnormals
  for (int p = 1; p <= 3; ++p)
    for (bool scaling : {true, false})
      for (bool subnormals : {true, false}) {
        const GemmConfig c =
            emulated(units::fma_binary64(), formats::binary64(), p, scaling, subnormals);
        const GemmResult r = ebla::gemm(matrix({{1.5}}), matrix({{1.25}}), c);
        ++tally.cases;
        if (!same(r.C(0, 0), 1.875))
          tally.mismatch(what(c) + " x" + std::to_string(p) + ": 1.5 * 1.25 = " + hex(r.C(0, 0)) +
                         " (bound " + num(r.bound(0, 0)) + ")");
      }
  tally.report("bit_exact_wide_formats");
}

TEST(GemmComputation, WordsAreRoundedToNearestOnTiesAndAtTheEdgesOfTheRange) {
  // one unscaled word of each entry of a column A times B = 1 on a binary64 FMA: C is the word
  // (but for the sign of a zero: the unit adds it to +0), which must be round_to's: halfway cases with an even and an odd neighbour at every
  // exponent of the format and below it, one binary64 ulp either side of them, and the
  // thresholds fmin, fmax and the overflow, for every format of the catalogue with t <= 52
  Tally tally;
  for (const auto& entry : ebla::format_catalogue())
    for (bool subnormals : {true, false}) {
      Format f = entry.format;
      if (f.t > 52) continue;
      const GemmConfig c = emulated(units::fma_binary64(), f, 1, false, subnormals);
      f.subnormals = f.subnormals && subnormals;
      std::vector<double> values{f.fmin(), f.fmax(), std::nextafter(f.fmax(), 0.0), 2 * f.fmax(), f.fmin() / 2};
      for (int e = f.emin - f.t - 2; e <= f.emax + 1; ++e)
        for (double j : {0.0, 1.0, 2.0, 3.0}) {
          const double tie = std::ldexp(std::ldexp(1.0, f.t - 1) + j + 0.5, e - f.t + 1);
          for (double y : {tie, std::nextafter(tie, 0.0), std::nextafter(tie, inf)})
            for (double sign : {1.0, -1.0}) values.push_back(sign * y);
        }
      HostMatrix A = matrix(values.size(), 1), B = matrix({{1.0}});
      for (std::size_t i = 0; i < values.size(); ++i) A(i, 0) = values[i];
      const GemmResult r = ebla::gemm(A, B, c);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const double want = ebla::round_to(values[i], f, ebla::Rounding::nearest_even);
        ++tally.cases;
        const bool zeros = want == 0 && r.C(i, 0) == 0, nans = std::isnan(want) && std::isnan(r.C(i, 0));
        if (!same(r.C(i, 0), want) && !zeros && !nans)
          tally.mismatch(entry.name + (subnormals ? "" : " (no subnormals)") + ": word of " + hex(values[i]) +
                         " is " + hex(r.C(i, 0)) + ", round_to gives " + hex(want));
      }
    }
  tally.report("words_round_to_nearest");
}

TEST(GemmComputation, SmallIntegersAreExact) {
  // 1..8: every word, product and sum is exact, whatever the scaling
  const HostMatrix A = matrix({{1, 2}, {3, 4}}), B = matrix({{5, 6}, {7, 8}});
  for (bool scaling : {true, false})
    for (int p = 1; p <= 3; ++p) {
      const GemmConfig c = emulated(units::fma_binary32(), formats::bfloat16(), p, scaling);
      const GemmResult r = ebla::gemm(A, B, c);
      EXPECT_EQ(r.C(0, 0), 19.0);
      EXPECT_EQ(r.C(0, 1), 22.0);
      EXPECT_EQ(r.C(1, 0), 43.0);
      EXPECT_EQ(r.C(1, 1), 50.0);
      // theta = min(fmax of bfloat16, sqrt(FLT_MAX / 2))
      EXPECT_EQ(r.theta,
                std::min(formats::bfloat16().fmax(), std::sqrt(formats::binary32().fmax() / 2)));
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
          EXPECT_GE(r.bound(i, j), 0.0);
          EXPECT_LT(r.bound(i, j), 1e-4 * 50) << "the bound of an exact product is of order U";
        }
      EXPECT_EQ(r.norm_a, 7.0);
      EXPECT_EQ(r.norm_b, 15.0);
    }
}

TEST(GemmComputation, ScalingChangesTheResultAsComputedByHand) {
  // fp6-E2M3 (fmax 7.5, fmin 1, subnormal quantum 1/8), A = [0.01 0.02], B = [1; 1], k = 2.
  // Without scaling both entries of A round to 0: C = 0.
  // With scaling theta = 7.5 (sqrt(FLT_MAX / 2) is larger): lambda = 2^8 (0.02 * 2^8 = 5.12),
  // mu = 4; words 2.56 -> 2.5, 5.12 -> 5, so C = (2.5 * 4 + 5 * 4) / 2^10 = 30 / 1024.
  // Two words: 0.06 / 2^-4 = 0.96 -> 1 (subnormal), 0.12 / 2^-4 = 1.92 -> 1.875, B's second
  // word is 0: C = (30 + (1 * 4 + 1.875 * 4) / 16) / 1024 = 30.71875 / 1024.
  const HostMatrix A = matrix({{0.01, 0.02}}), B = matrix({{1}, {1}});
  const MatrixUnit f32 = units::fma_binary32();
  EXPECT_EQ(ebla::gemm(A, B, emulated(f32, formats::fp6_e2m3(), 1, false)).C(0, 0), 0.0);
  const GemmResult one = ebla::gemm(A, B, emulated(f32, formats::fp6_e2m3(), 1, true));
  EXPECT_EQ(one.theta, 7.5);
  EXPECT_EQ(one.C(0, 0), 30.0 / 1024);
  EXPECT_EQ(ebla::gemm(A, B, emulated(f32, formats::fp6_e2m3(), 2, true)).C(0, 0), 30.71875 / 1024);
  // the bound of the unscaled run must cover the whole product (0.03): its words are all zero
  const GemmResult off = ebla::gemm(A, B, emulated(f32, formats::fp6_e2m3(), 1, false));
  EXPECT_GE(off.bound(0, 0), 0.03);
  EXPECT_GE(one.bound(0, 0), 0.03 - 30.0 / 1024);

  // fp8-E4M3 (fmax 448, overflow to NaN): A = [1000], B = [1]. Without scaling the word is NaN
  // and the bound +inf; with scaling lambda = 1/4 (250 -> 256), mu = 256: C = 2^16 / 2^6.
  const HostMatrix A8 = matrix({{1000}}), B8 = matrix({{1}});
  const GemmResult nan8 = ebla::gemm(A8, B8, emulated(f32, formats::fp8_e4m3(), 1, false));
  EXPECT_TRUE(std::isnan(nan8.C(0, 0))) << nan8.C(0, 0);
  EXPECT_EQ(nan8.bound(0, 0), inf);
  EXPECT_EQ(nan8.normwise_bound, inf);
  const GemmResult scaled8 = ebla::gemm(A8, B8, emulated(f32, formats::fp8_e4m3(), 1, true));
  EXPECT_EQ(scaled8.C(0, 0), 1024.0);
  EXPECT_GE(scaled8.bound(0, 0), 24.0);
  EXPECT_LE(scaled8.bound(0, 0), 1000 * (1.0 / 16) * 1.01) << "u |a| |b| plus a little";
}

TEST(GemmComputation, ResultConfigHasTheUnitAsRun) {
  const HostMatrix A = matrix({{1, 2}}), B = matrix({{3}, {4}});
  const GemmResult r =
      ebla::gemm(A, B, emulated(units::v100_fp16(), formats::fp8_e5m2(), 2, true, false));
  EXPECT_EQ(r.config.unit.input.t, formats::fp8_e5m2().t);
  EXPECT_FALSE(r.config.unit.input_subnormals);
  EXPECT_FALSE(r.config.unit.output_subnormals);
  EXPECT_EQ(r.config.words, 2);
  EXPECT_EQ(r.C(0, 0), 11.0);
}

// Matrices in another layout (as a device's matrices would come, copied through host memory)
// give the bits of the same matrices as HostMatrix, for gemm and gemm_select.
TEST(GemmComputation, ViewsInAnotherLayoutGiveTheBitsOfTheHostMatrices) {
  std::mt19937_64 rng(77);
  const GemmConfig configs[] = {emulated(units::v100_fp16(), formats::binary16(), 2),
                                on_engine(GemmEngine::sgemm, formats::bfloat16(), 2),
                                on_engine(GemmEngine::dgemm, formats::binary64(), 1)};
  for (const GemmConfig& c : configs) {
    const auto [A, B] = random_pair(rng, 7, 13, 5, Data::wide, 10, c);
    Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> AL("AL", 7, 13), BL("BL", 13, 5);
    Kokkos::deep_copy(AL, A);
    Kokkos::deep_copy(BL, B);
    const GemmResult want = ebla::gemm(A, B, c), got = ebla::gemm(AL, BL, c);
    for (std::size_t i = 0; i < 7; ++i)
      for (std::size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(ebla::bit_cast<std::uint64_t>(got.C(i, j)), ebla::bit_cast<std::uint64_t>(want.C(i, j))) << what(c);
        EXPECT_EQ(got.bound(i, j), want.bound(i, j)) << what(c);
      }
    EXPECT_EQ(got.normwise_bound, want.normwise_bound);
  }
  ebla::GemmOptions o;
  o.tolerance = 1e-3;
  const auto [A, B] = random_pair(rng, 6, 9, 4, Data::uniform, 10, configs[2]);
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> AL("AL", 6, 9), BL("BL", 9, 4);
  Kokkos::deep_copy(AL, A);
  Kokkos::deep_copy(BL, B);
  EXPECT_EQ(ebla::describe(ebla::gemm_select(AL, BL, o).config), ebla::describe(ebla::gemm_select(A, B, o).config));
}

TEST(GemmComputation, EmptyInnerDimensionGivesZero) {
  for (const GemmConfig& c : {emulated(units::v100_fp16(), formats::binary16(), 2),
                              on_engine(GemmEngine::sgemm, formats::bfloat16(), 3),
                              on_engine(GemmEngine::dgemm, formats::binary64(), 1)}) {
    const GemmResult r = ebla::gemm(matrix(3, 0), matrix(0, 2), c);
    ASSERT_EQ(r.C.extent(0), 3u);
    ASSERT_EQ(r.C.extent(1), 2u);
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 2; ++j) {
        EXPECT_EQ(r.C(i, j), 0.0) << what(c);
        EXPECT_GE(r.bound(i, j), 0.0);
        EXPECT_LE(r.bound(i, j), 1e-300) << what(c);
      }
    EXPECT_LE(r.normwise_bound, 1e-300);
    // and no rows or no columns
    const GemmResult e = ebla::gemm(matrix(0, 4), matrix(4, 2), c);
    EXPECT_EQ(e.C.extent(0), 0u);
    EXPECT_EQ(e.C.extent(1), 2u);
  }
}

// ===========================================================================================
// 2-4. The certified bounds against a __float128 reference

/// A B in __float128: every product exact (106 bits), the sum rounded; its error is at most
/// gamma_k(2^-113) sum |a b|, returned as `allow`.
struct Reference {
  ebla_test::QuadVector ab, allow;
  std::size_t n = 0;
  std::vector<bool> exact;  ///< the sum was exact (TwoSum)
  quad at(std::size_t i, std::size_t j) const { return ab[i * n + j]; }
};

Reference reference(const HostMatrix& A, const HostMatrix& B) {
  const std::size_t m = A.extent(0), k = A.extent(1), n = B.extent(1);
  Reference r;
  r.n = n;
  r.ab = ebla_test::QuadVector(m * n);
  r.allow = ebla_test::QuadVector(m * n);
  r.exact.assign(m * n, true);
  const quad uq = ldexpq(1, -113);
  const quad g = k * uq / (1 - k * uq);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      quad s = 0, abs = 0;
      bool exact = true;
      for (std::size_t l = 0; l < k; ++l) {
        const quad p = static_cast<quad>(A(i, l)) * static_cast<quad>(B(l, j));
        const quad t = s + p, bv = t - s, av = t - bv;
        exact = exact && (s - av) + (p - bv) == 0;
        s = t;
        abs += qabs(p);
      }
      r.ab[i * n + j] = s;
      r.allow[i * n + j] = g * abs * (1 + 4 * uq) + ldexpq(1, -16000);
      r.exact[i * n + j] = exact;
    }
  return r;
}

/// What the bound checks found.
struct BoundTally {
  std::uint64_t entries = 0, infinite = 0, violations = 0;
  std::uint64_t rows = 0, row_violations = 0, normwise_mismatches = 0;
  std::uint64_t probable_entries = 0, probable_exceeded = 0, probable_above_bound = 0;
  double worst_ratio = 0;  ///< max error / bound over finite bounds
  std::vector<std::string> first;
  void note(const std::string& s) {
    if (first.size() < 10) first.push_back(s);
  }
  void report(const std::string& name) const {
    std::cout << "[ counts   ] " << name << ": " << entries << " entries (" << infinite
              << " with an infinite bound), " << violations << " violations, " << rows
              << " rows normwise, " << row_violations << " normwise violations, "
              << normwise_mismatches << " normwise mismatches; probable bound exceeded in "
              << probable_exceeded << " of " << probable_entries << ", above the bound "
              << probable_above_bound << "; max error/bound " << num(worst_ratio) << "\n";
    ::testing::Test::RecordProperty(name + "_entries", std::to_string(entries));
    std::string s;
    for (const auto& m : first) s += "\n  " + m;
    EXPECT_EQ(violations, 0u) << name << s;
    EXPECT_EQ(row_violations, 0u) << name << s;
    EXPECT_EQ(normwise_mismatches, 0u) << name << s;
    EXPECT_EQ(probable_above_bound, 0u) << name << s;
    EXPECT_GT(entries, 0u) << name;
  }
};

std::string shape(const HostMatrix& A, const HostMatrix& B) {
  return std::to_string(A.extent(0)) + "x" + std::to_string(A.extent(1)) + "x" +
         std::to_string(B.extent(1));
}

/// Absolute slack between bounds evaluated along different routes, for their underflow margins.
constexpr double underflow_slack = 1e-318;

/// Checks every bound of r (computed with config c from A and B) against the reference.
void check_bounds(const HostMatrix& A, const HostMatrix& B, const GemmConfig& c,
                  const GemmResult& r, const std::string& data, BoundTally& t) {
  const std::size_t m = A.extent(0), n = B.extent(1);
  const Reference ref = reference(A, B);
  const std::string name = what(c) + ", " + data + ", " + shape(A, B);
  ASSERT_EQ(r.bound.extent(0), m) << name;
  ASSERT_EQ(r.bound.extent(1), n) << name;
  ASSERT_EQ(r.probable_bound.extent(0), m) << name;
  double max_row_bound = 0;
  bool any_infinite = false;
  for (std::size_t i = 0; i < m; ++i) {
    quad row_error = 0, row_allow = 0;
    double row_bound = 0;
    for (std::size_t j = 0; j < n; ++j) {
      ++t.entries;
      const double b = r.bound(i, j), pb = r.probable_bound(i, j);
      row_bound += b;
      if (!(pb <= b)) {
        ++t.probable_above_bound;
        t.note(name + ": probable bound " + num(pb) + " > bound " + num(b));
      }
      if (!(b >= 0)) {
        ++t.violations;
        t.note(name + ": bound(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + num(b));
        continue;
      }
      if (b == inf) {
        ++t.infinite;
        any_infinite = true;
        continue;
      }
      const quad err = qabs(static_cast<quad>(r.C(i, j)) - ref.at(i, j));
      const quad allow = ref.allow[i * n + j] + err * ldexpq(1, -110);
      row_error += err;
      row_allow += allow;
      if (!std::isfinite(r.C(i, j)) || !(err <= static_cast<quad>(b) + allow)) {
        ++t.violations;
        t.note(name + ": C(" + std::to_string(i) + ", " + std::to_string(j) +
               ") = " + hex(r.C(i, j)) + ", A B = " + hex(static_cast<double>(ref.at(i, j))) +
               ", error " + num(static_cast<double>(err)) + " > bound " + num(b));
        continue;
      }
      if (b > 0) t.worst_ratio = std::max(t.worst_ratio, static_cast<double>(err / b));
      ++t.probable_entries;
      if (err > static_cast<quad>(pb) + allow) ++t.probable_exceeded;
    }
    max_row_bound = std::max(max_row_bound, row_bound);
    ++t.rows;
    if (r.normwise_bound != inf &&
        !(row_error <= static_cast<quad>(r.normwise_bound) + row_allow)) {
      ++t.row_violations;
      t.note(name + ": row " + std::to_string(i) + " error " + num(static_cast<double>(row_error)) +
             " > normwise bound " + num(r.normwise_bound));
    }
  }
  // normwise_bound = max_i sum_j bound(i, j), up to the rounding of both (relative) and their
  // margins for underflow in their own evaluation (multiples of 2^-1075, added per entry on
  // one side and per row on the other: an absolute slack far below any bound of a result that
  // is not itself subnormal)
  const bool ok = any_infinite
                      ? r.normwise_bound == inf
                      : r.normwise_bound >= max_row_bound * (1 - 1e-12) - underflow_slack &&
                            r.normwise_bound <= max_row_bound * 1.01 + underflow_slack;
  if (!ok) {
    ++t.normwise_mismatches;
    t.note(name + ": normwise bound " + num(r.normwise_bound) + ", max row sum of the bound " +
           num(max_row_bound));
  }
}

/// One gemm run and its checks; also that gemm_normwise_bound agrees.
void run_and_check(const HostMatrix& A, const HostMatrix& B, const GemmConfig& c,
                   const std::string& data, BoundTally& t) {
  const GemmResult r = ebla::gemm(A, B, c);
  check_bounds(A, B, c, r, data, t);
  const double nb = ebla::gemm_normwise_bound(A, B, c);
  if (!same(nb, r.normwise_bound)) {
    ++t.normwise_mismatches;
    t.note(what(c) + ", " + data + ", " + shape(A, B) + ": gemm_normwise_bound " + hex(nb) +
           ", gemm " + hex(r.normwise_bound));
  }
}

/// Every input format a config's accumulation holds, from the catalogue's list.
std::vector<Format> inputs_for(const Format& acc) {
  std::vector<Format> out;
  for (const auto& f : ebla::format_catalogue())
    if (contains(acc, f.format)) out.push_back(f.format);
  return out;
}

/// The sweep over one config family: random formats, words, scaling, subnormals, data, shapes.
void sweep(std::mt19937_64& rng, const GemmConfig& base, const std::vector<Format>& inputs,
           int cases, BoundTally& t, bool vary_words = true) {
  const Data kinds[] = {Data::wide, Data::uniform, Data::positive, Data::cancellation,
                        Data::tiny, Data::zeros,   Data::huge,     Data::subnormal_results};
  for (int n_case = 0; n_case < cases; ++n_case) {
    GemmConfig c = base;
    c.input = inputs[rng() % inputs.size()];
    if (vary_words) c.words = 1 + static_cast<int>(rng() % 3);
    c.scaling = rng() % 4 != 0;
    c.subnormals = rng() % 2 == 0;
    Data kind = kinds[rng() % 8];
    if (kind == Data::huge && c.scaling) kind = Data::wide;  // huge: the unscaled runs' case
    const std::size_t m = 1 + rng() % 8, n = 1 + rng() % 8;
    const int shape_kind = static_cast<int>(rng() % 8);
    const std::size_t k = shape_kind == 0   ? rng() % 2
                          : shape_kind == 1 ? 70 + rng() % 60
                                            : 2 + rng() % 40;
    const auto [A, B] = random_pair(rng, shape_kind == 2 ? 1 : m, k, shape_kind == 3 ? 1 : n, kind,
                                    kind == Data::huge ? 6 : 10, c);
    run_and_check(A, B, c, to_string(kind), t);
  }
}

TEST(GemmBounds, HoldOnEveryCatalogueUnit) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(201);
  BoundTally all;
  for (const auto& entry : ebla::matrix_unit_catalogue()) {
    BoundTally t;
    sweep(rng, emulated(entry.unit, entry.unit.input, 1), inputs_for(entry.unit.accumulation), 1500,
          t);
    t.report(entry.name);
    all.entries += t.entries;
  }
  std::cout << "[ counts   ] catalogue units: " << all.entries << " entries, "
            << seconds_since(start) << " s\n";
}

TEST(GemmBounds, ASubnormalInputThatSetsTheAlignmentIsCovered) {
  // V100 (exponent sums, no extra bit, toward zero), binary16 words as given: a = 2^-24
  // (subnormal) times b = 2^15 is 2^-9, but its exponent sum is emin + 15 = 1, so the grid is
  // 2^-22; the three products 2^-3 (1 + 2^-10)^2 = 2^-3 + 2^-12 + 2^-23 each lose 2^-23. The
  // error 3 2^-23 exceeds what the truncation relative to the largest term allows
  // (delta sum |a b|, as for leading-bit alignment); the bound's absolute term covers it.
  const double s = 1 + std::ldexp(1.0, -10);
  const HostMatrix A = matrix({{std::ldexp(1.0, -24), s, s, s}});
  const HostMatrix B = matrix({{std::ldexp(1.0, 15)}, {std::ldexp(s, -3)}, {std::ldexp(s, -3)}, {std::ldexp(s, -3)}});
  const GemmConfig c = emulated(units::v100_fp16(), formats::binary16(), 1, false);
  const GemmResult r = ebla::gemm(A, B, c);
  const Reference ref = reference(A, B);
  const double err = static_cast<double>(qabs(static_cast<quad>(r.C(0, 0)) - ref.at(0, 0)));
  EXPECT_EQ(err, 3 * std::ldexp(1.0, -23));
  double abs_ab = 0;
  for (std::size_t l = 0; l < 4; ++l) abs_ab += std::fabs(A(0, l) * B(l, 0));
  const ebla::AccumulationModel m = ebla::accumulation_model(c, 4);
  EXPECT_GT(err, m.delta * abs_ab) << "the relative truncation term alone would not hold";
  EXPECT_LE(err, r.bound(0, 0));
}

TEST(GemmBounds, HoldOnUnitVariants) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(202);
  std::vector<std::pair<std::string, MatrixUnit>> variants;
  {
    MatrixUnit u = units::fma_binary32();
    u.exact_products = false;
    u.product = formats::bfloat16();
    variants.push_back({"fma_binary32, products rounded to bfloat16", u});
    u = units::v100_fp16();
    u.exact_products = false;
    u.product = formats::tf32();
    variants.push_back({"v100_fp16, products rounded to tf32", u});
    u = units::a100_fp16();
    u.addend = ebla::AddendJoin::after_products;
    variants.push_back({"a100_fp16, c after the products", u});
    u = units::fma_binary32();
    u.addend = ebla::AddendJoin::after_products;
    variants.push_back({"fma_binary32, c after the product", u});
    u = units::amx_bf16();
    u.chains = 4;
    u.order = ebla::ProductOrder::backward;
    variants.push_back({"amx_bf16, 4 chains, backward", u});
    u = units::a100_bf16();
    u.rounding = Rounding::nearest_even;
    u.extra_bits = 0;
    variants.push_back({"a100_bf16 adder to nearest, no extra bit (truncating)", u});
    u = units::avx512_bf16_dot();
    u.block = 8;
    u.chains = 3;
    u.rounding = Rounding::toward_zero;
    u.addend = ebla::AddendJoin::after_products;
    variants.push_back({"each addition toward zero, 3 chains, c after", u});
    u = units::h100_fp16();
    u.input_subnormals = false;
    u.output_subnormals = false;
    variants.push_back({"h100_fp16, DAZ/FTZ", u});
    variants.push_back({"binary16 accumulation, b = 4", binary16_accumulation(4)});
    variants.push_back({"binary16 accumulation, b = 1", binary16_accumulation(1)});
    variants.push_back({"binary16 truncating toward zero, b = 8", binary16_truncating(8)});
    u = binary16_accumulation(2);
    u.normalisation = ebla::Normalisation::each_addition;
    u.chains = 2;
    u.addend = ebla::AddendJoin::after_products;
    variants.push_back({"binary16 each addition, 2 chains", u});
    u = units::mi210_fp16();
    u.block = 8;
    u.rounding = Rounding::toward_zero;
    u.exact_products = true;
    variants.push_back({"pairwise b = 8 toward zero, exact products, FTZ", u});
    u = units::mi210_bf16();
    u.block = 2;
    u.extra_bits = 0;
    u.input_subnormals = true;
    u.output_subnormals = true;
    variants.push_back({"pairwise b = 2, no extra bit (truncating), subnormals", u});
    u = binary16_accumulation(16);
    u.normalisation = ebla::Normalisation::each_addition;
    u.addend = ebla::AddendJoin::after_products;
    u.pairwise = true;
    variants.push_back({"binary16 pairwise, b = 16", u});
  }
  for (const auto& [name, unit] : variants) {
    BoundTally t;
    sweep(rng, emulated(unit, unit.input, 1), inputs_for(unit.accumulation), 800, t);
    t.report(name);
  }
  std::cout << "[ time     ] variants: " << seconds_since(start) << " s\n";
}

TEST(GemmBounds, HoldOnTheHostEngines) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(203);
  {
    BoundTally t;
    sweep(rng, on_engine(GemmEngine::sgemm, formats::bfloat16(), 1),
          inputs_for(formats::binary32()), 3000, t);
    t.report("sgemm");
  }
  {
    BoundTally t;
    sweep(rng, on_engine(GemmEngine::dgemm, formats::binary64(), 1), {formats::binary64()}, 1500, t,
          false);
    t.report("dgemm");
  }
  if (ebla::host::gemm_engines().onednn_bf16) {
    BoundTally t;
    sweep(rng, on_engine(GemmEngine::onednn_bf16, formats::bfloat16(), 1),
          inputs_for(formats::bfloat16()), 3000, t);
    t.report("onednn_bf16");
  } else {
    std::cout << "[ skipped  ] onednn_bf16: not available here\n";
  }
  std::cout << "[ time     ] engines: " << seconds_since(start) << " s\n";
}

TEST(GemmBounds, HoldWithLargeKAndBinary16Accumulation) {
  // k in the thousands, fp8 words into a binary16 accumulator: theta = sqrt(65504 / k) is
  // below fmax, and all-positive data makes the accumulation error as large as it gets
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(204);
  BoundTally t;
  int cases = 0;
  for (const MatrixUnit& unit : {binary16_accumulation(4), binary16_truncating(8)})
    for (const Format& in : {formats::fp8_e4m3(), formats::fp8_e5m2()})
      for (std::size_t k : {1000u, 2999u, 4100u})
        for (Data kind : {Data::positive, Data::uniform})
          for (int p : {1, 2}) {
            const GemmConfig c = emulated(unit, in, p, true, (k + p) % 2 == 0);
            EXPECT_LT(theta_of(c, k), in.fmax());
            const auto [A, B] = random_pair(rng, 8, k, 6, kind, 0, c);
            const GemmResult r = ebla::gemm(A, B, c);
            EXPECT_EQ(r.theta, std::sqrt(65504.0 / static_cast<double>(k))) << what(c);
            check_bounds(A, B, c, r, to_string(kind), t);
            ++cases;
          }
  // the same on a binary32-accumulation tensor core with k = 4097 (not a multiple of b = 4)
  for (Data kind : {Data::positive, Data::uniform, Data::wide}) {
    const GemmConfig c = emulated(units::v100_fp16(), formats::binary16(), 1);
    const auto [A, B] = random_pair(rng, 3, 4097, 3, kind, 10, c);
    check_bounds(A, B, c, ebla::gemm(A, B, c), to_string(kind), t);
    ++cases;
  }
  std::cout << "[ time     ] " << cases << " large-k cases: " << seconds_since(start) << " s\n";
  t.report("large_k");
}

TEST(GemmBounds, OverflowWithoutScalingGivesAnInfiniteOrAValidBound) {
  // huge entries without scaling: fp8-E4M3 overflows to NaN, fp8-E5M2 to inf (bound +inf);
  // fp6 / fp4 saturate (the bound stays finite and must hold); a binary16 accumulator overflows
  std::mt19937_64 rng(205);
  BoundTally t;
  std::uint64_t saturated_finite = 0;
  const MatrixUnit f32 = units::fma_binary32();
  for (int rep = 0; rep < 40; ++rep) {
    for (const Format& in : {formats::fp8_e4m3(), formats::fp8_e5m2(), formats::fp6_e2m3(),
                             formats::fp6_e3m2(), formats::fp4_e2m1()}) {
      for (const MatrixUnit& unit : {f32, binary16_accumulation(4), binary16_truncating(8)}) {
        const GemmConfig c = emulated(unit, in, 1 + rep % 3, false, rep % 2 == 0);
        const auto [A, B] = random_pair(rng, 3, 1 + rng() % 20, 3, Data::huge, 6, c);
        const GemmResult r = ebla::gemm(A, B, c);
        check_bounds(A, B, c, r, "huge", t);
        for (std::size_t i = 0; i < 3; ++i)
          for (std::size_t j = 0; j < 3; ++j) {
            if (!std::isfinite(r.C(i, j))) {
              EXPECT_EQ(r.bound(i, j), inf) << what(c) << ": C is " << r.C(i, j);
            }
            if (in.overflow == ebla::Overflow::saturate &&
                unit.accumulation == formats::binary32() && std::isfinite(r.bound(i, j)))
              ++saturated_finite;
          }
      }
    }
  }
  // one entry past fp8-E4M3's fmax in a row: that row's bounds are +inf
  const HostMatrix A = matrix({{1, 2, 500}, {1, 2, 3}}), B = matrix({{1}, {1}, {1}});
  const GemmResult r = ebla::gemm(A, B, emulated(f32, formats::fp8_e4m3(), 1, false));
  EXPECT_EQ(r.bound(0, 0), inf);
  EXPECT_EQ(r.C(1, 0), 6.0);
  EXPECT_LT(r.bound(1, 0), 1.0);
  EXPECT_EQ(r.normwise_bound, inf);
  // a saturating format keeps a finite bound that covers the lost magnitude
  const HostMatrix S = matrix({{100, 1}}), T = matrix({{1}, {1}});
  const GemmResult s = ebla::gemm(S, T, emulated(f32, formats::fp6_e2m3(), 1, false));
  EXPECT_EQ(s.C(0, 0), 7.5 + 1);
  EXPECT_TRUE(std::isfinite(s.bound(0, 0)));
  EXPECT_GE(s.bound(0, 0), 101 - 8.5);
  std::cout << "[ counts   ] saturated fp6/fp4 entries with a finite bound: " << saturated_finite
            << "\n";
  EXPECT_GT(saturated_finite, 0u);
  t.report("overflow_without_scaling");
}

// ===========================================================================================
// 3. The normwise bound

/// A random unit of the catalogue whose accumulation format holds bfloat16 inputs (every one but
/// the binary16-result units).
ebla::MatrixUnit bfloat16_unit(std::mt19937_64& rng, const std::vector<ebla::NamedMatrixUnit>& cat) {
  for (;;) {
    const ebla::MatrixUnit& u = cat[rng() % cat.size()].unit;
    if (u.accumulation.emax >= formats::bfloat16().emax) return u;
  }
}

TEST(GemmNormwise, EqualsGemmNormwiseBoundAndTheRowSumsOfTheEntrywiseBound) {
  std::mt19937_64 rng(301);
  Tally tally;
  for (int rep = 0; rep < 200; ++rep) {
    const auto& cat = ebla::matrix_unit_catalogue();
    GemmConfig c;
    switch (rep % 4) {
      case 0: c = emulated(bfloat16_unit(rng, cat), formats::bfloat16(), 1); break;
      case 1: c = on_engine(GemmEngine::sgemm, formats::binary16(), 1); break;
      case 2: c = emulated(binary16_accumulation(4), formats::fp8_e4m3(), 1); break;
      default: c = on_engine(GemmEngine::dgemm, formats::binary64(), 1); break;
    }
    if (c.engine != GemmEngine::dgemm) {
      c.input = rep % 8 < 4 ? c.input : formats::fp8_e5m2();
      c.words = 1 + static_cast<int>(rng() % 3);
      c.scaling = rng() % 3 != 0;
      c.subnormals = rng() % 2 == 0;
    }
    const Data kind = rep % 3 == 0 ? Data::wide : rep % 3 == 1 ? Data::uniform : Data::tiny;
    const auto [A, B] = random_pair(rng, 1 + rng() % 9, 1 + rng() % 50, 1 + rng() % 9, kind, 10, c);
    const GemmResult r = ebla::gemm(A, B, c);
    double max_row = 0;
    for (std::size_t i = 0; i < r.bound.extent(0); ++i) {
      double s = 0;
      for (std::size_t j = 0; j < r.bound.extent(1); ++j) s += r.bound(i, j);
      max_row = std::max(max_row, s);
    }
    const double nb = ebla::gemm_normwise_bound(A, B, c);
    ++tally.cases;
    if (!same(nb, r.normwise_bound))
      tally.mismatch(what(c) + ": gemm_normwise_bound " + hex(nb) + " != gemm's " +
                     hex(r.normwise_bound));
    if (!(r.normwise_bound >= max_row * (1 - 1e-12) - underflow_slack &&
          r.normwise_bound <= 1.01 * max_row + underflow_slack))
      tally.mismatch(what(c) + ": normwise " + num(r.normwise_bound) + ", max row sum " +
                     num(max_row));
    EXPECT_EQ(r.norm_a, norm_inf(A));
    EXPECT_EQ(r.norm_b, norm_inf(B));
    // without componentwise bounds: the same normwise bound, no matrices
    GemmConfig nc = c;
    nc.componentwise = false;
    const GemmResult rn = ebla::gemm(A, B, nc);
    if (!same(rn.normwise_bound, r.normwise_bound))
      tally.mismatch(what(c) + ": componentwise = false gives " + hex(rn.normwise_bound) +
                     ", true " + hex(r.normwise_bound));
    EXPECT_EQ(rn.bound.size(), 0u);
    EXPECT_EQ(rn.paper.dbea.size(), 0u);
  }
  tally.report("normwise");
}

TEST(GemmNormwise, AccumulationModelFollowsTheTableOfDocsGemm) {
  // docs/gemm.md: delta = U_r + r 2^(1 - T - extra) (1 + U_r), r = b + 1 (at_end) or 2;
  // d and N per normalisation; G = U_r Fmin (gradual) or Fmin (flush to zero)
  const double u24 = std::ldexp(1.0, -24), u23 = std::ldexp(1.0, -23);
  const std::int64_t k = 1001;
  auto near = [](double got, double want) { return got >= want && got <= want * (1 + 1e-12); };
  {  // V100: b = 4, toward zero, no extra bit, at_end with c: d = N = q
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::v100_fp16(), formats::binary16(), 1), k);
    const double q = std::ceil(k / 4.0);
    EXPECT_EQ(a.T, 24);
    // aligned on exponent sums: where a product with a subnormal binary16 input sets E, E <=
    // emin + emax = 1 and each of the 5 operands loses < 2^(1 - 24 + 1) (absolute, in G)
    EXPECT_TRUE(near(a.delta, u23 + 5 * std::ldexp(1.0, 1 - 24) * (1 + u23))) << a.delta;
    EXPECT_EQ(a.depth, q);
    EXPECT_EQ(a.steps, q);
    EXPECT_TRUE(near(a.G, u23 * std::ldexp(1.0, -126) + 5 * std::ldexp(1.0, 1 - 24 + 1))) << a.G;
    EXPECT_FALSE(a.unbiased);
    EXPECT_EQ(a.Fmax, formats::binary32().fmax());
  }
  {  // A100: b = 8, 1 extra bit, exponent sums (E <= 1 for a subnormal input), E >= -132
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::a100_fp16(), formats::binary16(), 1), k);
    EXPECT_TRUE(near(a.delta, u23 + 9 * std::ldexp(1.0, -24) * (1 + u23))) << a.delta;
    EXPECT_TRUE(near(a.G, u23 * std::ldexp(1.0, -126) + 9 * std::ldexp(1.0, 1 - 24 + 1 - 1))) << a.G;
    EXPECT_EQ(a.depth, std::ceil(k / 8.0));
    EXPECT_FALSE(a.unbiased);
  }
  {  // binary32 FMA chain: nothing truncated, nearest; d = N = k
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::fma_binary32(), formats::bfloat16(), 1), k);
    EXPECT_TRUE(near(a.delta, u24)) << a.delta;
    EXPECT_EQ(a.depth, static_cast<double>(k));
    EXPECT_EQ(a.steps, static_cast<double>(k));
    EXPECT_TRUE(near(a.G, u24 * std::ldexp(1.0, -126))) << a.G;
    EXPECT_TRUE(a.unbiased);
  }
  {  // VDPBF16PS: each addition, b = 2, one chain, c with the products: d = N = 2q; FTZ
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::avx512_bf16_dot(), formats::bfloat16(), 1), k);
    const double q = std::ceil(k / 2.0);
    EXPECT_TRUE(near(a.delta, u24)) << a.delta;
    EXPECT_EQ(a.depth, 2 * q);
    EXPECT_EQ(a.steps, 2 * q);
    EXPECT_TRUE(near(a.G, std::ldexp(1.0, -126))) << a.G;
    EXPECT_TRUE(a.unbiased);
  }
  {  // TDPBF16PS: b = 32, 2 chains, c after: d = q (16 + 1) + q, N = q (32 + 1) + q
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::amx_bf16(), formats::bfloat16(), 1), k);
    const double q = std::ceil(k / 32.0);
    EXPECT_EQ(a.depth, 18 * q);
    EXPECT_EQ(a.steps, 34 * q);
  }
  {  // MI210 (CDNA 2): pairwise, b = 4, c after, FTZ; binary16 products are exact in binary32
     // (2 x 11 <= 24 bits), so their rounding adds steps that may underflow but no rounding:
     // d = log2(4) + q, N = q (3 + 1) tree and c + 4 q flushed products + 4 q rounded ones
    const ebla::AccumulationModel a =
        ebla::accumulation_model(emulated(units::mi210_fp16(), formats::binary16(), 1), k);
    const double q = std::ceil(k / 4.0);
    EXPECT_TRUE(near(a.delta, u24)) << a.delta;
    EXPECT_EQ(a.depth, 2 + q);
    EXPECT_EQ(a.steps, 12 * q);
    EXPECT_TRUE(near(a.G, std::ldexp(1.0, -126))) << a.G;
    EXPECT_TRUE(a.unbiased);
    // binary32 words: their 48-bit products are rounded, one more rounding on the path
    const ebla::AccumulationModel w =
        ebla::accumulation_model(emulated(units::mi210_fp16(), formats::binary32(), 1), k);
    EXPECT_EQ(w.depth, 3 + q);
    EXPECT_TRUE(near(w.delta, u24)) << w.delta;
    // gradual underflow, b = 16, exact products: no flushed products
    MatrixUnit g = units::mi210_bf16();
    g.block = 16;
    g.exact_products = true;
    g.input_subnormals = g.output_subnormals = true;
    const ebla::AccumulationModel e =
        ebla::accumulation_model(emulated(g, formats::bfloat16(), 1), k);
    const double q16 = std::ceil(k / 16.0);
    EXPECT_EQ(e.depth, 4 + q16);
    EXPECT_EQ(e.steps, 16 * q16);
    EXPECT_TRUE(near(e.G, u24 * std::ldexp(1.0, -126))) << e.G;
  }
  {  // SGEMM: any order, d = k, N = 2k - 1, delta = 2^-24, G = 2^-126
    const ebla::AccumulationModel a =
        ebla::accumulation_model(on_engine(GemmEngine::sgemm, formats::bfloat16(), 2), k);
    EXPECT_TRUE(near(a.delta, u24)) << a.delta;
    EXPECT_EQ(a.depth, static_cast<double>(k));
    EXPECT_EQ(a.steps, static_cast<double>(2 * k - 1));
    EXPECT_TRUE(near(a.G, std::ldexp(1.0, -126))) << a.G;
  }
}

// ===========================================================================================
// 4. The probabilistic bound

TEST(GemmProbable, FailsNoMoreOftenThanFailureAndEqualsTheBoundOnBiasedUnits) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(401);
  // unbiased units (every step to nearest, nothing truncated), data that makes the rounding
  // errors large relative to |A| |B| (all positive) and typical (U(-1, 1))
  for (double failure : {0.05, 0.5}) {
    BoundTally t;
    std::uint64_t below = 0;
    for (const GemmConfig& base : {emulated(units::fma_binary32(), formats::bfloat16(), 1),
                                   emulated(units::avx512_bf16_dot(), formats::bfloat16(), 1),
                                   emulated(binary16_accumulation(4), formats::fp8_e4m3(), 1),
                                   emulated(binary16_accumulation(1), formats::fp6_e2m3(), 1),
                                   on_engine(GemmEngine::sgemm, formats::binary16(), 1)})
      for (Data kind : {Data::positive, Data::uniform})
        for (int rep = 0; rep < 4; ++rep) {
          GemmConfig c = base;
          c.failure = failure;
          c.words = 1 + rep % 2;
          const auto [A, B] = random_pair(rng, 12, 200 + 100 * rep, 12, kind, 0, c);
          const GemmResult r = ebla::gemm(A, B, c);
          check_bounds(A, B, c, r, to_string(kind), t);
          for (std::size_t i = 0; i < r.bound.extent(0); ++i)
            for (std::size_t j = 0; j < r.bound.extent(1); ++j)
              below += r.probable_bound(i, j) < r.bound(i, j);
        }
    const double fraction =
        static_cast<double>(t.probable_exceeded) / static_cast<double>(t.probable_entries);
    std::cout << "[ counts   ] failure " << failure << ": probable bound exceeded in "
              << t.probable_exceeded << " of " << t.probable_entries << " entries (" << fraction
              << "); strictly below the bound in " << below << "; " << seconds_since(start)
              << " s\n";
    EXPECT_LE(fraction, failure);
    EXPECT_GT(below, t.entries / 2) << "on unbiased units the probable bound should be sharper";
    t.report("probable_unbiased_failure_" + num(failure));
  }

  // biased units: probable_bound == bound
  Tally equal;
  for (const MatrixUnit& unit : {units::v100_fp16(), units::a100_bf16(), binary16_truncating(8)}) {
    MatrixUnit nearest_truncating = units::a100_bf16();
    nearest_truncating.rounding = Rounding::nearest_even;
    for (const MatrixUnit& u : {unit, nearest_truncating}) {
      const Format in =
          contains(u.accumulation, formats::bfloat16()) ? formats::bfloat16() : formats::fp8_e4m3();
      const GemmConfig c = emulated(u, in, 2);
      const auto [A, B] = random_pair(rng, 6, 300, 6, Data::positive, 0, c);
      const GemmResult r = ebla::gemm(A, B, c);
      for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 6; ++j) {
          ++equal.cases;
          if (!same(r.probable_bound(i, j), r.bound(i, j)))
            equal.mismatch(what(c) + ": probable " + hex(r.probable_bound(i, j)) + ", bound " +
                           hex(r.bound(i, j)));
        }
    }
  }
  equal.report("probable_equals_bound_on_biased_units");
}

// ===========================================================================================
// 5. The papers' bounds

double gamma(double n, double u) { return n * u / (1 - n * u); }

TEST(GemmPapers, PrintedDbeaFailsOnAV100ChainAndTheCertifiedBoundHolds) {
  // V100 (seed 003: exact products, round toward zero, no extra alignment bit), binary16
  // words, all positive: x = [1, 1 - 2^-11, ...], y = [1, 2^-23, ...]. Scaled (lambda = mu =
  // 2^15) the products after the first are 2^7 (1 - 2^-11), just below the last kept bit (2^7)
  // of the running sum 2^30: each is truncated to nothing, every block. So C = 1, while
  // x^T y = 1 + (k - 1)(1 - 2^-11) 2^-23: with k = 2^16 an error of 7.8e-3. Seed 000's DBEA,
  // (2u + u^2 + zeta (1 + u)^2) |x|^T |y| with zeta = gamma_(k-1)(U) + gamma_q(U) + ..., is
  // 5.9e-3: it assumes one rounding error of at most U per addition, but each unit operation
  // here loses four products of almost an ulp each. The second column, y = (1 - 2^-10) 2^-23,
  // does the same.
  const std::size_t k = 65536;
  HostMatrix A = matrix(1, k), B = matrix(k, 2);
  const double x = 1 - std::ldexp(1.0, -11), y = std::ldexp(1.0, -23);
  for (std::size_t l = 0; l < k; ++l) {
    A(0, l) = l == 0 ? 1 : x;
    B(l, 0) = l == 0 ? 1 : y;
    B(l, 1) = l == 0 ? 1 : (1 - std::ldexp(1.0, -10)) * y;
  }
  const GemmConfig c = emulated(units::v100_fp16(), formats::binary16(), 1);
  const GemmResult r = ebla::gemm(A, B, c);
  EXPECT_EQ(r.C(0, 0), 1.0);
  const Reference ref = reference(A, B);
  const double u = std::ldexp(1.0, -11), U = std::ldexp(1.0, -24);
  const double q = std::ceil(k / 4.0);
  const double zeta = gamma(k - 1, U) + gamma(q, U) + gamma(k - 1, U) * gamma(q, U);
  for (std::size_t j = 0; j < 2; ++j) {
    double abs_ab = 0;
    for (std::size_t l = 0; l < k; ++l) abs_ab += A(0, l) * B(l, j);
    const double dbea = (2 * u + u * u + zeta * (1 + u) * (1 + u)) * abs_ab;
    const double err = static_cast<double>(qabs(static_cast<quad>(r.C(0, j)) - ref.at(0, j)));
    std::cout << "[ paper    ] column " << j << ": error " << err << ", DBEA (seed 000 Thm 3.8) "
              << dbea << " (the kernel's " << r.paper.dbea(0, j) << "), VIBEA "
              << r.paper.vibea(0, j) << ", certified " << r.bound(0, j) << "\n";
    EXPECT_NEAR(r.paper.dbea(0, j), dbea, 1e-9 * dbea);
    EXPECT_GT(err, dbea) << "the printed DBEA is violated";
    EXPECT_GT(err, r.paper.dbea(0, j));
    EXPECT_LE(err, r.bound(0, j)) << "the certified bound holds";
    EXPECT_LE(r.paper.vibea(0, j), r.paper.dbea(0, j));
  }
  // seed 001 (3.25), with 2U for the unit rounding toward zero, fails as well: nU assumes at
  // most one rounding of U per addition
  const double norm_err = static_cast<double>(qabs(static_cast<quad>(r.C(0, 0)) - ref.at(0, 0)) +
                                              qabs(static_cast<quad>(r.C(0, 1)) - ref.at(0, 1)));
  std::cout << "[ paper    ] normwise error " << norm_err << ", seed 001 (3.25) "
            << r.paper.normwise << ", certified " << r.normwise_bound << "\n";
  EXPECT_LE(norm_err, r.normwise_bound);

  // all positive random data U[1, 2] with the same k: there the DBEA is not reached (the
  // truncation errors are spread); reported for the record
  std::mt19937_64 rng(501);
  const auto [P, Q] = random_pair(rng, 2, k, 2, Data::positive, 0, c);
  const GemmResult rp = ebla::gemm(P, Q, c);
  const Reference refp = reference(P, Q);
  double worst = 0;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      const double err = static_cast<double>(qabs(static_cast<quad>(rp.C(i, j)) - refp.at(i, j)));
      worst = std::max(worst, err / rp.paper.dbea(i, j));
      EXPECT_LE(err, rp.bound(i, j));
    }
  std::cout << "[ paper    ] U[1,2], k = " << k << ": max error / DBEA = " << worst << "\n";
}

// Seed 000's componentwise bounds written out: Theorems 3.8 and 3.10 for matrices given in
// binary64, 3.7 and 3.9 for matrices already in binary16; VIBEA's lambdas make the theorem's
// failure sum at most `failure` per entry and for the whole product. The input term is
// 2 u_low + u_low^2 (the printed Theorem 3.8 has u^2, u the unit roundoff of the format the
// matrices are given in, here 2^-53: checked to differ).
TEST(GemmPapers, ComponentwiseBoundsAreSeed000Theorems) {
  std::mt19937_64 rng(503);
  GemmConfig c = emulated(ebla::units::h100_fp16(), ebla::formats::binary16(), 1, false);
  c.failure = 0.01;
  const double u = std::ldexp(1.0, -11), U = std::ldexp(1.0, -24), b = 16;
  for (bool given_in_binary16 : {false, true})
    for (std::size_t k : {1u, 40u, 700u}) {
      const std::size_t m = 5, n = 3;
      HostMatrix A = matrix(m, k), B = matrix(k, n);
      auto entry = [&] {
        const double v = uniform(rng, -1, 1);
        return given_in_binary16 ? ebla::round_to(v, ebla::formats::binary16(), ebla::Rounding::nearest_even) : v;
      };
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t l = 0; l < k; ++l) A(i, l) = entry();
      for (std::size_t l = 0; l < k; ++l)
        for (std::size_t j = 0; j < n; ++j) B(l, j) = entry();
      const GemmResult r = ebla::gemm(A, B, c);
      const std::string at = std::string(given_in_binary16 ? "binary16" : "binary64") + " k=" + std::to_string(k);
      EXPECT_EQ(r.paper.inputs_exact, given_in_binary16) << at;
      // lambda: the failure sum within failure, per entry and for the m n entries
      const double kk = static_cast<double>(k), q = std::ceil(kk / b);
      EXPECT_EQ(r.paper.vibea_lambda, ebla::bounds::tensor_core_lambda(0.01, U, U, kk, b)) << at;
      EXPECT_EQ(r.paper.vibea_lambda_matrix, ebla::bounds::tensor_core_lambda(0.01, U, U, kk, b, m * n)) << at;
      EXPECT_LE(ebla::bounds::tensor_core_failure(r.paper.vibea_lambda, U, U, kk, b), 0.01) << at;
      EXPECT_LE(m * n * ebla::bounds::tensor_core_failure(r.paper.vibea_lambda_matrix, U, U, kk, b), 0.01) << at;
      const auto zeta = [](double x, double y) { return x + y + x * y; };
      const double z_det = zeta(ebla::bounds::gamma(kk - 1, U), ebla::bounds::gamma(q, U));
      const auto z_prob = [&](double lambda) {
        return zeta(k > 1 ? ebla::bounds::gamma_tilde(kk - 1, U, lambda) : 0, ebla::bounds::gamma_tilde(q, U, lambda));
      };
      const double input = given_in_binary16 ? 0 : 2 * u + u * u;
      const double grow = given_in_binary16 ? 1 : (1 + u) * (1 + u);
      const double printed_input = 2 * u + std::ldexp(1.0, -106);  // Theorem 3.8 as printed
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          long double ab = 0;
          for (std::size_t l = 0; l < k; ++l) ab += std::fabs(static_cast<long double>(A(i, l)) * B(l, j));
          const double abs_ab = static_cast<double>(ab);
          const double dbea = (input + z_det * grow) * abs_ab;
          EXPECT_NEAR(r.paper.dbea(i, j), dbea, 1e-12 * dbea) << at;
          EXPECT_NEAR(r.paper.vibea(i, j), (input + z_prob(r.paper.vibea_lambda) * grow) * abs_ab, 1e-12 * dbea) << at;
          EXPECT_NEAR(r.paper.vibea_matrix(i, j), (input + z_prob(r.paper.vibea_lambda_matrix) * grow) * abs_ab,
                      1e-12 * dbea) << at;
          EXPECT_LE(r.paper.vibea(i, j), r.paper.vibea_matrix(i, j)) << at;
          if (!given_in_binary16) {
            EXPECT_GT(std::fabs(r.paper.dbea(i, j) - (printed_input + z_det * grow) * abs_ab), 1e-9 * dbea) << at;
          }
        }
    }
}

/// Seed 001 (3.25) (p = 1) or (4.32) (p > 1) evaluated here, as docs/gemm.md reads them: n = k,
/// u and g_min of the words' format, U and G_min of the accumulation (2U and 2 G_min toward
/// zero), theta (3.2).
double paper_normwise(const GemmConfig& c, std::size_t k, double norm_a, double norm_b) {
  const MatrixUnit unit = unit_as_run(c);
  const Format& in = c.input;
  const Format& acc = unit.accumulation;
  const double n = static_cast<double>(k), p = c.words;
  const double u = in.u();
  const double gmin = c.subnormals ? in.u() * in.fmin() : in.fmin() / 2;
  const double r = unit.rounding == Rounding::toward_zero ? 2 : 1;
  const double U = r * acc.u();
  const double Gmin = r * (unit.output_subnormals ? acc.u() * acc.fmin() : acc.fmin() / 2);
  const double theta = theta_of(c, k), omega = gmin / theta;
  double rel;
  if (c.words == 1)
    rel = (2 * u + u * u + 4 * n * n * omega * (1 + u + omega)) * (1 + n * U) + n * U +
          4 * n * n * Gmin / (theta * theta);
  else
    rel = (p + 1) * std::pow(u, p) + 4 * n * std::pow(u, p - 1) * omega + (n + p * p) * U +
          2 * p * (p + 1) * n * n * Gmin / (theta * theta);
  return rel * norm_a * norm_b;
}

TEST(GemmPapers, NormwiseBoundsAreSeed001Formulas) {
  std::mt19937_64 rng(502);
  Tally tally;
  const std::vector<GemmConfig> configs = {
      emulated(units::fma_binary32(), formats::bfloat16(), 1, true, true),
      emulated(units::fma_binary32(), formats::bfloat16(), 1, true, false),
      emulated(units::v100_fp16(), formats::binary16(), 1, true, true),
      emulated(units::v100_fp16(), formats::binary16(), 1, true, false),
      emulated(binary16_accumulation(4), formats::fp8_e4m3(), 1, true, true),
      emulated(binary16_accumulation(4), formats::fp8_e4m3(), 1, true, false),
      emulated(binary16_accumulation(4), formats::fp8_e5m2(), 2, true, true),
      emulated(binary16_accumulation(4), formats::fp6_e2m3(), 2, true, false),
      emulated(units::fma_binary32(), formats::binary16(), 2, true, true),
      emulated(units::a100_bf16(), formats::bfloat16(), 2, true, false),
      emulated(units::fma_binary32(), formats::fp8_e4m3(), 3, true, true)};
  for (const GemmConfig& c : configs)
    for (std::size_t k : {7u, 64u, 3000u}) {
      const auto [A, B] = random_pair(rng, 3, k, 4, Data::uniform, 0, c);
      const GemmResult r = ebla::gemm(A, B, c);
      const double want = paper_normwise(c, k, norm_inf(A), norm_inf(B));
      ++tally.cases;
      if (!(std::abs(r.paper.normwise - want) <= 1e-12 * want))
        tally.mismatch(what(c) + " x" + std::to_string(c.words) + ", k = " + std::to_string(k) +
                       ": paper.normwise " + num(r.paper.normwise) + ", (3.25)/(4.32) " +
                       num(want));
    }
  tally.report("paper_normwise");
}

// ===========================================================================================
// 6. The reference option

TEST(GemmReference, ExactIsTheCorrectlyRoundedProductAndObservedErrorsAgree) {
  std::mt19937_64 rng(601);
  Tally exact_tally, observed;
  std::uint64_t compared_exact = 0;
  for (int rep = 0; rep < 80; ++rep) {
    const auto& cat = ebla::matrix_unit_catalogue();
    GemmConfig c = emulated(bfloat16_unit(rng, cat), formats::bfloat16(), 1 + rep % 3);
    if (rep % 5 == 4) c = on_engine(GemmEngine::sgemm, formats::binary16(), 1 + rep % 3);
    c.reference = true;
    const std::size_t m = 1 + rng() % 7, k = 1 + rng() % 60, n = 1 + rng() % 7;
    HostMatrix A = matrix(m, k), B = matrix(k, n);
    // entries with 26-bit significands and exponents within 20 binades: the __float128 sums
    // are exact (checked), so (double) of them is the correctly rounded product; every other
    // case uses U(-1, 1) (then only the observed errors are compared)
    const bool short_significands = rep % 2 == 0;
    auto entry = [&] {
      if (!short_significands) return uniform(rng, -1, 1);
      const double s = std::ldexp(static_cast<double>((rng() >> 38) | (1ull << 25)), -25);
      return sign(rng) * std::ldexp(s, static_cast<int>(rng() % 20) - 10);
    };
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t l = 0; l < k; ++l) A(i, l) = entry();
    for (std::size_t l = 0; l < k; ++l)
      for (std::size_t j = 0; j < n; ++j) B(l, j) = entry();
    const GemmResult r = ebla::gemm(A, B, c);
    const Reference ref = reference(A, B);
    ASSERT_EQ(r.exact.extent(0), m);
    ASSERT_EQ(r.exact.extent(1), n);
    double my_normwise = 0, my_ratio = 0, slack_normwise = 0, slack_ratio = 0;
    for (std::size_t i = 0; i < m; ++i) {
      double row = 0, row_slack = 0;
      for (std::size_t j = 0; j < n; ++j) {
        const double want = static_cast<double>(ref.at(i, j));
        ++exact_tally.cases;
        if (ref.exact[i * n + j]) {
          ++compared_exact;
          if (!same(r.exact(i, j), want))
            exact_tally.mismatch(what(c) + ": exact(" + std::to_string(i) + ", " +
                                 std::to_string(j) + ") = " + hex(r.exact(i, j)) +
                                 ", correctly rounded " + hex(want));
        } else if (!(std::abs(r.exact(i, j) - want) <= std::abs(want) * std::ldexp(1.0, -52))) {
          exact_tally.mismatch(what(c) + ": exact " + hex(r.exact(i, j)) + " vs " + hex(want));
        }
        const double err = static_cast<double>(qabs(static_cast<quad>(r.C(i, j)) - ref.at(i, j)));
        const double half_ulp = std::abs(want) * std::ldexp(1.0, -53) + 1e-320;
        row += err;
        row_slack += half_ulp;
        my_ratio = std::max(my_ratio, err / r.bound(i, j));
        slack_ratio = std::max(slack_ratio, half_ulp / r.bound(i, j));
      }
      if (row > my_normwise) my_normwise = row, slack_normwise = row_slack;
    }
    ++observed.cases;
    if (!(std::abs(r.observed_normwise - my_normwise) <=
          slack_normwise + 1e-12 * my_normwise + 1e-300))
      observed.mismatch(what(c) + ": observed_normwise " + num(r.observed_normwise) + ", here " +
                        num(my_normwise));
    if (!(std::abs(r.observed_max_ratio - my_ratio) <= slack_ratio + 1e-12 * my_ratio))
      observed.mismatch(what(c) + ": observed_max_ratio " + num(r.observed_max_ratio) + ", here " +
                        num(my_ratio));
    EXPECT_LE(r.observed_normwise, r.normwise_bound) << what(c);
    EXPECT_LE(r.observed_max_ratio, 1.0) << what(c);
    EXPECT_GE(r.observed_max_ratio, 0.0) << what(c);
  }
  std::cout << "[ counts   ] " << compared_exact << " exact products compared bit for bit\n";
  EXPECT_GT(compared_exact, 1000u);
  exact_tally.report("reference_exact");
  observed.report("reference_observed");

  // without the option: nothing computed
  const HostMatrix A = matrix({{1, 2}}), B = matrix({{3}, {4}});
  const GemmResult r = ebla::gemm(A, B, emulated(units::fma_binary32(), formats::bfloat16(), 1));
  EXPECT_EQ(r.observed_normwise, -1.0);
  EXPECT_EQ(r.observed_max_ratio, -1.0);
  EXPECT_EQ(r.exact.size(), 0u);
}

// ===========================================================================================
// 7. Selection

TEST(GemmSelect, MeetsAToleranceWithTheCheapestCandidate) {
  std::mt19937_64 rng(701);
  const GemmConfig any = on_engine(GemmEngine::sgemm, formats::bfloat16(), 1);
  const auto [A, B] = random_pair(rng, 40, 60, 30, Data::uniform, 0, any);
  const double na = norm_inf(A), nb = norm_inf(B);
  ebla::GemmOptions opt;
  opt.tolerance = 1e-3;
  const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
  EXPECT_TRUE(plan.meets_tolerance);
  EXPECT_EQ(plan.tolerance, 1e-3);
  EXPECT_LE(plan.relative_bound, 1e-3);
  const GemmResult r = ebla::gemm(A, B, plan);
  EXPECT_DOUBLE_EQ(r.normwise_bound / (r.norm_a * r.norm_b), plan.relative_bound);
  EXPECT_LE(r.normwise_bound / (na * nb), 1e-3);
  EXPECT_EQ(ebla::describe(r.config), ebla::describe(plan.config));
  // the candidates: the default list, each with its bound, the choice the cheapest meeting it
  // (or one within the tie margin of it, with a bound no larger)
  const std::vector<GemmConfig> defaults = ebla::default_gemm_candidates();
  ASSERT_EQ(plan.candidates.size(), defaults.size());
  double cheapest = inf;
  for (std::size_t i = 0; i < defaults.size(); ++i) {
    const auto& cand = plan.candidates[i];
    EXPECT_EQ(ebla::describe(cand.config), ebla::describe(defaults[i]));
    EXPECT_DOUBLE_EQ(cand.relative_bound, ebla::gemm_normwise_bound(A, B, cand.config) / (na * nb));
    EXPECT_DOUBLE_EQ(cand.seconds,
                     ebla::GemmCostModel::measured().seconds(cand.config, 40, 60, 30));
    if (cand.relative_bound <= 1e-3) cheapest = std::min(cheapest, cand.seconds);
  }
  EXPECT_GE(plan.seconds, cheapest);
  EXPECT_LE(plan.seconds, cheapest * (1 + opt.tie_margin));
  for (const auto& cand : plan.candidates)
    if (cand.seconds <= cheapest * (1 + opt.tie_margin)) {
      EXPECT_LE(plan.relative_bound, cand.relative_bound) << ebla::describe(cand.config);
    }
  // the choice carries normwise bounds only (GemmOptions::componentwise is false by default);
  // with entrywise bounds asked for, they hold on the product it makes
  EXPECT_EQ(r.bound.size(), 0u);
  GemmConfig with_entrywise = plan.config;
  with_entrywise.componentwise = true;
  const GemmResult re = ebla::gemm(A, B, with_entrywise);
  EXPECT_EQ(re.normwise_bound, r.normwise_bound);
  BoundTally t;
  check_bounds(A, B, re.config, re, "U(-1,1)", t);
  t.report("select_choice");
}

TEST(GemmSelect, SaysSoWhenNoCandidateMeetsTheTolerance) {
  std::mt19937_64 rng(702);
  const GemmConfig any = on_engine(GemmEngine::sgemm, formats::bfloat16(), 1);
  const auto [A, B] = random_pair(rng, 20, 50, 20, Data::wide, 3, any);
  ebla::GemmOptions opt;
  opt.tolerance = 1e-300;
  const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
  EXPECT_FALSE(plan.meets_tolerance);
  ASSERT_FALSE(plan.candidates.empty());
  double smallest = inf;
  for (const auto& cand : plan.candidates) smallest = std::min(smallest, cand.relative_bound);
  EXPECT_EQ(plan.relative_bound, smallest);
  EXPECT_GT(plan.relative_bound, 1e-300);
  const GemmResult r = ebla::gemm(A, B, plan);
  EXPECT_DOUBLE_EQ(r.normwise_bound / (r.norm_a * r.norm_b), smallest);
}

TEST(GemmSelect, ModelledTimeDoesNotGrowWithTheTolerance) {
  std::mt19937_64 rng(703);
  const GemmConfig any = on_engine(GemmEngine::sgemm, formats::bfloat16(), 1);
  const auto [A, B] = random_pair(rng, 256, 512, 256, Data::uniform, 0, any);
  double previous = inf;
  for (int e = -12; e <= -1; ++e) {
    ebla::GemmOptions opt;
    opt.tolerance = std::pow(10.0, e);
    const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
    std::cout << "[ select   ] tolerance 1e" << e << ": " << ebla::describe(plan.config)
              << ", bound " << plan.relative_bound << ", " << plan.seconds << " s"
              << (plan.meets_tolerance ? "" : " (not met)") << "\n";
    EXPECT_TRUE(plan.meets_tolerance) << "dgemm meets 1e-12 here";
    // a looser tolerance may trade up to the tie margin for a tighter bound
    EXPECT_LE(plan.seconds, previous * (1 + opt.tie_margin)) << "tolerance 1e" << e;
    EXPECT_LE(plan.relative_bound, opt.tolerance);
    previous = plan.seconds;
  }
  // the same without DGEMM among the candidates, so that the words and formats must change
  ebla::GemmOptions narrow;
  for (const GemmConfig& c : ebla::default_gemm_candidates())
    if (c.engine != GemmEngine::dgemm) narrow.candidates.push_back(c);
  previous = inf;
  std::vector<std::string> choices;
  for (int e = -12; e <= -1; ++e) {
    narrow.tolerance = std::pow(10.0, e);
    const ebla::GemmPlan plan = ebla::gemm_select(A, B, narrow);
    std::cout << "[ select   ] without dgemm, tolerance 1e" << e << ": "
              << ebla::describe(plan.config) << ", bound " << plan.relative_bound << ", "
              << plan.seconds << " s" << (plan.meets_tolerance ? "" : " (not met)") << "\n";
    EXPECT_LE(plan.seconds, previous * (1 + narrow.tie_margin)) << "tolerance 1e" << e;
    if (plan.meets_tolerance) {
      EXPECT_LE(plan.relative_bound, narrow.tolerance);
    }
    previous = plan.seconds;
    if (choices.empty() || choices.back() != ebla::describe(plan.config))
      choices.push_back(ebla::describe(plan.config));
  }
  EXPECT_GE(choices.size(), 2u) << "the choice should change with the tolerance";
}

TEST(GemmSelect, RespectsACustomCandidateList) {
  std::mt19937_64 rng(704);
  const MatrixUnit f32 = units::fma_binary32();
  ebla::GemmOptions opt;
  opt.candidates = {emulated(f32, formats::fp8_e4m3(), 1), emulated(f32, formats::fp8_e4m3(), 2),
                    emulated(f32, formats::fp8_e4m3(), 3),
                    emulated(units::v100_fp16(), formats::binary16(), 3)};
  const auto [A, B] = random_pair(rng, 16, 30, 16, Data::uniform, 0, opt.candidates[0]);
  const double na = norm_inf(A), nb = norm_inf(B);
  std::vector<double> rel;
  for (const GemmConfig& c : opt.candidates)
    rel.push_back(ebla::gemm_normwise_bound(A, B, c) / (na * nb));
  // a tolerance between the one-word and the two-word bounds: only p >= 2 candidates meet it
  ASSERT_LT(rel[1], rel[0]);
  opt.tolerance = std::sqrt(rel[0] * std::max(rel[1], rel[3]));
  const ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);
  ASSERT_EQ(plan.candidates.size(), opt.candidates.size());
  double cheapest = inf;
  std::string choice;
  for (std::size_t i = 0; i < opt.candidates.size(); ++i) {
    EXPECT_EQ(ebla::describe(plan.candidates[i].config), ebla::describe(opt.candidates[i]));
    EXPECT_DOUBLE_EQ(plan.candidates[i].relative_bound, rel[i]);
    if (rel[i] <= opt.tolerance && plan.candidates[i].seconds < cheapest) {
      cheapest = plan.candidates[i].seconds;
      choice = ebla::describe(opt.candidates[i]);
    }
  }
  EXPECT_TRUE(plan.meets_tolerance);
  EXPECT_EQ(ebla::describe(plan.config), choice);
  EXPECT_EQ(plan.config.engine, GemmEngine::emulated);
  EXPECT_GE(plan.config.words, 2);
  // a single candidate is chosen whatever the tolerance
  ebla::GemmOptions one;
  one.candidates = {emulated(f32, formats::fp4_e2m1(), 1)};
  one.tolerance = 1e-9;
  const ebla::GemmPlan p1 = ebla::gemm_select(A, B, one);
  EXPECT_FALSE(p1.meets_tolerance);
  EXPECT_EQ(ebla::describe(p1.config), ebla::describe(one.candidates[0]));
}

// ===========================================================================================
// 8. The fast engines against the emulation

/// Integers of at most `bits` bits, times a power of two per row (A) or column (B): every
/// product and partial sum of at most 2^(24 - 2 bits) of them is exact in binary32, whatever
/// the order.
std::pair<HostMatrix, HostMatrix> exact_data(std::mt19937_64& rng, std::size_t m, std::size_t k,
                                             std::size_t n, int bits) {
  HostMatrix A = matrix(m, k), B = matrix(k, n);
  const std::int64_t top = (std::int64_t{1} << bits) - 1;
  auto integer = [&] {
    return static_cast<double>(static_cast<std::int64_t>(rng() % (2 * top + 1)) - top);
  };
  for (std::size_t i = 0; i < m; ++i) {
    const int e = static_cast<int>(rng() % 13) - 8;  // 2^-8 .. 2^4: inside binary16's range
    for (std::size_t l = 0; l < k; ++l) A(i, l) = std::ldexp(integer(), e);
  }
  for (std::size_t j = 0; j < n; ++j) {
    const int e = static_cast<int>(rng() % 13) - 8;
    for (std::size_t l = 0; l < k; ++l) B(l, j) = std::ldexp(integer(), e);
  }
  return {A, B};
}

void compare_engines(const GemmConfig& fast, const GemmConfig& emulation, int cases,
                     std::uint64_t seed, Tally& tally) {
  std::mt19937_64 rng(seed);
  for (int n_case = 0; n_case < cases; ++n_case) {
    GemmConfig f = fast, e = emulation;
    f.words = e.words = 1 + n_case % 3;
    f.scaling = e.scaling = n_case % 4 != 3;
    const std::size_t m = 1 + rng() % 9, n = 1 + rng() % 9, k = 1 + rng() % 32;
    const auto [A, B] = exact_data(rng, m, k, n, 9);  // 18-bit products, k <= 32: < 2^24
    const GemmResult rf = ebla::gemm(A, B, f), re = ebla::gemm(A, B, e);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        ++tally.cases;
        if (!same(rf.C(i, j), re.C(i, j)))
          tally.mismatch(what(f) + " vs " + what(e) + ", " + shape(A, B) + ": C(" +
                         std::to_string(i) + ", " + std::to_string(j) + ") = " + hex(rf.C(i, j)) +
                         ", emulated " + hex(re.C(i, j)));
      }
  }
}

TEST(GemmEngines, SgemmMatchesTheEmulatedBinary32FmaWhereSumsAreExact) {
  Tally tally;
  for (const Format& in :
       {formats::bfloat16(), formats::binary16(), formats::tf32(), formats::binary32()})
    compare_engines(on_engine(GemmEngine::sgemm, in, 1), emulated(units::fma_binary32(), in, 1), 60,
                    801, tally);
  tally.report("sgemm_vs_fma_binary32");
}

TEST(GemmEngines, OnednnBf16MatchesTheEmulatedVdpbf16psWhereSumsAreExact) {
  if (!ebla::host::gemm_engines().onednn_bf16)
    GTEST_SKIP() << "oneDNN does not run bfloat16 natively here";
  Tally tally;
  compare_engines(on_engine(GemmEngine::onednn_bf16, formats::bfloat16(), 1),
                  emulated(units::avx512_bf16_dot(), formats::bfloat16(), 1), 200, 802, tally);
  tally.report("onednn_bf16_vs_avx512_bf16_dot");
}

// ===========================================================================================
// 9. Bad input

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

/// Expects InvalidArgument whose message contains every fragment (case-insensitively).
template <class Fn>
void expect_invalid(Fn fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << fragments.back();
  } catch (const ebla::InvalidArgument& e) {
    for (const auto& f : fragments)
      EXPECT_NE(lower(e.what()).find(lower(f)), std::string::npos) << e.what() << " lacks " << f;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an ebla::InvalidArgument: " << e.what();
  }
}

TEST(GemmValidation, RejectsBadInputNamingFunctionAndValue) {
  const GemmConfig ok = emulated(units::fma_binary32(), formats::bfloat16(), 1);
  const HostMatrix A = matrix(3, 4, 1.0), B = matrix(5, 2, 1.0);
  expect_invalid([&] { ebla::gemm(A, B, ok); }, {"ebla::gemm", "4", "5"});
  expect_invalid([&] { ebla::gemm_normwise_bound(A, B, ok); }, {"4", "5"});

  HostMatrix An = matrix(13, 29, 1.0), Bn = matrix(29, 31, 1.0);
  An(11, 23) = nan_value;
  expect_invalid([&] { ebla::gemm(An, Bn, ok); }, {"ebla::gemm", "11", "23", "nan"});
  HostMatrix Ai = matrix(13, 29, 1.0), Bi = matrix(29, 31, 1.0);
  Bi(17, 26) = -inf;
  expect_invalid([&] { ebla::gemm(Ai, Bi, ok); }, {"ebla::gemm", "17", "26", "inf"});

  const HostMatrix P = matrix(2, 3, 1.0), Q = matrix(3, 2, 1.0);
  auto with = [&](auto change) {
    GemmConfig c = ok;
    change(c);
    return c;
  };
  auto call = [&](const GemmConfig& c) { return [c, &P, &Q] { ebla::gemm(P, Q, c); }; };
  expect_invalid(call(with([](GemmConfig& c) { c.words = 0; })), {"ebla::gemm", "words", "0"});
  expect_invalid(call(with([](GemmConfig& c) { c.words = 4; })), {"ebla::gemm", "words", "4"});
  expect_invalid(call(on_engine(GemmEngine::sgemm, formats::binary64(), 1)),
                 {"ebla::gemm", "sgemm", "binary64"});
  if (ebla::host::gemm_engines().onednn_bf16)
    expect_invalid(call(on_engine(GemmEngine::onednn_bf16, formats::binary16(), 1)),
                   {"ebla::gemm", "onednn", "binary16"});
  else
    expect_invalid(call(on_engine(GemmEngine::onednn_bf16, formats::binary16(), 1)),
                   {"ebla::gemm", "onednn"});
  expect_invalid(call(on_engine(GemmEngine::dgemm, formats::binary64(), 2)),
                 {"ebla::gemm", "dgemm", "words"});
  expect_invalid(call(emulated(binary16_accumulation(4), formats::binary32(), 1)),
                 {"ebla::gemm", "binary32", "binary16"});
  expect_invalid(call(emulated(units::fma_binary32(), formats::binary64(), 1)),
                 {"ebla::gemm", "binary64"});
  expect_invalid(call(with([](GemmConfig& c) { c.failure = 0; })), {"ebla::gemm", "failure", "0"});
  expect_invalid(call(with([](GemmConfig& c) { c.failure = 1; })), {"ebla::gemm", "failure", "1"});
  expect_invalid(call(with([](GemmConfig& c) { c.input.t = 60; })), {"ebla::gemm", "60"});
  expect_invalid(call(with([](GemmConfig& c) { c.unit.block = 0; })), {"ebla::gemm", "block"});

  for (double tol : {0.0, -1.0, nan_value, inf}) {
    ebla::GemmOptions opt;
    opt.tolerance = tol;
    const std::string value = std::isnan(tol) ? "nan" : tol == inf ? "inf" : tol < 0 ? "-1" : "0";
    expect_invalid([&] { ebla::gemm_select(P, Q, opt); },
                   {"ebla::gemm_select", "tolerance", value});
  }
  EXPECT_THROW(ebla::gemm_engine_by_name("tpu"), ebla::InvalidArgument);
  EXPECT_EQ(ebla::gemm_engine_by_name("onednn"), GemmEngine::onednn_bf16);
  EXPECT_EQ(ebla::gemm_engine_by_name("sgemm"), GemmEngine::sgemm);
  EXPECT_STREQ(ebla::to_string(GemmEngine::dgemm), "dgemm");
}

}  // namespace

// ===========================================================================================
// 10. The host passes compiled for each instruction set give the same C and words, and bounds
//     that differ only by the order of their sums.

TEST(GemmHostIsa, EveryInstructionSetGivesTheSameProductAndBounds) {
  const auto isas = ebla::detail::supported_host_isas();
  const ebla::detail::HostIsa best = ebla::detail::gemm_host_isa();
  std::mt19937_64 rng(4242);
  std::size_t entries = 0;
  std::vector<GemmConfig> configs;
  for (int p = 1; p <= 3; ++p)
    for (bool scaling : {true, false}) {
      configs.push_back(emulated(ebla::units::fma_binary32(), formats::binary16(), p, scaling));
      configs.push_back(emulated(ebla::units::fma_binary32(), formats::fp8_e4m3(), p, scaling, false));
      configs.push_back(on_engine(GemmEngine::sgemm, formats::bfloat16(), p, scaling));
      if (ebla::host::gemm_engines().onednn_bf16)
        configs.push_back(on_engine(GemmEngine::onednn_bf16, formats::bfloat16(), p, scaling));
    }
  configs.push_back(on_engine(GemmEngine::dgemm, formats::binary64(), 1));
  // equal, or (finite) within the reordering of binary64 sums
  auto close = [](double a, double b) { return a == b || std::fabs(a - b) <= 1e-12 * std::fabs(b); };
  // odd sizes: every vector loop has a remainder; the second shape also has whole 8 x 8
  // blocks in the in-order row sums of both A and B
  const std::size_t shapes[2][3] = {{7, 37, 13}, {19, 45, 21}};
  for (GemmConfig& c : configs)
    for (const auto& shape : shapes) {
      c.componentwise = true;
      const auto [A, B] = random_pair(rng, shape[0], shape[1], shape[2], Data::wide, 10, c);
      ebla::detail::set_gemm_host_isa(ebla::detail::HostIsa::baseline);
      const GemmResult base = ebla::gemm(A, B, c);
      for (const auto isa : isas) {
        ebla::detail::set_gemm_host_isa(isa);
        const GemmResult r = ebla::gemm(A, B, c);
        ASSERT_EQ(r.C.size(), base.C.size());
        for (std::size_t l = 0; l < r.C.size(); ++l, ++entries) {
          ASSERT_TRUE(same(r.C.data()[l], base.C.data()[l]))
              << what(c) << " on " << ebla::detail::to_string(isa) << ": entry " << l;
          EXPECT_TRUE(close(r.bound.data()[l], base.bound.data()[l]))
              << r.bound.data()[l] << " vs " << base.bound.data()[l];
        }
        EXPECT_TRUE(close(r.normwise_bound, base.normwise_bound))
            << what(c) << " on " << ebla::detail::to_string(isa) << ": " << r.normwise_bound
            << " vs " << base.normwise_bound;
        EXPECT_EQ(r.norm_a, base.norm_a);
        EXPECT_EQ(r.norm_b, base.norm_b);
      }
    }
  ebla::detail::set_gemm_host_isa(best);
  EXPECT_THROW(
      {
        if (isas.size() < 3) ebla::detail::set_gemm_host_isa(ebla::detail::HostIsa::avx512);
        else throw ebla::InvalidArgument("every set is supported here");
      },
      ebla::InvalidArgument);
  std::cout << "[ counts   ] host_isa: " << isas.size() << " instruction sets, " << entries
            << " entries compared\n";
  EXPECT_GT(entries, 1000u);
}
