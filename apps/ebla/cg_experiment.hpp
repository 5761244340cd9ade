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

/// The modelled bytes one iteration of a run moves: the stored solve's own count where the
/// Krylov vectors are narrow, else binary64 CG's (docs/solvers.md, "Preconditioners
/// compared"): a CSR pass over A (12 bytes per nonzero, 8 per row offset; none for the
/// stencil), 104 bytes per row for CG's vectors, 16 more with Jacobi (D^-1 read in two
/// passes), and with a preconditioner built from A the bytes it stores plus 8 per row for z
/// in CG's passes and 16 (one pass: block-Jacobi) or 32 (two sweeps: SGS, IC(0)) per row
/// for its own vectors.
double modelled_bytes_per_iteration(const CgResult& r, std::size_t n, std::size_t nnz, bool csr);

}  // namespace ebla::cli
