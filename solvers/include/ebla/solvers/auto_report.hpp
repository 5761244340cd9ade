// What the study of --qdot-tol auto reports of one problem (docs/solvers.md, "Choosing the
// tolerance"): a run with exact dot products, one at each fixed tolerance, one with the
// automatic policy, and the verdict of judge_automatic (dot_mix.hpp) on them.
//
// Where it runs: on the host (tables of results).
#pragma once

#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/dot_mix.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

struct AutoReport {
  std::string name;                     ///< e.g. HB/1138_bus
  std::string description;              ///< the problem, one line
  std::string setting;                  ///< the stopping rule, one line
  std::string reference;                ///< "exact CG" or "PM"
  std::string dots[2];                  ///< the two dot products, e.g. "r^T z", "p^T q"
  std::vector<std::string> labels;      ///< "exact", "1e-12", ..., "auto"
  std::vector<std::string> status;      ///< per run
  std::vector<PolicyOutcome> outcomes;  ///< per run (the first exact, the last auto)
  std::vector<DotMix> mix[2];           ///< per dot product, per run
  std::string extra_name;               ///< an extra column (power: |lambda - lambda_PM|), or empty
  std::string extra_key;                ///< its JSON key (power: eigenvalue_error)
  std::vector<double> extra;
  double slack = 1.03;                  ///< the iteration target (judge_automatic)
  double reference_value = 0;           ///< a value of the first run the others are compared with (power: lambda_PM)
  AutoVerdict verdict;
  std::vector<SolverEvent> events;      ///< of the automatic run
  AutoReport() = default;
  AutoReport(std::string name, std::string description, std::string setting, std::string reference,
             const char* dot_a, const char* dot_b);
  /// Appends a run (its outcome: the mean of the two dot products' mixes); the verdict is
  /// taken when `judge` is called after the last (auto).
  void add(const std::string& label, SolverStatus status, bool ok, int iterations, double tolerance, const DotMix& a,
           const DotMix& b, double extra_value = 0);
  void judge();
  std::vector<PolicyOutcome> fixed() const;  ///< the runs between exact and auto
  /// The fixed runs' iterations, shares below binary64 and modelled bytes, in run order.
  struct Columns {
    std::vector<std::int64_t> iterations;
    std::vector<double> below, bytes;
  };
  Columns fixed_columns() const;
};

}  // namespace ebla
