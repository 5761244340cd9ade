// Test problems for the solvers.
//
// HPCCG (Mantevo): the 27-point stencil on an nx x ny x nz grid, rows numbered
// i = iz nx ny + iy nx + ix; A_ii = 27, A_ij = -1 for each of the (up to 26) neighbours j
// of i inside the grid; b_i = 27 - (nonzeros in row i - 1), so that A 1 = b and the
// exact solution is the vector of ones; x0 = 0. Symmetric positive definite (strictly
// diagonally dominant in the interior rows' sense: 27 > 26).
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
/// The rows of the planes [z_first, z_first + z_count) of the nx x ny x nz matrix (a block
/// of rows of a distributed matrix): nx ny z_count rows, the nx ny nz global columns.
/// Throws InvalidArgument for a grid as above or planes outside [0, nz).
CsrMatrix hpccg_rows(int nx, int ny, int nz, int z_first, int z_count);

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
