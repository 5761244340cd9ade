// The dot products of a solver under its policy, and, for DotPolicy::automatic, each to the
// relative accuracy its rule asks (dot_rule.hpp):
//
//   delta = min(1/2, tightening * rule(request))
//   tolerance = 0.9 delta / ((1 + delta) kappa), kappa = |x|^T|y| / |x^T y| of the role's
//                last call, rounded down to a power of 2^(1/4) (so that consecutive calls
//                share a tolerance and qdot's plan reuse can serve them)
//   accepted if bound <= delta (|value| - bound), i.e. |value - x^T y| <= delta |x^T y|,
//     and, where the solver divides by it as a positive number, value - bound > 0;
//   else once more with the tolerance cut by the miss, then the exact dot product.
//
// The budget policy guarantees |value - x^T y| <= tolerance |x|^T|y| + the rounding of a
// double dot product, so with kappa known the first call is accepted; kappa is not known
// before the call, hence the check (the bound is a posteriori and certified).
#pragma once

#include <ebla/solvers/dot_rule.hpp>
#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/space.hpp>

#include <array>
#include <memory>
#include <vector>

namespace ebla::detail {

/// The policy CG on A computes with: `given`, its QdotOptions::automatic_margin resolved to
/// QdotOptions::solver_margin for DotPolicy::approximate on one process (the plans of
/// consecutive calls drift, and a widened last plan saves the second pass where it moved);
/// to 0 under MPI (the distributed qdot selects, then computes, every time) and for
/// DotPolicy::automatic, whose rule asks each dot product for the least precision it can
/// take: a widened plan computes some bins more precisely than asked. The power method
/// keeps 0 (see power.cpp).
DotPolicy in_solver(const DotPolicy& given, const SolverSpace& A);

class AccurateDots {
public:
  /// `fallback`: the solver's default rule, for an automatic policy without one.
  AccurateDots(const DotPolicy& policy, std::shared_ptr<const DotRule> fallback, std::vector<SolverEvent>& events);

  bool automatic() const { return automatic_; }

  /// The relative accuracy the rule asks for, times the tightening, capped at 1/2.
  double accuracy(const DotRequest& request) const;
  /// The qdot options for relative accuracy delta (tolerance 0 in the result: take the
  /// exact dot product, delta is beyond qdot's reach).
  QdotOptions options_for(DotRole role, double delta) const;
  /// Whether the record certifies relative accuracy delta (and a positive value, if asked).
  static bool meets(const DotRecord& d, double delta, bool positive);

  /// x^T y under the policy; automatic: to relative accuracy delta as described above.
  DotRecord dot(const SolverSpace& A, const DotRequest& request, ConstVector x, ConstVector y,
                std::vector<std::uint8_t>* levels, bool positive);
  /// The same for a record already computed at options_for(role, delta) (a dot product
  /// that rode in another pass): kept if it meets delta, else recomputed as dot() does.
  DotRecord check(const SolverSpace& A, const DotRequest& request, double delta, DotRecord d, ConstVector x,
                  ConstVector y, bool positive);
  /// Learns the cancellation ratio of a record for its role.
  void observe(DotRole role, const DotRecord& d);

  /// Safeguard: every later delta is multiplied by `factor` (< 1); records why.
  void tighten(double factor, int iteration, const std::string& why);

private:
  DotRecord exact(const SolverSpace& A, ConstVector x, ConstVector y, std::vector<std::uint8_t>* levels) const;
  DotRecord retry(const SolverSpace& A, const DotRequest& request, double delta, const DotRecord& missed,
                  ConstVector x, ConstVector y, std::vector<std::uint8_t>* levels, bool positive);

  DotPolicy policy_;
  bool automatic_ = false;
  std::shared_ptr<const DotRule> rule_;
  std::vector<SolverEvent>& events_;
  double tightening_ = 1;
  std::array<double, 4> kappa_{{1, 1, 1, 1}};  // per DotRole
};

}  // namespace ebla::detail
