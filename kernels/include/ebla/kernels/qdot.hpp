// qdot: the error-bounded quantized dot product (seed 002, Diffenderfer, Osei-Kuffuor
// and Menon, sections 2-3), as a two-phase kernel:
//
//   QdotPlan   plan   = qdot_select(x, y, options);   // Algorithm 3.2: bins and precisions
//   QdotResult result = qdot_compute(x, y, plan);     // Algorithm 3.1: the approximate dot
//   QdotResult result = qdot(x, y, options);          // both (Algorithm 3.3)
//
// for x, y as Kokkos::View<const double*> / <const float*> (any layout or memory space
// the default execution space can reach) or as raw host pointers with a length.
//
// Where it runs. Views run in their own execution space: Views in a device's memory on the
// device (selection by atomic increments into a histogram in device memory, computation in
// fixed chunks), and only the histogram (4,202 counts) and the chunks' partial sums come
// back to the host, where the plan is chosen and the chunks are merged in order. Contiguous
// Views in host memory and raw pointers (which must point to host memory) take the host
// kernels (qdot_host.hpp): every thread of Kokkos' default host execution space, AVX-512 or
// AVX2 where the CPU has them. Every path gives the same plan and a certified bound.
//
// Bins. Component i with x_i != 0 and y_i != 0 goes to the exponent bin
// e_i = fexp(x_i) + fexp(y_i) (exact binning, fexp the unbiased exponent, subnormals
// normalised); zeros contribute exactly 0 and get no bin. Note |x_i y_i| < 2^(e_i + 2):
// seed 002's Theorem 3.2 uses 2^(e_i + 1), which a product of two mantissas near 2
// exceeds (1.9 * 1.9 = 3.61 > 2). Every bound here uses 2^(e_i + 2) or the computed product.
//
// Computation. A component whose bin has a format of t bits is computed as
// fl(round_t(x_i) * round_t(y_i)), where round_t rounds the significand to t bits to
// nearest (relative to the component's own exponent, so there is no overflow or underflow
// in the quantization: this is the per-bin power-of-two scaling of the seed, done per
// factor; factors below 2^-963 or from 2^970 up are left exact); perforated components
// are skipped; components at the input precision are fl(x_i y_i). All products are summed
// in double with compensated (TwoSum) accumulation. (The AVX-512 host kernel rounds by
// Veltkamp's splitting, whose ties may go either way; elsewhere ties go to even.)
//
// What `bound` certifies (for every input with finite components and finite products):
//   |result.value - x^T y| <= result.bound,
// against the exact real dot product, with
//   bound = quantization_bound + accumulation_bound, where
//   quantization_bound = sum over components of c_l |q_i| (c_l from the level's unit
//     roundoff u: ((1+u)^2 (1+u_d) - 1) / ((1-u)^2 (1-u_d)), q_i the computed product;
//     perforated: |x_i y_i| / (1 - u_d); input precision double: u_d / (1 - u_d)),
//     summed with an upward correction (1 - gamma_{n+1})^-1, plus m 2^-1074 for underflow
//     (m the number of nonzero products; double input only);
//   accumulation_bound = u_d |value| / (1 - u_d) + gamma_N N u_d (1 + gamma_N) Q,
//     N = 2n + 2, Q = sum |q_i| over the computed products plus sum |x_i y_i| over the
//     perforated ones (an upper bound on the sum over what is accumulated; every TwoSum
//     is exact, only the compensation terms and the final s + c are rounded).
//
// What `tolerance` guarantees depends on the policy:
//  - QdotPolicy::budget (the default): the error introduced by approximation is at most
//    tolerance * |x|^T |y|: with x~, y~ the factors as their bins' levels round them (a
//    perforated product is 0),
//      |x~^T y~ - x^T y| <= tolerance |x|^T|y|,
//    and the value is x~^T y~ computed in double (the rounding any double dot product
//    has, which `bound` certifies). The selection makes sure of it a priori: a product of
//    bin e whose factors are rounded to t bits errs by less than 4 u 2^e (u = 2^-t), a
//    perforated one by its size, below 4 2^e, and
//      sum over quantized or perforated bins of M_e 2^e times those <= tolerance * L,
//    with M_e the bin's size and L = sum_e M_e 2^e <= |x|^T |y|. The budget goes to the
//    steps down the ladder (a bin from one level to the next) that save the most bits
//    per unit of a-priori error. Hence
//      |value - x^T y| <= tolerance |x|^T|y| + (rounding of a double dot product of x~, y~).
//    Where no cancellation occurs (x_i y_i of one sign) this is the seed's relative bound.
//  - QdotPolicy::paper: seed 002's selection exactly: bin scores (3.10) with eps/N_bins
//    (section 4.1), precision function (3.9) and early termination (Theorem 3.6). Its
//    Theorem 3.5 assumes |x_i y_i| < 2^(e+1), one rounding per product and
//    e_max <= fexp(x^T y); none is guaranteed, so this policy promises no tolerance.
//    `bound` is certified all the same.
//
// NaN or Inf in x or y: value is the plain dot product sum x_i y_i (so NaN/Inf as a
// plain dot gives), stats.nonfinite is set and bound is +inf. Products that overflow
// give an infinite value and bound.
#pragma once

#include <ebla/core/error.hpp>
#include <ebla/core/format.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

/// How qdot_select chooses a precision for each exponent bin.
enum class QdotPolicy : std::uint8_t {
  budget,  ///< certified: approximation error <= tolerance |x|^T|y| (see above)
  paper,   ///< seed 002, (3.9)-(3.10) with eps/N_bins and Theorem 3.6, reproduced exactly
};

/// One rung of the precision ladder: a format, or perforation (skip the component).
struct QdotLevel {
  bool perforate = false;
  Format format{};  ///< unused when perforate
  static QdotLevel of(const Format& f) { return QdotLevel{false, f}; }
  static QdotLevel skip() { return QdotLevel{true, Format{}}; }
  /// Precision in bits: format.t, or 0 for perforate.
  int bits() const { return perforate ? 0 : format.t; }
};

/// Options of qdot. Validation (qdot_select, qdot) throws InvalidArgument naming the
/// function and value for: tolerance <= 0, NaN or infinite; a ladder not strictly
/// decreasing in precision, with perforate anywhere but last, or whose first format is
/// less precise than the input.
struct QdotOptions {
  /// Tolerance eps > 0 (meaning per policy, see the top of this header). Default 1e-8.
  double tolerance = 1e-8;
  /// Selection policy. Default budget.
  QdotPolicy policy = QdotPolicy::budget;
  /// Formats to choose from, most precise first, optionally ending with perforate. Empty
  /// means the seed's ladder: {binary64, binary32, binary16, perforate} for double input,
  /// {binary32, binary16, perforate} for float input. The first rung is the input precision.
  std::vector<QdotLevel> ladder;
  /// qdot on contiguous host arrays remembers the plan of its last calls on the same arrays
  /// (pointers, length, options; a few per thread) and tries it first: one pass over x and
  /// y counts the histogram and computes under that plan, and where the histogram selects
  /// the same level for every bin, that is the result; else a second pass computes under
  /// the selected plan. The result is the same bits either way (that of qdot_compute under
  /// qdot_select's plan): only the number of passes (stats.passes) depends on this option
  /// and on the history of calls. false: always select, then compute.
  bool reuse_plan = true;
  /// With reuse_plan: 0 keeps the result that of qdot_select's plan, bit for bit.
  /// m > 0 (at most 64) tries the remembered plan widened by up to m bins (each bin at the
  /// most precise level among the remembered plan's bins within that many of it) and keeps
  /// that one pass wherever it computed every bin at least as precisely as the plan now
  /// selected: for vectors that drift from call to call, as in iterative solvers. The
  /// widening is the margin the last two calls on the same arrays needed, plus one bin, at
  /// most m (one bin while fewer are known), so that the levels stay near the selected ones. The
  /// bound is certified either way and the budget contract holds (each product's error is
  /// at most what the selected level allows); only the value may differ from the two-phase
  /// one in the last bits, and stats.count_per_level reports the levels used. The value
  /// then depends on the plans of the last calls on the same arrays (ebla's solvers forget
  /// the plans of the arrays they allocate, so that a solve depends on its inputs alone).
  /// automatic_margin (the default): 0 for qdot called on its own; ebla::cg on one process
  /// uses solver_margin for a fixed tolerance (DotPolicy::approximate); 0 under MPI, for
  /// the automatic policy and in the power method.
  int plan_margin = automatic_margin;
  /// Whether the selection may perforate every nonzero product. A tolerance of 4 or more
  /// lets the budget policy do so (every bin's a-priori error, below 4 2^e a product, then fits),
  /// and the value is then exactly 0 with no component computed, whatever x^T y: a solver
  /// that tests convergence on it (seed 002's Algorithm 4.1) stops at once. false: such a
  /// plan computes its top bin at the least precise level of the ladder that is not
  /// perforate instead (stats.kept_top_bin), which only lowers the error, so the contract
  /// of the policy still holds. The C API (ebla/qdot.h) sets false.
  bool perforate_all = true;
  static constexpr int automatic_margin = -1;
  static constexpr int solver_margin = 8;
};

/// The parameters Theta(x, y, eps) of Algorithm 3.2: plain data, printable, reusable.
struct QdotPlan {
  std::size_t n = 0;          ///< length of the vectors the plan was selected for
  int input_t = 53;           ///< precision of the input (53 double, 24 float)
  QdotPolicy policy = QdotPolicy::budget;
  double tolerance = 0;
  std::vector<QdotLevel> ladder;        ///< resolved ladder; level 0 = input precision
  int e_min = 0, e_max = -1;            ///< exponent range of the bins (empty if e_min > e_max)
  std::vector<std::uint8_t> level;      ///< ladder index of bin e_min + j
  std::vector<std::int64_t> count;      ///< M_e: components in bin e_min + j
  std::size_t nonzero = 0;              ///< components with x_i y_i != 0 (binned)
  bool nonfinite = false;               ///< NaN or Inf seen in the inputs
  bool early_termination = false;       ///< Theorem 3.6 (paper policy): all input precision
  bool kept_top_bin = false;            ///< the policy perforated every product; !perforate_all kept the top bin
  double budget_used = 0;               ///< budget policy: the a-priori error spent, over L
  double select_seconds = 0;            ///< time of the selection phase

  int bins() const;                      ///< number of nonempty bins N_bins
  std::vector<std::size_t> count_per_level() const;  ///< components per ladder level
  std::string to_string() const;         ///< human-readable summary, one bin a line
};

/// Statistics of one qdot_compute.
struct QdotStats {
  int bins = 0;                           ///< nonempty bins of the plan
  int e_min = 0, e_max = -1;              ///< exponent range of the plan
  std::vector<std::size_t> count_per_level;  ///< components per ladder level (this data)
  std::size_t zeros = 0;                  ///< components with x_i y_i == 0 (no bin)
  std::size_t outside_plan = 0;           ///< components outside the plan's bins (input precision)
  bool nonfinite = false;                 ///< NaN/Inf in the input: value is the plain dot
  bool early_termination = false;
  bool kept_top_bin = false;  ///< the plan's kept_top_bin: the tolerance would have perforated every product
  int passes = 1;  ///< reads of x and y: 1 for qdot_compute; 2 for qdot, or 1 where the plan it tried held
  double select_seconds = 0, compute_seconds = 0;
};

/// The approximate dot product and its certified bound.
struct QdotResult {
  double value = 0;               ///< the approximation of x^T y
  double bound = 0;               ///< |value - x^T y| <= bound (see the top of this header)
  double quantization_bound = 0;  ///< part of bound due to the products (incl. perforation)
  double accumulation_bound = 0;  ///< part of bound due to the summation
  double abs_sum = 0;             ///< Q: sum |q_i|, perforated |x_i y_i| included (approximates |x|^T|y|)
  QdotStats stats;
};

const char* to_string(QdotPolicy p);
/// "budget" or "paper"; throws InvalidArgument naming the string otherwise.
QdotPolicy qdot_policy_by_name(const std::string& name);
/// Parses a ladder like "binary64,binary32,binary16,perforate": format names (format_by_name)
/// and perforate, separated by ';' or ','; a custom format keeps its key=value pieces, so
/// "binary64;custom:t=8,emin=-6,emax=7" and "binary64,custom:t=8,emin=-6,emax=7" are the same
/// ladder. "" is the empty ladder (the default). Throws InvalidArgument naming the level and
/// the ladder for an empty level or a name that is not a format.
std::vector<QdotLevel> qdot_ladder_by_names(const std::string& names);
std::string to_string(const std::vector<QdotLevel>& ladder);

// Raw host pointers (n may be 0; pointers may be null only if n == 0).
QdotPlan qdot_select(const double* x, const double* y, std::size_t n, const QdotOptions& options);
QdotPlan qdot_select(const float* x, const float* y, std::size_t n, const QdotOptions& options);
QdotResult qdot_compute(const double* x, const double* y, std::size_t n, const QdotPlan& plan);
QdotResult qdot_compute(const float* x, const float* y, std::size_t n, const QdotPlan& plan);
QdotResult qdot(const double* x, const double* y, std::size_t n, const QdotOptions& options);
QdotResult qdot(const float* x, const float* y, std::size_t n, const QdotOptions& options);

}  // namespace ebla

#include <ebla/kernels/qdot_views.hpp>
