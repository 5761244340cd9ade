// The study of --qdot-tol auto (docs/solvers.md, "Choosing the tolerance") as a library:
// the built-in problems of CG and of the power method, and the sequence of runs on one
// problem (exact, each fixed tolerance of a sweep, auto) that fills an AutoReport.
//
//   for (const auto& a : ebla::cg_auto_set(dir, ebla::CgOptions{}, nullptr)) {
//     ebla::AutoReport r(a.name, ...);
//     ebla::run_auto_sequence(r, dots, ebla::ProblemUse::cg, run, nullptr);
//   }
//
// Where it runs: the solves as cg and power_method run them (their Views in the default memory
// space); the tables on the host.
#pragma once

#include <ebla/core/hdf5.hpp>
#include <ebla/solvers/auto_report.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/problem_spec.hpp>
#include <ebla/solvers/solver_choice.hpp>

#include <functional>
#include <string>
#include <vector>

namespace ebla {

/// A problem of the study: its name (empty: the problem's own), what to load, and the
/// solver's options for it (CgOptions or PowerOptions).
template <class Options>
struct AutoCase {
  std::string name;
  ProblemSpec spec;
  Options solver;
};

/// How messages name a field of the set's problem specs (ProblemSpec::name_field), and
/// the directory option that an unreadable matrix is blamed on.
struct AutoSetNames {
  std::function<std::string(const std::string& field)> name_field;
  std::string matrix_dir = "ebla::auto_set matrix_dir";
};

/// The set of CG (each to ||r|| <= 1e-8 ||b||, the other options of `base`): HB/1138_bus,
/// HB/bcsstk13 and HB/gr_30_30 from `matrix_dir` with Jacobi, HPCCG 30^3, and the Laplacian
/// of 1e4 vertices, degree 10, shift 1e-3.
std::vector<AutoCase<CgOptions>> cg_auto_set(const std::string& matrix_dir, const CgOptions& base,
                                             const AutoSetNames& names = {});
/// The set of the power method (the other options of `base`): Laplacians of 1e4 vertices
/// (degree 10, seed 1, tau 1e-6, 300 iterations; degree 8, seed 3, tau 1e-8, 1000
/// iterations), HPCCG 20^3 (tau 1e-8) and HB/1138_bus (tau 1e-6), 5000 iterations each.
std::vector<AutoCase<PowerOptions>> power_auto_set(const std::string& matrix_dir, const PowerOptions& base,
                                                   const AutoSetNames& names = {});

/// dir/name.mtx, a matrix of the set; throws InvalidArgument naming `what` if it cannot be
/// opened.
std::string auto_set_matrix(const std::string& dir, const std::string& name, const std::string& what);

/// One run of the study: (label, policy, fixed tolerance or 0, HDF5 group name) -> the run
/// added to the report; returns its events.
using AutoRun = std::function<std::vector<SolverEvent>(const std::string&, const DotPolicy&, double, const std::string&)>;

/// Runs exact, each tolerance of `dots.sweep` and auto (dots.automatic(use)) through `run`,
/// takes the verdict and writes the summary into `out` (if not null).
void run_auto_sequence(AutoReport& r, const DotSpec& dots, ProblemUse use, const AutoRun& run, const Hdf5Group* out);

}  // namespace ebla
