// Mixed-precision GEMM with certified error bounds: Model 1 of seed 001 (Mary & Mikaitis) on
// any matrix-multiply unit of matrix_unit.hpp or on a real BLAS / oneDNN, with p-word inputs,
// and a tolerance-driven choice of formats (gemm_select), in the select/compute shape of qdot.
//
//   ebla::GemmConfig cfg;                       // input format, words p, engine or unit, ...
//   cfg.input = ebla::formats::bfloat16();  cfg.words = 2;  cfg.engine = GemmEngine::sgemm;
//   ebla::GemmResult r = ebla::gemm(A, B, cfg); // r.C, r.normwise_bound, r.bound (i, j)
//
//   ebla::GemmOptions opt;  opt.tolerance = 1e-4;
//   ebla::GemmPlan plan = ebla::gemm_select(A, B, opt);   // cheapest candidate meeting it
//   ebla::GemmResult r = ebla::gemm(A, B, plan);
//
// A is m x k, B is k x n, C = A B is m x n, all binary64 (seed 001 calls the inner dimension n).
//
// The computation (seed 001 (3.1)-(3.2), (4.5)-(4.7)):
//  1. Scaling. theta = min(fmax, sqrt(Fmax / k)) (3.2), fmax of the input format and Fmax of
//     the accumulation format. Row i of A is scaled by lambda_i = 2^e_i, the largest power of
//     two with lambda_i ||a_i||_inf <= theta (so the row's largest entry lies in (theta/2,
//     theta], (3.4a)); column j of B by mu_j likewise. Without scaling lambda = mu = 1.
//  2. Words. A^(w) = fl((Lambda A - sum_{v<w} u^v A^(v)) / u^w), w = 0..p-1 (4.5), and B^(w)
//     likewise (4.6): fl is round to nearest in the input format (without subnormals when the
//     config says so). rho_A = Lambda A - sum_w u^w A^(w) is kept exactly (the residual of
//     each step is a binary64 number; docs/gemm.md gives the argument).
//  3. Products. The p(p+1)/2 products P_vw = A^(v) B^(w), v + w < p, each computed from zero by
//     the engine: `emulated` runs config.unit (seed 000 Algorithm 1, bit-exactly, integer
//     arithmetic: unit_gemm); `sgemm` the words as binary32 through BLAS SGEMM; `onednn_bf16`
//     the words as bfloat16 through oneDNN's matmul; `dgemm` is plain binary64 DGEMM of A and B
//     (no words, no scaling: the reference path of the selection).
//  4. C = Lambda^-1 (sum_{v+w<p} u^(v+w) P_vw) M^-1 (4.7): the P_vw are added in binary64,
//     smallest level first, and unscaled by an exact power of two.
//
// The bounds. For every entry, against the exact A B of the matrices AS GIVEN:
//   |C_ij - (A B)_ij| <= bound(i, j)                  always (certified)
//   |C_ij - (A B)_ij| <= probable_bound(i, j)         with probability >= 1 - failure
//   ||C - A B||_inf   <= normwise_bound                always (max_i sum_j bound(i, j), but
//                                                      for its rounding and underflow margins)
// where, with x = row i of A, y = column j of B, X^(v), Y^(w) their words and rho_x, rho_y
// their residuals (all scaled),
//   bound = lambda^-1 mu^-1 [ R + (g + c (1 + g)) W + (pairs) N G (1 + g) (1 + c) ] (+ 2^-1074)
//   R = sum_l ( |rho_x| Ytil + Xtil' |rho_y| + sum_{v+w>=p} u^(v+w) |X^(v)| |Y^(w)| )_l
//       (exact representation and truncation error of the words, a posteriori; Xtil' =
//       sum_v u^v |X^(v)|, Ytil = sum_w u^w |Y^(w)| + |rho_y|),
//   W = sum_{v+w<p} u^(v+w) |X^(v)|^T |Y^(w)|,
//   g = (1 + delta)^d - 1: the accumulation of one product, d rounding steps on the longest
//       path from a product to the result, each with a relative error of at most delta of the
//       sum of the magnitudes of its operands, and N steps that may underflow with an absolute
//       error of at most G each (docs/gemm.md derives d, delta, N and G for every unit: for a
//       block unit with b products, q = ceil(k / b) operations, at_end normalisation, d = q
//       and delta = U_r + (b + 1) 2^(1 - T - extra_bits) (1 + U_r): the rounding U_r = u or 2u
//       (toward zero) plus the alignment truncation; seed 000 Theorem 3.7 has gamma_(k-1) for
//       its one-rounding-per-addition model instead; a pairwise unit (each block's products in
//       a balanced tree, then c: the MI210 presets) has d = log2 b + q; for `sgemm` and
//       `onednn_bf16`, any order: d = k, delta = 2^-24, N = 2k - 1, G = 2^-126 (flush to zero
//       allowed));
//   c = gamma_(pairs - 1)(2^-53): the binary64 sum of step 4.
// probable_bound replaces g by Higham & Mary's / seed 000 Lemma 2.2's gamma~_d(lambda) (seed 000
// Theorems 3.9-3.10) where every accumulation step rounds to nearest without truncation; the
// representation term R is exact, the underflow terms stay worst case; a unit that truncates
// or rounds toward zero is biased, so there probable_bound = bound.
// Every bound is +inf for an entry whose accumulation might overflow (checked a priori:
// (1 + g) (min(|x|_1 max|y|, max|x| |y|_1) + N G) >= Fmax), whose inputs overflowed the input
// format to inf or NaN, or whose result is not finite. Bounds are evaluated in binary64 with a
// margin that covers their own rounding.
//
// The bounds of the papers, for comparison (GemmResult::paper): seed 001 Theorem 3.1 (3.25)
// for p = 1 and Theorem 4.1 (4.32) (first order) for p > 1, normwise; seed 000 Theorems 3.8
// (DBEA) and 3.10 (VIBEA) componentwise, (2 u + u^2 + zeta (1 + u)^2) |A||B| with zeta =
// gamma_(k-1)(U) + gamma_q(U) + gamma_(k-1)(U) gamma_q(U) (gamma~ for VIBEA), or, where A and B
// are already in the input format (p = 1, no representation error), Theorems 3.7 and 3.9:
// zeta |A||B|. VIBEA's lambda is the one with which the theorem's failure sum (Theorem 3.10:
// m n sum_j (1 - p_b(lambda, U, c1)) + (1 - p_b(lambda, U, c2)) for the whole product) is at
// most `failure`: per entry (PaperBounds::vibea) and for the whole matrix (vibea_matrix). They
// ignore underflow (seed 000), alignment truncation and directed rounding in the unit (both);
// the certified bound covers all three.
//
// Errors: ebla::InvalidArgument naming the function and value for: shapes that do not match,
// a non-finite entry of A or B, words outside 1..3, an invalid format or unit, an input format
// the accumulation format does not contain, an engine that cannot run the config (sgemm needs
// an input format inside binary32; onednn_bf16 one inside bfloat16 and a CPU oneDNN runs
// bfloat16 on; dgemm needs words = 1 and input binary64), a failure probability outside
// (0, 1); gemm_select: a tolerance that is not positive and finite, an empty candidate list.
//
// Where it runs: on the host, on every thread of Kokkos' default host execution space (the
// engines are BLAS, oneDNN and host kernels). Matrices in device memory, or in another
// layout, are accepted by the overloads for any rank-2 View of doubles, which copy them to
// host memory first (host_matrix); the result is in host memory.
#pragma once

#include <ebla/core/format.hpp>
#include <ebla/kernels/matrix_unit.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

namespace ebla {

/// A matrix on the host, row-major.
using HostMatrix = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>;
using ConstHostMatrix = Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace>;

/// What computes the products of the words.
enum class GemmEngine : std::uint8_t {
  emulated,     ///< config.unit, bit-exactly (Kokkos kernel; any format, any unit)
  sgemm,        ///< BLAS SGEMM: binary32 accumulation, round to nearest, order unspecified
  onednn_bf16,  ///< oneDNN matmul, bfloat16 words, binary32 accumulation, order unspecified
  dgemm,        ///< BLAS DGEMM of A and B themselves (input binary64, one word)
};
const char* to_string(GemmEngine e);
/// "emulated", "sgemm", "onednn_bf16" (also "onednn"), "dgemm"; throws InvalidArgument.
GemmEngine gemm_engine_by_name(const std::string& name);

/// One way of computing A B (Model 1 with p words).
struct GemmConfig {
  Format input = formats::bfloat16();  ///< the words' format (seed 001: t, emin, emax)
  int words = 1;                       ///< p, 1..3: p(p+1)/2 products of words
  bool scaling = true;                 ///< (3.1)-(3.2) power-of-two scaling; off: lambda = mu = 1
  bool subnormals = true;  ///< false: the words have no subnormals, the unit is DAZ/FTZ.
                           ///< Words are also made without subnormals where the engine would
                           ///< read them as zero (a DAZ unit; oneDNN's bfloat16 below 2^-126),
                           ///< so that the residuals stay exact
  GemmEngine engine = GemmEngine::emulated;
  MatrixUnit unit = units::fma_binary32();  ///< emulated only; its input format is replaced by
                                            ///< `input` (the accumulation must contain it)
  double failure = 0.01;       ///< per-entry failure probability of probable_bound, in (0, 1)
  bool componentwise = true;   ///< compute bound / probable_bound / paper componentwise bounds
                               ///< (p^2 + 3 extra binary64 products of absolute values)
  bool reference = false;      ///< also compute A B exactly (correctly rounded) and the
                               ///< observed error (slow: m n k exact products)
};

/// The certified accumulation model of a config (see the top of this header).
struct AccumulationModel {
  int T = 24;            ///< accumulation precision
  double delta = 0;      ///< relative error of one step, of the sum of its operands' magnitudes
  double depth = 0;      ///< d: steps from a product to the result
  double steps = 0;      ///< N: steps that may underflow
  double G = 0;          ///< absolute error of one underflowing step
  double Fmax = 0;       ///< overflow threshold of the accumulation format
  bool unbiased = true;  ///< every step rounds to nearest without truncation
};

/// The papers' bounds for the same computation (see the top of this header).
struct PaperBounds {
  double normwise = 0;          ///< seed 001 Theorem 3.1 (p = 1) or 4.1 (p > 1)
  HostMatrix dbea;              ///< seed 000 Theorem 3.8 (3.7), entrywise (empty if !componentwise)
  HostMatrix vibea;             ///< seed 000 Theorem 3.10 (3.9), failing with probability <= failure per entry
  HostMatrix vibea_matrix;      ///< the same, failing with probability <= failure for the whole C
  double vibea_lambda = 0;         ///< lambda of vibea
  double vibea_lambda_matrix = 0;  ///< lambda of vibea_matrix
  bool inputs_exact = false;    ///< A and B in the input format: Theorems 3.7 and 3.9 apply
};

struct GemmResult {
  HostMatrix C;
  double normwise_bound = 0;    ///< ||C - A B||_inf <= normwise_bound
  double norm_a = 0, norm_b = 0;  ///< ||A||_inf, ||B||_inf
  HostMatrix bound;             ///< entrywise, certified (empty if !componentwise)
  HostMatrix probable_bound;    ///< entrywise, probability >= 1 - failure (empty likewise)
  double lambda = 0;            ///< lambda of the gamma~ in probable_bound
  PaperBounds paper;
  double theta = 0;             ///< (3.2)
  AccumulationModel model;
  GemmConfig config;            ///< as run (unit input and subnormal settings filled in)
  // the reference product, if config.reference
  HostMatrix exact;             ///< A B correctly rounded to binary64
  double observed_normwise = -1;  ///< ||C - A B||_inf (-1 when not computed)
  double observed_max_ratio = -1; ///< max_ij |C - A B|_ij / bound_ij (needs componentwise)
  // time of each phase, seconds
  double split_seconds = 0, product_seconds = 0, bound_seconds = 0;
};

/// Computes C = A B as the config says, with its bounds. Throws InvalidArgument (top).
GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmConfig& config);

/// The certified normwise bound gemm() would report, without computing the product:
/// O(p^2 (m k + k n)) work. Throws as gemm().
double gemm_normwise_bound(const ConstHostMatrix& A, const ConstHostMatrix& B,
                           const GemmConfig& config);

/// The accumulation model of a validated config for inner dimension k.
AccumulationModel accumulation_model(const GemmConfig& config, std::int64_t k);

/// Checks a config; throws InvalidArgument naming `function` (see the top of this header).
void validate(const GemmConfig& config, const char* function = "ebla::validate");

/// A name such as "bfloat16 x2 on sgemm" or "binary16 x1 on emulated(v100_fp16)".
std::string describe(const GemmConfig& config);

// ---- selection -----------------------------------------------------------------------------

/// Seconds per multiply-add of each engine, measured on this machine.
struct GemmCostModel {
  double dgemm = 0, sgemm = 0, onednn_bf16 = 0, emulated = 0;
  double split = 0;  ///< seconds per element and word of splitting (rounding, residuals)
  /// Measured once per process in memory on 512 x 512 products (emulated: 32 x 32) by the
  /// noise rule of gemm_profile.hpp, then cached; nothing is read or written. A profile
  /// (gemm_profile.hpp: gemm_costs) keeps the measurement from one process to the next.
  static const GemmCostModel& measured();
  /// Modelled seconds of a config on an m x k times k x n product.
  double seconds(const GemmConfig& config, std::int64_t m, std::int64_t k, std::int64_t n) const;
};

/// What gemm_select chooses from and against.
struct GemmOptions {
  double tolerance = 1e-4;  ///< wanted: ||C - A B||_inf <= tolerance ||A||_inf ||B||_inf
  std::vector<GemmConfig> candidates;  ///< empty: default_gemm_candidates()
  bool scaling = true, subnormals = true;  ///< applied to the default candidates
  double failure = 0.01;
  bool componentwise = false;  ///< the chosen config's; true adds the cost of the entrywise
                               ///< bounds (binary64 products of absolute values) to every candidate
  std::optional<GemmCostModel> cost;  ///< the throughputs; empty: GemmCostModel::measured()
  double tie_margin = 0.02;  ///< modelled times within this relative margin of the cheapest tie
};

/// One candidate as gemm_select saw it.
struct GemmCandidateReport {
  GemmConfig config;
  double relative_bound = 0;  ///< certified normwise bound / (||A|| ||B||)
  double seconds = 0;         ///< modelled
};

struct GemmPlan {
  GemmConfig config;          ///< the choice
  double relative_bound = 0;  ///< its certified normwise bound / (||A||_inf ||B||_inf)
  double seconds = 0;         ///< its modelled time
  bool meets_tolerance = false;  ///< false: no candidate met it; config is the one with the
                                 ///< smallest bound (say so, do not pretend)
  double tolerance = 0;
  std::vector<GemmCandidateReport> candidates;  ///< every candidate, in the order tried
};

/// The index of the candidate gemm_select chooses. Among those whose relative bound meets the
/// tolerance, the cheapest c* and every one modelled at most (1 + tie_margin) c* tie; of
/// these, the smallest bound wins, then the fewest products p(p+1)/2, then the cheapest, then
/// the first. If none meets the tolerance: the smallest bound, then the fewest products, then
/// the cheapest. Throws InvalidArgument for an empty list or a negative margin.
std::size_t gemm_choice(const std::vector<GemmCandidateReport>& candidates, double tolerance,
                        double tie_margin = 0.02);

/// Every engine that runs here with the formats Model 1 lists: bfloat16 / binary16 / tf32
/// words, p = 1..3, on onednn_bf16 (bfloat16, if available) and sgemm; binary32 words on
/// sgemm; binary64 on dgemm. Scaling and subnormals as given.
std::vector<GemmConfig> default_gemm_candidates(bool scaling = true, bool subnormals = true);

/// The cheapest candidate (by options.cost) whose certified normwise bound meets the tolerance;
/// if none does, the one with the smallest bound and meets_tolerance = false. Ties (gemm_choice)
/// go to the tighter bound, then to the fewer products.
GemmPlan gemm_select(const ConstHostMatrix& A, const ConstHostMatrix& B,
                     const GemmOptions& options);
/// gemm(A, B, plan.config).
GemmResult gemm(const ConstHostMatrix& A, const ConstHostMatrix& B, const GemmPlan& plan);

/// A copy of a rank-2 View of doubles, in any memory space and layout, as a HostMatrix.
template <class View>
HostMatrix host_matrix(const View& M) {
  static_assert(View::rank == 2, "ebla::host_matrix: a rank-2 View");
  static_assert(std::is_same<typename View::non_const_value_type, double>::value,
                "ebla::host_matrix: a View of doubles");
  const auto here = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), M);  // same layout
  HostMatrix out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "ebla::host_matrix"), M.extent(0), M.extent(1));
  for (std::size_t i = 0; i < out.extent(0); ++i)
    for (std::size_t j = 0; j < out.extent(1); ++j) out(i, j) = here(i, j);
  return out;
}

namespace detail {
/// Whether a View is taken by the HostMatrix overloads as it is (no copy).
/// (Spelled out: Kokkos 3.4's View claims to be convertible from any View and then fails.)
template <class View>
constexpr bool is_host_matrix() {
  return std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value &&
         std::is_same<typename View::memory_space, Kokkos::HostSpace>::value &&
         std::is_same<typename View::non_const_value_type, double>::value && View::rank == 2;
}
template <class AView, class BView>
using if_not_host_matrices = std::enable_if_t<!(is_host_matrix<AView>() && is_host_matrix<BView>()), int>;
}  // namespace detail

/// gemm of matrices in device memory or another layout: copied through host memory.
template <class AView, class BView, detail::if_not_host_matrices<AView, BView> = 0>
GemmResult gemm(const AView& A, const BView& B, const GemmConfig& config) {
  return gemm(ConstHostMatrix(host_matrix(A)), ConstHostMatrix(host_matrix(B)), config);
}
/// gemm_select of matrices in device memory or another layout: copied through host memory.
template <class AView, class BView, detail::if_not_host_matrices<AView, BView> = 0>
GemmPlan gemm_select(const AView& A, const BView& B, const GemmOptions& options) {
  return gemm_select(ConstHostMatrix(host_matrix(A)), ConstHostMatrix(host_matrix(B)), options);
}

/// A B with every entry correctly rounded to binary64 (exact products, exact sums, one
/// rounding): the reference of the experiments and of GemmConfig::reference. O(m n k).
/// Non-finite entries follow IEEE arithmetic: an entry of the product with a NaN factor, a
/// product inf * 0 or infinities of both signs is NaN, else one with an infinite factor is
/// that infinity (its sign the product's).
HostMatrix exact_gemm(const ConstHostMatrix& A, const ConstHostMatrix& B);

namespace detail {
/// The instruction set of gemm's host passes (split, conversions, assembly, normwise bound):
/// by default the best this CPU runs (quantize_host.hpp). Every set gives the same C; tests
/// set each in turn. set_gemm_host_isa throws InvalidArgument for a set the CPU lacks.
HostIsa gemm_host_isa();
void set_gemm_host_isa(HostIsa isa);
}  // namespace detail

/// The format with f's precision and specials and the widest exponent range binary64 allows
/// (emin -1022, emax 1023): seed 001's "unbounded range" comparison runs.
Format unbounded_range(const Format& f);

}  // namespace ebla
