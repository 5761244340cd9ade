// The qdot-tolerance sweep of CG and the power method (seed 002, Figs. 4, 6-7): a run with
// exact dot products, then one with qdot at each tolerance, and the largest tolerance that
// keeps the exact run's iteration count.
//
//   const auto s = ebla::sweep_qdot_tolerances(ebla::decade_tolerances(-8, 0), at,
//       [&](const ebla::DotPolicy& dots, double) { return ebla::cg(A, b, x0, dots, options); });
//   // s.reference, s.runs[i] at s.tolerances[i], s.largest_same
//
// Where it runs: the solves as cg and power_method run them; the tables on the host.
#pragma once

#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/series.hpp>

#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ebla {

/// 10^first, 10^(first+1), ..., 10^last, each the double nearest the decimal 1e<k>.
std::vector<double> decade_tolerances(int first, int last);

/// A tolerance as written in tables and group names: 1e-08, 1e+00, else %.6g (2.5e-03).
std::string tolerance_text(double tolerance);

/// The largest tolerance whose flag is set (NaN if none).
double largest_where(const std::vector<double>& tolerances, const std::vector<bool>& flags);

/// The runs of a sweep. Run is CgResult, PowerResult, CgRun or PowerRun (see result_of).
template <class Run>
struct QdotSweep {
  Run reference;                    ///< exact dot products
  std::vector<double> tolerances;   ///< increasing
  std::vector<Run> runs;            ///< one per tolerance
  std::vector<bool> same;           ///< run i converged in the reference's iterations
  double largest_same = std::numeric_limits<double>::quiet_NaN();  ///< NaN: none
};

/// Runs solve(policy_at(t), t) for each tolerance t against `reference` (t = 0 was its call).
/// The same count means something only when both converged (not both stopped at the limit).
template <class Run, class Solve>
QdotSweep<Run> sweep_qdot_tolerances(Run reference, const std::vector<double>& tolerances,
                                     const std::function<DotPolicy(double)>& policy_at, Solve&& solve) {
  QdotSweep<Run> s;
  s.reference = std::move(reference);
  s.tolerances = tolerances;
  const auto& ref = result_of(s.reference);
  for (double t : tolerances) {
    s.runs.push_back(solve(policy_at(t), t));
    const auto& r = result_of(s.runs.back());
    s.same.push_back(r.status == SolverStatus::converged && ref.status == SolverStatus::converged &&
                     r.iterations == ref.iterations);
  }
  s.largest_same = largest_where(s.tolerances, s.same);
  return s;
}

/// The same, the reference being solve(DotPolicy::exact(), 0).
template <class Solve>
auto sweep_qdot_tolerances(const std::vector<double>& tolerances, const std::function<DotPolicy(double)>& policy_at,
                           Solve&& solve) {
  auto reference = solve(DotPolicy::exact(), 0.0);
  return sweep_qdot_tolerances(std::move(reference), tolerances, policy_at, solve);
}

/// |lambda - lambda_PM| of each run of a power-method sweep.
std::vector<double> eigenvalue_errors(const QdotSweep<PowerRun>& s);

}  // namespace ebla
