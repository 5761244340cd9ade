// A sparse matrix whose rows are split over the ranks of an MPI communicator, in
// contiguous blocks (docs/mpi.md): the operator of the distributed solvers for Matrix
// Market input and generated graph Laplacians.
//
//   ebla::CsrMatrix A = ebla::read_matrix_market(path);          // on every rank
//   auto D = ebla::mpi::DistributedCsr::from_global(A, MPI_COMM_WORLD);
//   D.apply(x, y);   // x, y: the owned rows [D.first_row(), D.first_row() + D.size())
//
// apply() gets the entries of x that its rows reference on other ranks (the ghosts) by
// point-to-point messages with exactly the ranks that own them, as agreed once at
// construction, then multiplies the owned rows (KokkosSparse::spmv on the rows with
// columns renumbered: the owned entries first, then the ghosts). The entries keep their
// order within each row, so y is bit-identical to the owned rows of a serial spmv of the
// global matrix.
//
// Construction: one MPI_Allgather (every rank's n, block, nonzeros and first local problem,
// so that every rank throws the same InvalidArgument), then one MPI_Alltoall of request
// counts and one MPI_Alltoallv of the requested global columns. apply() and
// residual_squares(): one MPI_Irecv from each rank owning ghosts, one MPI_Isend to each rank
// that asked for entries (tag 0x6562 on comm()), then MPI_Waitall; each message carries a
// status slot before the entries.
#pragma once

#include <ebla/solvers/operators.hpp>

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace ebla::mpi {

/// The balanced row blocks: rank r of P owns [block_first_row(n, r, P), block_first_row(n, r + 1, P)),
/// first(r) = r floor(n / P) + min(r, n mod P).
std::size_t block_first_row(std::size_t n, int rank, int ranks);

class DistributedCsr {
public:
  /// Collective. local_rows: this rank's rows [first_row, first_row + local_rows.numRows())
  /// of an n x n matrix, with GLOBAL column indices (local_rows.numCols() == n). The ranks'
  /// blocks must follow each other in rank order and cover [0, n); every rank must pass the
  /// same n. Throws InvalidArgument on every rank otherwise (naming the rank and value).
  DistributedCsr(CsrMatrix local_rows, std::size_t first_row, std::size_t n, MPI_Comm comm);
  /// Collective: every rank holds the same global square matrix and keeps its balanced block
  /// of rows (block_first_row).
  static DistributedCsr from_global(const CsrMatrix& global, MPI_Comm comm);

  std::size_t size() const;         ///< owned rows
  std::size_t global_size() const;  ///< n
  std::size_t first_row() const;
  std::size_t nonzeros() const;     ///< of the global matrix
  std::size_t ghosts() const;       ///< entries of x received per apply()
  /// Collective: y = the owned rows of A x (x, y: size() entries). If x or y has the wrong
  /// size, this rank still sends its messages, flagged, and throws InvalidArgument; so does
  /// every rank that receives a flagged message (no rank is left waiting; a rank that
  /// exchanges no messages with it returns normally).
  void apply(ConstVector x, Vector y) const;
  Vector diagonal() const;                    ///< owned part of diag(A)
  /// Collective: sum over the owned rows of (b_i - (A x)_i)^2 in double-double
  /// (detail::csr_residual_squares); wrong sizes of x or b are handled as in apply().
  DoubleDouble residual_squares(ConstVector x, ConstVector b) const;
  MPI_Comm comm() const;

private:
  // Sends this rank's share of x to the ranks that asked for it and receives the ghosts
  // into x_ext_ (owned entries first). valid = false: this rank's arguments are wrong; it
  // still takes part, flagging its messages. Returns the lowest rank whose message was
  // flagged (valid = false counts as this rank's own flag), or -1.
  int exchange(ConstVector x, bool valid) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::size_t n_ = 0, first_ = 0, nonzeros_ = 0, ghosts_ = 0;
  CsrMatrix local_;  // the owned rows; columns: owned j -> j - first_, ghost k -> size() + k
  std::vector<int> recv_ranks_, send_ranks_;           // the ranks messages come from / go to
  std::vector<std::size_t> recv_offsets_;              // ghosts from recv_ranks_[k]: [recv_offsets_[k], [k + 1])
  std::vector<std::size_t> send_offsets_;              // entries to send_ranks_[k]: send_indices_[send_offsets_[k], [k + 1])
  std::vector<int> send_indices_;                      // local indices into x
  mutable Vector x_ext_;                               // [x | ghosts]
  mutable std::vector<double> send_buf_, recv_buf_;    // per message: a status slot, then the entries
  mutable std::vector<MPI_Request> requests_;
};

}  // namespace ebla::mpi
