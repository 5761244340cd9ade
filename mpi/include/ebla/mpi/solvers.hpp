// Distributed ACG and APM: the solvers of solvers/ on rows split over the ranks of an MPI
// communicator (docs/mpi.md).
//
//   ebla::mpi::DistributedStencil A(nx, ny, nz, MPI_COMM_WORLD);   // HPCCG stacked in z
//   ebla::Vector b = ebla::mpi::hpccg_rhs(A), x0("x0", A.size());
//   ebla::CgResult r = ebla::mpi::cg(A, b, x0, ebla::DotPolicy::approximate(opt), options);
//
// Each rank owns a contiguous block of rows (its vectors hold those rows only). The solver
// loop is the serial one (ebla::cg on a SolverSpace): the operator exchanges the entries
// of x it needs from the neighbouring ranks, every dot product and norm is reduced over
// the communicator (the distributed qdot for DotPolicy::approximate), and every rank takes
// the same decisions. CgResult::x, PowerResult::eigenvector and the level maps hold the
// owned rows; everything else is global and the same on every rank.
#pragma once

#include <ebla/mpi/csr.hpp>
#include <ebla/mpi/qdot.hpp>
#include <ebla/solvers/cg.hpp>
#include <ebla/solvers/power.hpp>
#include <ebla/solvers/space.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace ebla::mpi {

/// HPCCG's 27-point stencil on the global nx x ny x (P nz) grid of P ranks stacked in z
/// (as HPCCG distributes it): rank r owns the planes [r nz, (r + 1) nz), i.e. global rows
/// [r nx ny nz, (r + 1) nx ny nz). apply() exchanges one plane with each neighbouring rank.
class DistributedStencil {
public:
  /// Collective. Throws InvalidArgument on every rank unless nx, ny, nz >= 1 are the same
  /// on every rank and the global grid's rows fit an int.
  DistributedStencil(int nx, int ny, int nz, MPI_Comm comm);
  std::size_t size() const { return static_cast<std::size_t>(nx_) * ny_ * nz_; }
  std::size_t global_size() const { return size() * static_cast<std::size_t>(ranks_); }
  std::size_t first_row() const { return size() * static_cast<std::size_t>(rank_); }
  std::size_t nonzeros() const;  ///< of the global matrix
  void apply(ConstVector x, Vector y) const;  ///< collective: owned rows of A x
  Vector diagonal() const;
  /// Collective: sum over the owned rows of (b_i - (A x)_i)^2 in double-double.
  DoubleDouble residual_squares(ConstVector x, ConstVector b) const;
  int nx() const { return nx_; }
  int ny() const { return ny_; }
  int nz() const { return nz_; }
  MPI_Comm comm() const { return comm_; }

private:
  void exchange(ConstVector x) const;  // fills below_, above_ from the neighbours
  int nx_, ny_, nz_;
  MPI_Comm comm_;
  int rank_ = 0, ranks_ = 1;
  Vector below_, above_;  // ghost planes (empty at the ends of the global grid)
};

/// HPCCG's right-hand side A 1 on the owned rows (exact: integer sums).
Vector hpccg_rhs(const DistributedStencil& A);

/// How a distributed qdot reaches the ranks: one MPI_Allreduce (ebla::mpi::qdot: every
/// level computed per bin, a 5 kB state), or two (qdot_select, then qdot_compute: a 33 kB
/// histogram, then 128 bytes, with half the local work). One wins where collectives are
/// expensive (many ranks), two on a few ranks of one node (docs/mpi.md, "Speed").
enum class QdotCollectives : std::uint8_t { one, two };

/// The solvers' space over an operator whose rows are split over a communicator (see
/// space.hpp): dot products and sums reduced over A.comm().
template <class Op>
class MpiSpace final : public SolverSpace {
public:
  explicit MpiSpace(const Op& A, QdotCollectives collectives = QdotCollectives::one)
      : A_(A), collectives_(collectives) {}
  std::size_t size() const override { return A_.size(); }
  std::size_t global_size() const override { return A_.global_size(); }
  void apply(ConstVector x, Vector y) const override { A_.apply(x, y); }
  Vector diagonal() const override { return A_.diagonal(); }
  double residual_norm(ConstVector x, ConstVector b) const override;
  DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y,
                std::vector<std::uint8_t>* levels) const override;
  double sum(double local) const override;
  double max(double local) const override;
  bool all(bool ok) const override;

private:
  const Op& A_;
  QdotCollectives collectives_;
};

/// The global dot product of the owned parts x, y under a policy, collective over comm:
/// exact is one MPI_Allreduce of the local plain_dot (bound as in dots.hpp, with
/// the global length), approximate the distributed qdot (one MPI_Allreduce), fixed a
/// distributed qdot_select with every bin at the format, then qdot_compute (two).
/// `collectives` chooses the qdot for DotPolicy::approximate.
DotRecord dot(const DotPolicy& policy, ConstVector x, ConstVector y, MPI_Comm comm,
              std::vector<std::uint8_t>* levels = nullptr, QdotCollectives collectives = QdotCollectives::one);
/// The sum of v over comm (MPI_Allreduce; the same on every rank).
double sum(double v, MPI_Comm comm);
/// The largest v over comm (MPI_Allreduce with MPI_MAX; NaN on any rank gives NaN on all).
double max(double v, MPI_Comm comm);
/// The global sqrt(sum of the ranks' double-double sums), the sums joined in rank order.
double global_norm(const DoubleDouble& local_squares, MPI_Comm comm);
/// Whether ok holds on every rank of comm.
bool all(bool ok, MPI_Comm comm);

template <class Op>
double MpiSpace<Op>::residual_norm(ConstVector x, ConstVector b) const {
  return global_norm(A_.residual_squares(x, b), A_.comm());
}
template <class Op>
DotRecord MpiSpace<Op>::dot(const DotPolicy& policy, ConstVector x, ConstVector y,
                            std::vector<std::uint8_t>* levels) const {
  return mpi::dot(policy, x, y, A_.comm(), levels, collectives_);
}
template <class Op>
double MpiSpace<Op>::sum(double local) const {
  return mpi::sum(local, A_.comm());
}
template <class Op>
double MpiSpace<Op>::max(double local) const {
  return mpi::max(local, A_.comm());
}
template <class Op>
bool MpiSpace<Op>::all(bool ok) const {
  return mpi::all(ok, A_.comm());
}

/// Distributed ACG (ebla::cg): b, x0 and the result's x are the owned rows. Collective.
CgResult cg(const DistributedStencil& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options,
            QdotCollectives collectives = QdotCollectives::one);
CgResult cg(const DistributedCsr& A, ConstVector b, ConstVector x0, const DotPolicy& dots, const CgOptions& options,
            QdotCollectives collectives = QdotCollectives::one);
/// Distributed APM (ebla::power_method): x0 and the eigenvector are the owned rows. Collective.
PowerResult power_method(const DistributedStencil& A, ConstVector x0, const DotPolicy& dots,
                         const PowerOptions& options, QdotCollectives collectives = QdotCollectives::one);
PowerResult power_method(const DistributedCsr& A, ConstVector x0, const DotPolicy& dots, const PowerOptions& options,
                         QdotCollectives collectives = QdotCollectives::one);

}  // namespace ebla::mpi
