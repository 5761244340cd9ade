// A test problem of the solvers (problem_spec.hpp) on the ranks of an MPI communicator:
// each rank loads its own rows (docs/mpi.md).
//
//   const ebla::mpi::DistributedProblem p = ebla::mpi::load_problem(spec, ebla::ProblemUse::cg, MPI_COMM_WORLD);
//   const ebla::CgResult r = std::visit([&](const auto& A) { return ebla::mpi::cg(A, p.b, p.x0, dots, o); }, p.op);
#pragma once

#include <ebla/mpi/csr.hpp>
#include <ebla/mpi/solvers.hpp>
#include <ebla/solvers/problem_spec.hpp>

#include <mpi.h>

#include <cstdint>
#include <variant>
#include <vector>

namespace ebla::mpi {

using DistributedOperator = std::variant<DistributedStencil, DistributedCsr>;
/// This rank's rows of a problem: b, x0 and x_exact hold the owned rows; n, nnz and the
/// description are the global problem's.
using DistributedProblem = BasicProblem<DistributedOperator>;

/// Collective. HPCCG stacked in z (the global grid nx x ny x (P nz); each rank builds its own
/// planes, matrix-free for the stencil operator or as rows with global columns): for CG
/// b = A 1 and x0 = 0, for the power method the owned rows of the serial problem's random
/// unit start vector. Any other source: the serial problem (ebla::load_problem) on every
/// rank, split by rows in balanced blocks (block_first_row). Throws InvalidArgument naming
/// spec's operator field for a dense operator, and, on every rank, naming the field of an
/// input file (matrix, rhs, x0, hdf5) whose bytes differ between the ranks (a digest of each
/// file, streamed, compared in one MPI_Allgather: the same path may name different files
/// on different ranks).
DistributedProblem load_problem(const ProblemSpec& spec, ProblemUse use, MPI_Comm comm);

/// Collective: the maximum of v over the ranks.
double global_max(double v, MPI_Comm comm);

/// Collective: a per-row map (such as the rung of every owned component of a dot product)
/// gathered to rank 0 in rank order, the global map; empty on the other ranks.
void gather_to_root(std::vector<std::uint8_t>& map, MPI_Comm comm);

}  // namespace ebla::mpi
