// Distributed qdot: the error-bounded quantized dot product of two vectors distributed in
// contiguous blocks over the ranks of an MPI communicator (docs/mpi.md).
//
//   ebla::mpi::DistributedVector x{xp, local_n, comm}, y{yp, local_n, comm};
//   ebla::QdotResult r = ebla::mpi::qdot(x, y, options);   // collective: ONE MPI_Allreduce
//
// Rank r owns the block [offset_r, offset_r + local_n_r) of the global vectors (blocks in
// rank order; any local_n_r, zero included, as long as x and y agree on every rank). The
// vectors hold double, or float (DistributedVectorFloat: the same on every rank).
// options must be the same on every rank (they fix the size of what is reduced).
//
// qdot: one MPI_Allreduce per dot product, as a plain distributed dot. Every rank computes
//   each of its products at EVERY computed level of the ladder and accumulates it, per
//   exponent bin and level, into a window of the qdot_window bins from its largest bin down;
//   the bins below the window go to one "underflow" accumulator at the input precision (per
//   fixed chunk of the block, on every host thread, the chunks' windows merged in chunk
//   order). A user operation (non-commutative: rank order) merges the ranks' windows at the
//   larger top bin.
//   After the collective every rank selects the plan with the serial selection from the
//   merged counts and adds up, per bin, the accumulator of the level the plan chose, plus
//   the underflow at the input precision. If no bin lies qdot_window or more below the
//   global top bin, the plan is that of ebla::qdot_select of the concatenated vectors and
//   the value is that of qdot_compute(qdot_select) up to the order of the sums. Otherwise
//   the bins below the window are one pseudo-bin at the smallest of them, computed at the
//   input precision (the most precise level, whatever the plan would have chosen; the
//   tolerance still holds). `plan_used`, if not null, receives the plan that was applied.
//   stats.select_seconds is the time of the selection after the collective,
//   stats.compute_seconds that of the whole call.
//
// The two phases, one MPI_Allreduce each (two per dot), for callers that reuse a plan:
//   qdot_select:  the exponent histograms are summed (MPI_SUM on qdot_hist_size + 1
//                 int64), and every rank builds the plan from the same global histogram
//                 with the serial selection: the plan is identical on every rank and
//                 equal to ebla::qdot_select of the concatenated vectors;
//   qdot_compute: every rank accumulates its products under the plan (the serial
//                 kernel), and the accumulators are combined (one MPI_Allreduce of a
//                 128-byte state, a non-commutative user operation): the compensated
//                 sums s + c are merged by TwoSum (exact), the compensation terms, the
//                 sums |q_i| and the bound terms are added.
// The local parts of both run on every thread of Kokkos::DefaultHostExecutionSpace, and
// the result is the same bits for any number of threads (fixed chunks, merged in order).
// Either way the result has the meaning of ebla::qdot's for the GLOBAL dot product:
//   |r.value - x^T y| <= r.bound, with the bound of the serial qdot for the global length:
// the combination is more joins of accumulators, as the serial kernel does between its
// lanes (docs/mpi.md). value and bound are the same on every rank.
//
// Argument errors (x and y of different local lengths, different communicators, a plan
// for another global length, an invalid ladder or tolerance, options that differ between
// ranks) are agreed on collectively: every rank throws InvalidArgument, none waits for
// the others.
#pragma once

#include <ebla/kernels/qdot.hpp>
#include <ebla/kernels/quantize_host.hpp>

#include <mpi.h>

#include <cstddef>

namespace ebla::mpi {

/// A rank's contiguous block of a distributed vector of double or float: not owned.
template <class T>
struct BasicDistributedVector {
  const T* data = nullptr;     ///< the local block (may be null if local_size == 0)
  std::size_t local_size = 0;  ///< its length
  MPI_Comm comm = MPI_COMM_WORLD;
};
using DistributedVector = BasicDistributedVector<double>;
/// float input: the products are those of the serial qdot on float views (the ladder starts
/// at binary32; by default binary32, binary16, perforate).
using DistributedVectorFloat = BasicDistributedVector<float>;

/// Selection phase: one MPI_Allreduce. Collective over x.comm.
QdotPlan qdot_select(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options);
QdotPlan qdot_select(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options);
/// Computation phase: one MPI_Allreduce. Collective over x.comm; plan as from qdot_select
/// (the same on every rank), plan.n the global length.
QdotResult qdot_compute(const DistributedVector& x, const DistributedVector& y, const QdotPlan& plan);
QdotResult qdot_compute(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotPlan& plan);
/// The window of the one-collective qdot: the bins from the global top bin down that it
/// keeps apart, per level; the bins further below are summed at the input precision.
constexpr int qdot_window = 64;

/// The dot product with ONE MPI_Allreduce. Collective over x.comm. If plan_used is not
/// null it receives the plan applied (the same on every rank; see the top of this header
/// for its pseudo-bin when bins fall below the window).
QdotResult qdot(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options,
                QdotPlan* plan_used = nullptr);
QdotResult qdot(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options,
                QdotPlan* plan_used = nullptr);

/// qdot with the local pass compiled for `isa` (which this CPU must run; the ranks may
/// differ), for tests of every variant: AVX-512 rounds by Veltkamp's splitting as the
/// serial AVX-512 kernel, the others by round_significand. qdot uses the best variant.
QdotResult qdot_with_isa(const DistributedVector& x, const DistributedVector& y, const QdotOptions& options,
                         QdotPlan* plan_used, ebla::detail::HostIsa isa);
QdotResult qdot_with_isa(const DistributedVectorFloat& x, const DistributedVectorFloat& y, const QdotOptions& options,
                         QdotPlan* plan_used, ebla::detail::HostIsa isa);

}  // namespace ebla::mpi
