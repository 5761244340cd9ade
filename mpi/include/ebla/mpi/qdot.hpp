// Distributed qdot: the error-bounded quantized dot product of two vectors distributed in
// contiguous blocks over the ranks of an MPI communicator (docs/mpi.md).
//
//   ebla::mpi::DistributedVector x{xp, local_n, comm}, y{yp, local_n, comm};
//   ebla::QdotResult r = ebla::mpi::qdot(x, y, options);   // collective over comm
//
// Rank r owns the block [offset_r, offset_r + local_n_r) of the global vectors (blocks in
// rank order; any local_n_r, zero included, as long as x and y agree on every rank). The
// two phases of the serial qdot, each one MPI_Allreduce:
//   qdot_select:  the exponent histograms are summed (MPI_SUM on qdot_hist_size + 1
//                 int64), and every rank builds the plan from the same global histogram
//                 with the serial selection: the plan is identical on every rank and
//                 equal to ebla::qdot_select of the concatenated vectors;
//   qdot_compute: every rank accumulates its products under the plan (the serial
//                 kernel), and the accumulators are combined (one MPI_Allreduce of a
//                 128-byte state, a non-commutative user operation): the compensated
//                 sums s + c are merged by TwoSum (exact), the compensation terms, the
//                 sums |q_i| and the bound terms are added.
// The result has the meaning of ebla::qdot's for the GLOBAL dot product:
//   |r.value - x^T y| <= r.bound, with the bound of the serial qdot for the global length:
// the combination is one more join of accumulators, as the serial kernel does between its
// lanes (docs/mpi.md). value and bound are the same on every rank.
//
// Argument errors (x and y of different local lengths, different communicators, a plan
// for another global length, an invalid ladder or tolerance) are agreed on collectively:
// every rank throws InvalidArgument, none waits for the others.
#pragma once

#include <ebla/kernels/qdot.hpp>

#include <mpi.h>

#include <cstddef>

namespace ebla::mpi {

/// A rank's contiguous block of a distributed vector: not owned.
struct DistributedVector {
  const double* data = nullptr;  ///< the local block (may be null if local_size == 0)
  std::size_t local_size = 0;    ///< its length
  MPI_Comm comm = MPI_COMM_WORLD;
};

/// Selection phase: one MPI_Allreduce. Collective over x.comm.
QdotPlan qdot_select(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options);
/// Computation phase: one MPI_Allreduce. Collective over x.comm; plan as from qdot_select
/// (the same on every rank), plan.n the global length.
QdotResult qdot_compute(const DistributedVector& x, const DistributedVector& y, const QdotPlan& plan);
/// Both: two MPI_Allreduce per dot product.
QdotResult qdot(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options);

}  // namespace ebla::mpi
