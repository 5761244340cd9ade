// ebla cg --experiment preconditioners: every preconditioner of CG (none, Jacobi,
// block-Jacobi, SGS, IC(0)) with exact and with automatic dot products and storage, on the
// SuiteSparse set of data/matrices, HPCCG and the diffusion problem (or on the problem of the
// options): iterations, time, modelled bytes per iteration and the true residual of each run.
#pragma once

#include "solver_common.hpp"

#include <ebla/solvers/cg.hpp>

namespace ebla::cli {

/// The runs of the experiment, a table (or a JSON line per run), and with `out` each run in
/// a group of the HDF5 file. `base`: the solver options of the command (tolerance, norm,
/// maximum iterations, block size); each run sets its preconditioner, dots and storage.
/// Returns exit code 0 when every run converged, else 1.
int run_preconditioner_experiment(const SolverSetup& c, const CgOptions& base, Hdf5Writer* out);

}  // namespace ebla::cli
