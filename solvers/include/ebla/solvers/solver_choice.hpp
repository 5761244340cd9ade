// A solver run as a user states it, checked into the library's specs: the problem (which
// matrix, which operator, sizes and files given as text) and the dot products (exact,
// qdot at a tolerance, auto, a fixed format, or a sweep of qdot tolerances). A command
// line, a configuration file or a Python module fills a ProblemChoice and a DotChoice and
// gets every inconsistent or out-of-range choice as an InvalidArgument naming its field
// the way the caller names it (ebla cg: "ebla cg --nx").
//
//   ebla::DotChoice d;
//   d.sweep = "1e-12:1e-3";
//   d.given = [](const std::string& field) { return field == "sweep-qdot-tol"; };
//   const ebla::DotSpec dots = ebla::make_dot_spec(d, ebla::ProblemUse::cg);
//   // dots.sweep = 1e-12, ..., 1e-3; dots.at(t): the qdot policy of the run at t
//
// Where it runs: on the host (option checking); the runs it sets up as cg and power_method run.
#pragma once

#include <ebla/solvers/dots.hpp>
#include <ebla/solvers/problem_spec.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ebla {

/// What a choice was given and how its messages name a field. Fields are the long option
/// names without dashes ("nx", "qdot-tol"); `name` receives "--nx" (or "" for the choice as
/// a whole) and returns e.g. "ebla cg --nx".
struct ChoiceNames {
  std::function<bool(const std::string& field)> given;         ///< null: nothing given
  std::function<std::string(const std::string& option)> name;  ///< null: "ebla::<Choice> --nx"
  bool was_given(const std::string& field) const { return given && given(field); }
};

/// The problem as text and numbers. An empty problem is the use's default: hpccg for CG,
/// laplacian for the power method.
struct ProblemChoice : ChoiceNames {
  std::string problem;  ///< hpccg, laplacian or diffusion (empty: cg hpccg, power laplacian)
  int nx = 20, ny = 20, nz = 20;
  std::string n = "1000";  ///< laplacian: vertices, a whole number (1e4 accepted)
  double degree = 10;
  std::int64_t seed = 1;
  double shift = 0;
  std::string matrix, rhs, x0, hdf5;
  bool no_symmetry_check = false;
  std::string op = "csr";  ///< csr, stencil or dense
  std::string named(const std::string& option) const;
};

/// The problem's spec: one source of --problem, --matrix, --hdf5; options that apply to
/// that source only; sizes and files checked (check_problem_spec). Reads no file.
ProblemSpec make_problem_spec(const ProblemChoice& choice, ProblemUse use);

/// The dot products as text.
struct DotChoice : ChoiceNames {
  std::string dot;                 ///< exact, qdot or fixed (empty: implied by the others, else exact)
  std::string qdot_tol = "1e-8";   ///< a tolerance, or auto (implies qdot)
  std::string qdot_policy = "budget";
  std::string ladder;              ///< comma-separated level names (empty: the default)
  std::string format;              ///< of every factor (implies fixed)
  std::string sweep;               ///< A:B, powers of ten (implies qdot)
  int collectives = 1;             ///< distributed qdot: MPI_Allreduce per qdot, 1 or 2
  int margin = QdotOptions::automatic_margin;  ///< QdotOptions::plan_margin, 0..64
  std::string named(const std::string& option) const;
};

/// The checked choice of dot products. `sweep` is empty for a single run.
struct DotSpec {
  DotPolicy policy;                ///< of a single run (exact for a sweep's reference)
  std::vector<double> sweep;       ///< qdot tolerances of a sweep, increasing
  QdotPolicy qdot_policy = QdotPolicy::budget;
  std::vector<QdotLevel> ladder;   ///< as given (empty: the default)
  std::vector<std::string> rungs;  ///< ladder names of policy (of a qdot run in a sweep)
  int collectives = 1;             ///< distributed qdot: MPI_Allreduce per qdot (1 or 2)
  int margin = QdotOptions::automatic_margin;  ///< QdotOptions::plan_margin of every qdot
  /// The qdot policy of one run of a sweep (or, sweep = false, of a single run at that
  /// tolerance). A sweep compares the precision that each tolerance gives away, so its runs
  /// take no plan margin unless one is given (a widened plan computes some bins more
  /// precisely than asked); a single run takes the solver's default.
  DotPolicy at(double tolerance, bool sweep = true) const;
  /// qdot-tol auto: the solver's default rule (default_cg_rule, default_power_rule).
  DotPolicy automatic(ProblemUse use) const;
};

/// The dot products of a run or a sweep: the kind (given, or implied by qdot-tol, format,
/// sweep-qdot-tol, which must agree), options that apply to qdot only, the tolerance, the
/// sweep, the margin and the collectives checked. The ladder is checked by check_dot_spec.
DotSpec make_dot_spec(const DotChoice& choice, ProblemUse use);

/// The dot products of the auto experiment: exact, each tolerance of the sweep (by default
/// 1e-12:1e-3) with the budget policy and the given ladder, then auto. Throws for the
/// choices the experiment makes itself (dot, qdot-tol, format, qdot-collectives, a policy
/// other than budget).
DotSpec experiment_dot_spec(const DotChoice& choice);

/// "A:B" -> 10^a, ..., 10^b (decade_tolerances) where A = 10^a, B = 10^b are written as
/// decimal powers of ten (1e-16, 1000); throws naming `what` otherwise or if A > B.
std::vector<double> parse_decade_range(const std::string& text, const std::string& what);

/// Checks the ladder (and margin) of every policy of `spec` on a one-component qdot, on
/// `ranks` processes (a plan margin applies on one only). Needs Kokkos.
void check_dot_spec(const DotSpec& spec, const DotChoice& names, int ranks);

}  // namespace ebla
