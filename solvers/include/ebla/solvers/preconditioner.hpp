// Preconditioners of CG as values: none, Jacobi (diag(A)^-1) or block-Jacobi.
//
//   ebla::BlockJacobi M(A);        // A: a CsrMatrix, symmetric positive definite
//   M.apply(r, z);                 // z = blockdiag(A)^-1 r
//
// Block-Jacobi's blocks are found from the matrix by supervariable agglomeration: rows
// i and i + 1 with the same column indices (the same sparsity pattern) belong to one
// supervariable (a node's unknowns in a finite element matrix: its 3 displacements, say),
// up to max_block_size rows; then consecutive supervariables are merged while the merged
// block keeps at most max_block_size rows. Each diagonal block A_bb is taken out dense and
// factorised A_bb = L L^T by Cholesky in binary64; apply solves L y = r_b, L^T z_b = y for
// every block. A block of one row is Jacobi's: z_i = (1 / a_ii) r_i, the same bits as
// CgOptions::jacobi, so block-Jacobi with blocks of one row is Jacobi.
//
// Where it runs: the blocks are found and factorised on the host (a copy of A's arrays), the
// factors copied to Kokkos' default memory space; apply runs in the default execution space,
// one block per work item, each block's two triangular solves in a fixed order, so z is the
// same bits for any number of threads.
//
// Cost: the factorisation takes sum_b m_b^3 / 3 multiply-adds, the factors sum_b m_b (m_b + 1) / 2
// doubles, and apply sum_b m_b^2 multiply-adds (2 m_b^2 memory reads of factors) for blocks
// of m_b rows.
#pragma once

#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

/// The preconditioner of CG (CgOptions::pc).
enum class PcKind : std::uint8_t { none, jacobi, block_jacobi };

/// "none", "jacobi", "block-jacobi": the names of the command line's --pc.
const char* to_string(PcKind);
/// The kind of a name of to_string; throws InvalidArgument naming `function`, the name, the
/// nearest known name (within two edits) and the known names otherwise.
PcKind pc_kind_by_name(const std::string& name, const std::string& function);

/// The largest block of block-Jacobi unless asked otherwise (CgOptions::pc_block_size).
constexpr int default_pc_block_size = 32;

/// The first row of each block and, last, the number of rows (blocks() + 1 entries) of the
/// supervariable agglomeration above. Throws InvalidArgument naming `function` unless A is
/// square and max_block_size >= 1.
std::vector<std::size_t> supervariable_blocks(const CsrMatrix& A, int max_block_size,
                                              const std::string& function = "ebla::supervariable_blocks");

/// z = blockdiag(A)^-1 r, each diagonal block factorised by Cholesky.
class BlockJacobi {
public:
  BlockJacobi() = default;
  /// Throws InvalidArgument naming `function` for a matrix or size supervariable_blocks
  /// refuses, and for a block that is not positive definite (its first row, the pivot and
  /// its value: a Cholesky pivot that is not positive and finite).
  explicit BlockJacobi(const CsrMatrix& A, int max_block_size = default_pc_block_size,
                       const std::string& function = "ebla::BlockJacobi");
  std::size_t size() const { return n_; }
  std::size_t blocks() const { return blocks_; }
  std::size_t largest_block() const { return largest_; }
  /// The block boundaries (supervariable_blocks), on the host.
  const std::vector<std::size_t>& starts() const { return starts_; }
  /// What it stores on the device: the factors and the two arrays that find them.
  double bytes() const;
  /// z = blockdiag(L L^T)^-1 r; r and z have size() entries (z may be r).
  void apply(ConstVector r, Vector z) const;

private:
  std::size_t n_ = 0, blocks_ = 0, largest_ = 0;
  std::vector<std::size_t> starts_;
  Kokkos::View<std::size_t*> first_;   ///< blocks() + 1 block boundaries
  Kokkos::View<std::size_t*> offset_;  ///< where block b's factor begins in factor_
  Kokkos::View<double*> factor_;       ///< each block's L, its lower triangle row by row
};

}  // namespace ebla
