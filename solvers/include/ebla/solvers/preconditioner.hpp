// Preconditioners of CG as values: none, Jacobi (diag(A)^-1), block-Jacobi, multicolour
// symmetric Gauss-Seidel (SGS) or incomplete Cholesky with zero fill (IC(0)).
//
//   ebla::BlockJacobi M(A);           // A: a CsrMatrix, symmetric positive definite
//   M.apply(r, z);                    // z = blockdiag(A)^-1 r
//   ebla::SymmetricGaussSeidel S(A);  // z = ((D + L) D^-1 (D + L^T))^-1 r, multicolour ordering
//   ebla::IncompleteCholesky C(A);    // z = (L L^T)^-1 r, L on A's lower triangle
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
// Block storage (BlockStorage): each block's factor L may be kept narrow, as L~ = fl_S(L)
// entry by entry in S = binary32 or bfloat16, and apply computes in binary64 from it. Then
// M~ = L~ L~^T = L (I + G)(I + G)^T L^T with G = L^-1 (L~ - L), so for every x
//   (1 - ||G||_2)^2 x^T M x <= x^T M~ x <= (1 + ||G||_2)^2 x^T M x:
// M~ is symmetric positive definite where ||G||_2 < 1 (and L~'s diagonal is positive), and
// kappa(M~^-1 A) <= ((1 + d) / (1 - d))^2 kappa(M^-1 A) for d the largest ||G||_F of the
// blocks. The automatic storage keeps a block in the narrowest of bfloat16, binary32 and
// binary64 whose ||G||_F (computed) is at most block_storage_delta: kappa grows by at most
// 1/16, CG's bound on the iterations, sqrt(kappa), by at most 3%. M~ is fixed for the whole
// solve, so CG stays CG on the preconditioned system, and the certificate (the true residual)
// is untouched by it. Blocks of one row (Jacobi's) stay binary64.
//
// Cost: the factorisation takes sum_b m_b^3 / 3 multiply-adds, the factors sum_b m_b (m_b + 1) / 2
// doubles, and apply sum_b m_b^2 multiply-adds (2 m_b^2 memory reads of factors) for blocks
// of m_b rows.
#pragma once

#include <ebla/core/storage.hpp>
#include <ebla/solvers/operators.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ebla {

/// The preconditioner of CG (CgOptions::pc).
enum class PcKind : std::uint8_t { none, jacobi, block_jacobi, sgs, ic0 };

/// "none", "jacobi", "block-jacobi", "sgs", "ic0": the names of the command line's --pc.
const char* to_string(PcKind);
/// The kind of a name of to_string; throws InvalidArgument naming `function`, the name, the
/// nearest known name (within two edits) and the known names otherwise.
PcKind pc_kind_by_name(const std::string& name, const std::string& function);
/// The kind in messages: "no preconditioner", "Jacobi", "block-Jacobi", "SGS", "IC(0)".
const char* pc_title(PcKind);
/// Whether the kind is built from A's matrix (block-Jacobi, SGS, IC(0)).
bool from_matrix(PcKind);

/// The largest block of block-Jacobi unless asked otherwise (CgOptions::pc_block_size).
constexpr int default_pc_block_size = 32;

/// How block-Jacobi keeps its blocks' Cholesky factors: every block in `fixed` (binary64,
/// the default, binary32 or bfloat16), or (automatic) each block in the narrowest of
/// bfloat16, binary32 and binary64 whose perturbation d = ||L^-1 (L~ - L)||_F is at most
/// block_storage_delta.
struct BlockStorage {
  bool automatic = false;
  Storage fixed = Storage::binary64;
  static BlockStorage of(Storage s) { return BlockStorage{false, s}; }
  static BlockStorage chosen() { return BlockStorage{true, Storage::binary64}; }
};
/// ((1 + d) / (1 - d))^2 <= 1 + 1/16 (d = 0.0151549... at equality, rounded down): kappa(M~^-1 A)
/// <= (1 + 1/16) kappa(M^-1 A).
constexpr double block_storage_delta = 0.015154;
/// "auto", "binary64", "binary32" or "bfloat16"; throws InvalidArgument naming `function`.
BlockStorage block_storage_by_name(const std::string& name, const std::string& function);
/// "auto" or the fixed format's name.
std::string to_string(const BlockStorage& s);

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
  /// With narrow storage, also for a block whose factor does not fit the fixed format (L~
  /// singular or d >= 1: M~ would not be positive definite), naming its rows.
  explicit BlockJacobi(const CsrMatrix& A, int max_block_size = default_pc_block_size,
                       const std::string& function = "ebla::BlockJacobi", BlockStorage storage = {});
  std::size_t size() const { return n_; }
  std::size_t blocks() const { return blocks_; }
  std::size_t largest_block() const { return largest_; }
  /// The block boundaries (supervariable_blocks), on the host.
  const std::vector<std::size_t>& starts() const { return starts_; }
  /// What it stores on the device: the factors and the arrays that find them.
  double bytes() const;
  /// What the same blocks would store with every factor in binary64.
  double binary64_bytes() const;
  /// The blocks kept in binary64, binary32 and bfloat16 (indexed by Storage: 0, 1, 2).
  const std::size_t* blocks_in() const { return count_; }
  /// "bfloat16 12, binary32 3, binary64 1": the blocks in each format used, narrowest first.
  std::string formats() const;
  /// The largest d = ||L^-1 (L~ - L)||_F of the blocks (0 in binary64): kappa(M~^-1 A) <=
  /// ((1 + d) / (1 - d))^2 kappa(M^-1 A).
  double delta() const { return delta_; }
  /// z = blockdiag(L L^T)^-1 r; r and z have size() entries (z may be r).
  void apply(ConstVector r, Vector z) const;

private:
  std::size_t n_ = 0, blocks_ = 0, largest_ = 0;
  std::vector<std::size_t> starts_;
  Kokkos::View<std::size_t*> first_;   ///< blocks() + 1 block boundaries
  Kokkos::View<std::size_t*> offset_;  ///< where block b's factor begins in the array of its format
  Kokkos::View<std::uint8_t*> format_; ///< block b's format (Storage), or empty: all binary64
  Kokkos::View<double*> factor_;       ///< the binary64 blocks' L, lower triangles row by row
  Kokkos::View<float*> factor32_;      ///< the binary32 blocks' L~, likewise
  Kokkos::View<std::uint16_t*> factor16_;  ///< the bfloat16 blocks' L~, likewise (bits)
  std::size_t count_[3] = {0, 0, 0};
  std::size_t entries_ = 0;            ///< sum_b m_b (m_b + 1) / 2
  double delta_ = 0;
};

namespace detail {

/// A matrix split for two triangular sweeps, on the device: a strict lower part and a strict
/// upper part by rows (row i's entries lower_ptr(i) .. lower_ptr(i + 1) - 1 of lower_col and
/// lower_val, likewise upper), and the diagonal apart. SGS keeps L, L^T and D of A in its
/// colour order; IC(0) keeps its factor's strict L, L^T and l_ii.
struct SplitRows {
  Kokkos::View<std::size_t*> lower_ptr, upper_ptr;
  Kokkos::View<int*> lower_col, upper_col;
  Kokkos::View<double*> lower_val, upper_val;
  Kokkos::View<double*> diagonal;
  /// The bytes of the seven arrays.
  double bytes() const;
};

}  // namespace detail

/// The greedy colouring of A's graph (its pattern made symmetric, the diagonal left out) in
/// natural row order: row i takes the least colour no row j < i coupled to it has. Rows of
/// one colour are not coupled. Throws InvalidArgument naming `function` unless A is square.
std::vector<int> greedy_colouring(const CsrMatrix& A, const std::string& function = "ebla::greedy_colouring");

/// Symmetric Gauss-Seidel in a multicolour ordering (docs/solvers.md, "Preconditioners").
///
/// The rows are coloured once on the host (greedy_colouring) and ordered colour by colour,
/// rows of one colour in natural order; in that ordering A = L + D + L^T, and
///   M = (D + L) D^-1 (D + L^T)
/// is symmetric positive definite for SPD A. z = M^-1 r is a forward sweep over the colours,
/// (D + L) y = r, then a backward one in the reverse colour order, z = y - D^-1 L^T z. The
/// rows of one colour are independent: one parallel_for per colour and sweep, each row's sum
/// in A's CSR order, so z is the same bits for any number of threads.
///
/// Cost: colouring O(nnz log(row length)) on the host; the entries of A split into L and L^T (their values
/// and columns, nnz - n of each kind) and D; apply nnz - n multiply-adds and 2 n divisions,
/// in 2 x colours() parallel_for calls.
class SymmetricGaussSeidel {
public:
  SymmetricGaussSeidel() = default;
  /// Throws InvalidArgument naming `function` unless A is square with a positive and finite
  /// diagonal (naming the first row without one).
  explicit SymmetricGaussSeidel(const CsrMatrix& A, const std::string& function = "ebla::SymmetricGaussSeidel");
  std::size_t size() const { return n_; }
  std::size_t colours() const { return colour_start_.empty() ? 0 : colour_start_.size() - 1; }
  /// Each row's colour, on the host.
  const std::vector<int>& colour() const { return colour_; }
  /// What it stores on the device: L and L^T (values, columns, row starts), D and the order.
  double bytes() const;
  /// z = M^-1 r; r and z have size() entries (z may be r).
  void apply(ConstVector r, Vector z) const;

private:
  std::size_t n_ = 0;
  std::vector<int> colour_;
  std::vector<std::size_t> colour_start_;    ///< where each colour begins in order_, and n
  Kokkos::View<int*> order_;                 ///< the rows, colour by colour
  detail::SplitRows split_;                  ///< L, L^T and a_ii, by row
};

/// IC(0)'s first diagonal shift alpha (of A + alpha diag(A)) after a breakdown, doubled at
/// each further one, and the most restarts before it gives up.
constexpr double ic0_first_shift = 1e-3;
constexpr int ic0_max_restarts = 30;

/// Incomplete Cholesky with zero fill, A ~ L L^T with L on the pattern of A's lower
/// triangle (docs/solvers.md, "Preconditioners").
///
/// Factorised on the host in binary64, row by row (l_ij = (a_ij - sum_k l_ik l_jk) / l_jj
/// over the k < j in the patterns of rows i and j, in increasing k; l_ii = sqrt(a_ii -
/// sum_k l_ik^2)). Where a pivot is not positive and finite it starts again on
/// A + alpha diag(A), alpha = ic0_first_shift, then twice the last alpha, at most
/// max_restarts times (the shift of PETSc's -pc_factor_shift_type positive_definite).
/// z = (L L^T)^-1 r solves L y = r and L^T z = y by level scheduling: the levels (rows whose
/// unknowns depend only on rows of earlier levels) are found once on the host, and each level
/// is one parallel_for, each row's sum in increasing column order, so z is the same bits for
/// any number of threads.
///
/// Cost: the factorisation sum_i sum_(j in row i) |row i meet row j| multiply-adds (per
/// attempt); L and L^T stored (nnz of the lower triangle each); apply 2 (nnz_L - n)
/// multiply-adds and 2 n divisions in 2 x levels() parallel_for calls.
class IncompleteCholesky {
public:
  IncompleteCholesky() = default;
  /// Throws InvalidArgument naming `function` unless A is square, and when the factorisation
  /// breaks down after max_restarts shifts (naming the row, its pivot and the last alpha).
  explicit IncompleteCholesky(const CsrMatrix& A, int max_restarts = ic0_max_restarts,
                              const std::string& function = "ebla::IncompleteCholesky");
  std::size_t size() const { return n_; }
  /// alpha of A + alpha diag(A) that was factorised (0: A itself).
  double shift() const { return shift_; }
  /// The factorisations that broke down before the one kept.
  int restarts() const { return restarts_; }
  /// The levels of each triangular solve (the longest chain of dependent rows: the same for
  /// L y = r and L^T z = y).
  std::size_t levels() const { return levels_; }
  /// What it stores on the device: L and L^T, their diagonal and the two level orders.
  double bytes() const;
  /// z = (L L^T)^-1 r; r and z have size() entries (z may be r).
  void apply(ConstVector r, Vector z) const;

private:
  std::size_t n_ = 0, levels_ = 0;
  double shift_ = 0;
  int restarts_ = 0;
  std::vector<std::size_t> lower_start_, upper_start_;  ///< where each level begins, and n
  Kokkos::View<int*> lower_order_, upper_order_;        ///< the rows, level by level
  detail::SplitRows split_;                             ///< L's strict lower, L^T's strict upper, l_ii
};

}  // namespace ebla
