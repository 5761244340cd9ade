// The dot products the solvers take: one policy, many calls, each call recorded.
//
//   DotPolicy::exact()              plain double dot product (plain_dot);
//   DotPolicy::approximate(options) qdot with a tolerance, selection policy and ladder;
//   DotPolicy::fixed(format)        every product from factors rounded to one format of
//                                   the catalogue (a qdot plan with every bin at that
//                                   format), accumulated in double.
//   DotPolicy::automatic(rule)      qdot whose tolerance the solver chooses for each call
//                                   from what the iteration needs (dot_rule.hpp); only the
//                                   solvers take it (ebla::dot throws).
//
// Every call returns a DotRecord: the value, a bound on |value - x^T y|, and the fraction
// of the n components computed at each rung of the ladder. For qdot and fixed, the bound
// is qdot's certified bound (kernels/qdot.hpp). For exact it is gamma_n |x|^T|y|
// (Higham, Accuracy and Stability, eq. (3.5)), with |x|^T|y| = |x^T y| when x = y, and
// for x != y left as NaN (not computed: it would cost another pass over the vectors).
#pragma once

#include <ebla/kernels/qdot.hpp>
#include <ebla/solvers/dot_rule.hpp>
#include <ebla/solvers/operators.hpp>

#include <memory>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

enum class DotKind : std::uint8_t { exact, qdot, fixed, automatic };

struct DotPolicy {
  DotKind kind = DotKind::exact;
  QdotOptions qdot;  ///< kind == qdot: tolerance, policy, ladder (automatic: all but the tolerance)
  Format format{};   ///< kind == fixed: the format of every factor
  std::shared_ptr<const DotRule> rule;  ///< kind == automatic: null takes the solver's default

  static DotPolicy exact();
  static DotPolicy approximate(const QdotOptions& options);
  /// Throws InvalidArgument if the format is more precise than double.
  static DotPolicy fixed(const Format& format);
  /// qdot with the tolerance of each call chosen by `rule` (null: the solver's default rule,
  /// default_cg_rule() or default_power_rule()); `base` gives the ladder, plan reuse and
  /// margin. Throws InvalidArgument if base.policy is not budget (only the budget policy
  /// guarantees its tolerance, which the rule relies on).
  static DotPolicy automatic(std::shared_ptr<const DotRule> rule = nullptr, const QdotOptions& base = {});
  /// Names of the ladder rungs the records count: {"binary64"} for exact, the qdot
  /// ladder (e.g. binary64, binary32, binary16, perforate), or {"binary64", format}.
  std::vector<std::string> level_names() const;
  /// One line, e.g. "qdot(tol=1e+02, policy=paper)", "exact", "fixed(binary16)",
  /// "auto(relaxed(eta=1, max=0.01))".
  std::string to_string() const;
};

/// One dot product call.
struct DotRecord {
  double value = 0;
  double bound = 0;               ///< |value - x^T y| <= bound (NaN: not computed, see above)
  std::vector<double> fraction;   ///< per ladder rung: components computed there / n
  double zero_fraction = 0;       ///< components with x_i y_i = 0 (no bin) / n
  double abs_sum = 0;             ///< |x|^T|y| as computed (qdot's Q; NaN for an exact x != y)
  double tolerance = 0;           ///< the qdot tolerance of this call (0: exact)
  double accuracy = 0;            ///< DotPolicy::automatic: the relative accuracy asked (dot_rule.hpp)
  double seconds = 0;
};

/// The record of an exact sum of squares v^T v = s computed in double over n terms (any
/// order): bound gamma_n s / (1 - gamma_n) (all terms are nonnegative), fraction {1}.
DotRecord exact_squares_record(double s, std::size_t n);

/// value = x^T y under the policy. If `levels` is not null, it receives for each
/// component the ladder index it was computed at (255 for a zero product, which has no
/// bin): seed 002's Fig. 5 maps. Throws InvalidArgument on a length mismatch, and for the
/// automatic policy (which only a solver can resolve).
DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y, std::vector<std::uint8_t>* levels = nullptr);

/// fl(x^T y) in double, the same bits for any thread count: on host memory, summed per
/// fixed chunk (eight interleaved partial sums, added in a fixed order) on every host thread,
/// the chunks' sums added in chunk order; elsewhere per chunk of 1024 on the execution
/// space, the chunks' sums added in order on the host. Every ordering of a sum keeps the
/// gamma_n bound (Higham, (3.5)).
double plain_dot(ConstVector x, ConstVector y);

namespace detail {

/// The record of a qdot result over n components (fractions per rung of n).
DotRecord record_of(const QdotResult& r, std::size_t n);
/// The ladder index each component of x, y is computed at under `plan` (255: a zero or
/// nonfinite product, which has no bin).
void level_map(const QdotPlan& plan, ConstVector x, ConstVector y, std::vector<std::uint8_t>& levels);

}  // namespace detail

}  // namespace ebla
