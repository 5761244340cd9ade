// Test problems for the solvers.
//
// HPCCG (Mantevo): the 27-point stencil on an nx x ny x nz grid, rows numbered
// i = iz nx ny + iy nx + ix; A_ii = 27, A_ij = -1 for each of the (up to 26) neighbours j
// of i inside the grid; b_i = 27 - (nonzeros in row i - 1), so that A 1 = b and the
// exact solution is the vector of ones; x0 = 0. Symmetric positive definite (strictly
// diagonally dominant in the interior rows' sense: 27 > 26).
//
// Diffusion: -div(k grad u) = f on the same grid and numbering, cell-centred finite volumes
// (7 points, spacing 1) with u = 0 outside the grid. Cell i has a coefficient k_i in
// [1e-3, 1e3]: t_i = 0.7 g(centre of i) + 0.3 u_i, g a smooth random field on the unit cube
// (values uniform in [0, 1) at the 5 x 5 x 5 nodes of a lattice, blended by smoothstep
// weights) and u_i uniform in [0, 1); s_i = (t_i - min t) / (max t - min t); x_i = 6 s_i - 3
// = d + f with d = floor(x_i) and f in [0, 1); k_i = 10^d (1 + 9 f), 10^x interpolated linearly
// within each decade, so the smallest k is 1e-3 and the largest 1e3 when the grid has two
// cells or more (one cell: s = 0). Every draw comes from std::mt19937_64(seed), the lattice
// first, then u_i in row order; only + - * / and floor enter, so (nx, ny, nz, seed) gives the
// same bits on every machine. Neighbours i, j share the face coefficient k_ij = q(2 k_i k_j /
// (k_i + k_j)), their harmonic mean, and a face of cell i on the boundary has q(2 k_i) (the
// cell centre lies half a cell from it); q rounds to a multiple of 2^-38 (a relative change
// below 2e-9, as every coefficient is at least 1e-3). A_ij = -k_ij, A_ii = the sum of the
// coefficients of i's six faces (at most 6 x 2e3). Every entry is a multiple of 2^-38 and the
// magnitudes of a row add up to less than 2^15, so every partial sum of a row is a double:
// b = A 1 is exact, q(2 k_i) times the number of boundary faces of cell i (0 inside), and any
// spmv computes A 1 exactly. Symmetric positive definite: diagonally dominant with equality
// inside, strictly in the rows of boundary cells, irreducible. x0 = 0, x* = 1. O(nnz) time,
// the CSR arrays and the coefficients (8 bytes a cell) only.
//
// Graph Laplacians: L = D - A of an Erdos-Renyi random graph G(n, p) with
// p = mean_degree / (n - 1), drawn from a seeded std::mt19937_64 by geometric skips over
// the strictly upper triangle (O(n + edges) time), so the same (n, mean_degree, seed)
// gives the same matrix on every machine. Symmetric positive semidefinite; its largest
// eigenvalue is what the power method of seed 002 section 4.3 estimates.
//
// Where it runs: the problems are built on the host and returned as Views of the default memory
// space (copied to a device's memory through host mirrors).
#pragma once

#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ebla {

struct HpccgProblem {
  int nx = 0, ny = 0, nz = 0;
  CsrMatrix A;       ///< the 27-point matrix, columns sorted in each row
  Vector b;          ///< A 1
  Vector x0;         ///< zeros
  Vector x_exact;    ///< ones
};

/// Throws InvalidArgument unless nx, ny, nz >= 1 and the matrix fits (rows in int).
HpccgProblem hpccg_problem(int nx, int ny, int nz);
/// The same right-hand side without the matrix (for the stencil operator).
Vector hpccg_rhs(int nx, int ny, int nz);
/// HPCCG's matrix as an operator held in its narrowest exact words (CsrOperator::narrowest)
/// and written row by row in them, never in binary64: bfloat16 values (-1 and 27), columns
/// as 16-bit offsets where nx ny + nx + 1 <= 32767 (else int), 4 bytes a nonzero instead of
/// 12. Throws InvalidArgument as hpccg_problem.
CsrOperator hpccg_narrowest(int nx, int ny, int nz);
/// The rows of the planes [z_first, z_first + z_count) of the nx x ny x nz matrix (a block
/// of rows of a distributed matrix): nx ny z_count rows, the nx ny nz global columns.
/// Throws InvalidArgument for a grid as above or planes outside [0, nz).
CsrMatrix hpccg_rows(int nx, int ny, int nz, int z_first, int z_count);

struct DiffusionProblem {
  int nx = 0, ny = 0, nz = 0;
  std::uint64_t seed = 0;
  CsrMatrix A;       ///< the 7-point matrix, columns sorted in each row
  Vector b;          ///< A 1 (exact)
  Vector x0;         ///< zeros
  Vector x_exact;    ///< ones
};

/// The cell coefficients k_i of the diffusion problem, in row order. Throws InvalidArgument
/// unless nx, ny, nz >= 1 and the matrix fits (rows in int).
Vector diffusion_coefficients(int nx, int ny, int nz, std::uint64_t seed);
/// The diffusion matrix with b = A 1; the same checks.
DiffusionProblem diffusion_problem(int nx, int ny, int nz, std::uint64_t seed);

struct DiffusionOperator {
  CsrOperator A;  ///< the 7-point matrix
  Vector b;       ///< A 1 (exact)
};
/// The diffusion matrix as an operator held in its narrowest exact words, the same words as
/// CsrOperator::narrowest(diffusion_problem(...).A) gives: where nx ny <= 32767 (on one
/// plane nx, on one line 1: the widest |column - row|), binary64
/// values and 16-bit column offsets in slices of eight rows, 10 bytes a nonzero and the
/// slices' padding instead of 12, written row by row in them without a CSR copy (on grids
/// so small that the padding would outweigh the saving, 16-bit offsets in the order of the
/// rows' entries; on a wider band, the binary64 CSR matrix). The same checks as
/// diffusion_problem.
DiffusionOperator diffusion_narrowest(int nx, int ny, int nz, std::uint64_t seed);

/// L = D - A of G(n, mean_degree / (n - 1)); columns sorted in each row, the diagonal
/// stored (also for isolated vertices, where it is 0). Throws InvalidArgument unless
/// n >= 2 and 0 < mean_degree <= n - 1.
CsrMatrix graph_laplacian(std::size_t n, double mean_degree, std::uint64_t seed);

/// The start vector of the power method runs: entries uniform in [0, 1) from
/// std::mt19937_64(seed), normalised to unit 2-norm.
Vector random_unit_vector(std::size_t n, std::uint64_t seed);

/// Checks that A is square and symmetric (pattern and values, exactly); throws
/// InvalidArgument naming `what` (a file name, say) and the first offending entry.
void check_symmetric(const CsrMatrix& A, const std::string& what);

}  // namespace ebla
