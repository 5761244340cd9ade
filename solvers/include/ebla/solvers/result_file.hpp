// The solvers' results in an HDF5 file (docs/solver-output.md): the problem's and options'
// attributes, a run's attributes and per-iteration series, a sweep's runs and summary, and
// the summary of an --experiment auto study. One writer per result type.
//
// Where it runs: on the host (files, from the results' host-side records).
#pragma once

#include <ebla/core/hdf5.hpp>
#include <ebla/solvers/auto_report.hpp>
#include <ebla/solvers/problem_spec.hpp>
#include <ebla/solvers/series.hpp>
#include <ebla/solvers/sweep.hpp>

#include <string>
#include <vector>

namespace ebla {

/// The HDF5 group of a sweep's run at a qdot tolerance: qdot_tol_1e-08 and the like.
std::string sweep_group_name(double tolerance);

/// The problem: name, description, operator, n, nnz, x0 (CG: b, x_exact), hpccg and diffusion: nx, ny, nz.
void write_problem(const Hdf5Object& g, const ProblemData& p, ProblemUse use);
/// The policy (dot, dot_policy, rungs; qdot: tolerance and policy; fixed: format).
void write_dot_attributes(const Hdf5Object& g, const DotPolicy& policy, const std::vector<std::string>& rungs);
/// The stopping rule: tolerance, norm, stop, max_iterations, jacobi / tolerance, max_iterations.
void write_options(const Hdf5Object& g, const CgOptions& o);
void write_options(const Hdf5Object& g, const PowerOptions& o);

/// A run: its result's attributes and its series, one dataset per quantity over the
/// iterations, with the rung maps of length n when `levels`.
void write_run(const Hdf5Group& g, const CgRun& run, std::size_t n, bool levels);
void write_run(const Hdf5Group& g, const PowerRun& run, std::size_t n, bool levels);

/// A sweep under the root: the reference in group "reference", each run in its
/// sweep_group_name, and per tolerance its iterations, status and mean fractions (power:
/// the eigenvalue and |lambda - lambda_PM|, the largest tolerance within tau).
void write_sweep(const Hdf5Group& root, const QdotSweep<CgRun>& s, QdotPolicy policy,
                 const std::vector<std::string>& rungs, std::size_t n, bool levels);
void write_sweep(const Hdf5Group& root, const QdotSweep<PowerRun>& s, double largest_within, QdotPolicy policy,
                 const std::vector<std::string>& rungs, std::size_t n, bool levels);

/// Datasets tolerance, iterations, below_binary64, bytes (of the fixed runs) and the
/// verdict's attributes.
void write_auto_summary(const Hdf5Group& g, const AutoReport& r, const std::vector<double>& tolerances);

}  // namespace ebla
