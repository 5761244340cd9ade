// The operators the solvers apply: y = A x for a symmetric matrix A given as
//  - CsrOperator:     a compressed sparse row matrix, applied by KokkosSparse::spmv, or
//                     held in the narrowest words that hold it exactly (CsrOperator::
//                     narrowest: bfloat16 or binary32 values, 16-bit column offsets),
//                     applied by a kernel of its own that reads them;
//  - StencilOperator: HPCCG's 27-point stencil on an nx x ny x nz grid, matrix-free
//                     (diagonal 27, -1 for every neighbour inside the grid);
//  - DenseOperator:   a dense n x n matrix, applied by KokkosBlas::gemv;
//  - FunctionOperator: a function of the caller that computes y = A x on host binary64
//                     Views (a matrix-free operator of another library, a Python one).
// Each has size(), apply(x, y) (y = A x), diagonal() (for Jacobi) and
// residual_norm(x, b) = ||b - A x||_2 evaluated in double-double arithmetic: every
// product A_ij x_j is split exactly (TwoProduct by FMA) and summed with TwoSum, so the
// result is correct to about 2^-100 relative to sum_j |A_ij x_j| per row, far below
// anything the solvers report (this is the "true residual" of the results). A
// FunctionOperator's residual is that of the y = A x its function computes: the norm of
// b - y in double-double, so the certificate holds for the operator as the function
// evaluates it.
//
// Where they run: Vector is a View of Kokkos' default memory space, and apply, diagonal and
// residual_norm run in the default execution space (the device's, in a CUDA or HIP build).
// The problems of problems.hpp and the readers of io.hpp build the matrices and vectors in
// host memory and copy them there.
#pragma once

#include <ebla/core/exact.hpp>

#include <Kokkos_Core.hpp>
#include <KokkosSparse_CrsMatrix.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace ebla {

/// A sum carried in double-double: hi + lo holds about 106 significant bits (TwoSum of
/// each addend into hi, the rounding errors into lo). The residual norms sum squares in it.
struct DoubleDouble {
  double hi = 0, lo = 0;
  KOKKOS_INLINE_FUNCTION void add(double v) {
    double s, e;
    detail::two_sum(hi, v, s, e);
    hi = s;
    lo += e;
  }
  KOKKOS_INLINE_FUNCTION void add_product(double a, double b) {  ///< a b = p + e exactly first
    double p, e;
    detail::two_prod(a, b, p, e);
    add(p);
    lo += e;
  }
  KOKKOS_INLINE_FUNCTION void join(const DoubleDouble& o) {      ///< this += o
    add(o.hi);
    lo += o.lo;
  }
  KOKKOS_INLINE_FUNCTION double value() const { return hi + lo; }
};

using Vector = Kokkos::View<double*>;
using ConstVector = Kokkos::View<const double*>;
/// binary32 vectors (the inner solve of refined_cg.hpp)
using FloatVector = Kokkos::View<float*>;
using ConstFloatVector = Kokkos::View<const float*>;

/// Sparse matrices: double values, int column indices, size_t row offsets.
using CsrMatrix = KokkosSparse::CrsMatrix<double, int, Kokkos::DefaultExecutionSpace::device_type, void, std::size_t>;

/// A CSR matrix's values or columns in narrower words, each array holding every entry
/// exactly (else empty): values as bfloat16 bits or binary32, columns as the 16-bit offset
/// column - row (where every |column - row| <= 32767). Values that no narrower format holds
/// may lie in the slices too, as binary64 (`values64`, with slices only: in the order of the
/// rows' entries they are the CSR values themselves).
///
/// The words lie in the order of the rows' entries (entry m of row i at row_map(i) + m), or,
/// where `slices` is not empty, in slices of eight rows (SELL-8): rows 8 s to 8 s + 7 take
/// the words [slices(s), slices(s + 1)), as many eights as the slice's longest row has
/// entries, entry m of row i at slices(i / 8) + 8 m + i % 8, the words past a shorter row's
/// end zero. Eight rows' m-th entries then lie side by side, for vector code that computes
/// eight rows at once. Slices need the columns as offsets and the values in words of their
/// own (values16, values32 or values64).
struct CsrWords {
  Kokkos::View<const std::uint16_t*> values16;
  Kokkos::View<const float*> values32;
  Kokkos::View<const double*> values64;  ///< with slices only
  Kokkos::View<const std::int16_t*> offsets16;
  Kokkos::View<const std::size_t*> slices;  ///< ceil(rows / 8) + 1 offsets, or empty
};

/// y = A x with A in compressed sparse rows: in binary64 (applied by KokkosSparse::spmv), or
/// held in narrower words that hold it exactly (applied by a kernel that reads them: each
/// row's products summed in binary64 in the order of its entries).
class CsrOperator {
public:
  CsrOperator() = default;
  /// Throws InvalidArgument if A is not square.
  explicit CsrOperator(CsrMatrix A);
  /// A held in the narrowest words that hold all its values and columns exactly: values as
  /// bfloat16 or binary32 where every one is exact there (else binary64), columns as 16-bit
  /// offsets where every |column - row| <= 32767 (else int); in slices of eight rows where
  /// the columns are offsets (CsrWords; binary64 values then lie in the slices too) and the
  /// slices' words, each row padded to the longest of its eight, take at most max_growth
  /// times the bytes of the binary64 values and int columns (12 a nonzero; default 1: never
  /// more memory than them; else in the order of the rows' entries). The binary64 arrays so
  /// replaced are not kept: unless the caller holds a copy of A they are freed (HPCCG's
  /// matrix: 4 bytes a nonzero instead of 12; binary64 values with offsets: 10 and the
  /// slices' padding). The same operator to every solver, bit for bit where they read the
  /// words (the stored passes; the true residual in double-double).
  static CsrOperator narrowest(CsrMatrix A, double max_growth = 1);
  /// An operator from its parts: `held` gives the row offsets, the number of columns and the
  /// binary64 arrays that `words` does not replace (an empty View where it does). Throws
  /// InvalidArgument where the parts do not make one square matrix.
  CsrOperator(CsrMatrix held, CsrWords words);
  std::size_t size() const;
  std::size_t nonzeros() const;
  void apply(ConstVector x, Vector y) const;
  Vector diagonal() const;
  double residual_norm(ConstVector x, ConstVector b) const;
  /// A in binary64: the matrix itself, or built anew (exactly) from its narrow words.
  CsrMatrix matrix() const;
  /// Whether A is held in words of its own, narrower or in slices (then held() lacks the
  /// arrays they replace).
  bool narrow() const;
  /// The binary64 arrays as held: the row offsets always, the values and columns where
  /// words() does not replace them.
  const CsrMatrix& held() const { return A_; }
  const CsrWords& words() const { return words_; }

private:
  CsrMatrix A_;
  CsrWords words_;
};

/// y = A x for HPCCG's 27-point stencil, without storing A. Rows are numbered
/// i = iz nx ny + iy nx + ix, as HPCCG numbers them.
class StencilOperator {
public:
  StencilOperator() = default;
  /// Throws InvalidArgument unless nx, ny, nz >= 1 and nx ny nz fits an int.
  StencilOperator(int nx, int ny, int nz);
  std::size_t size() const { return static_cast<std::size_t>(nx_) * ny_ * nz_; }
  std::size_t nonzeros() const;  ///< of the matrix it stands for
  void apply(ConstVector x, Vector y) const;
  Vector diagonal() const;
  double residual_norm(ConstVector x, ConstVector b) const;
  int nx() const { return nx_; }
  int ny() const { return ny_; }
  int nz() const { return nz_; }

private:
  int nx_ = 0, ny_ = 0, nz_ = 0;
};

/// y = A x for a dense row-major n x n matrix.
class DenseOperator {
public:
  DenseOperator() = default;
  /// Throws InvalidArgument if A is not square.
  explicit DenseOperator(Kokkos::View<double**, Kokkos::LayoutRight> A);
  std::size_t size() const { return A_.extent(0); }
  std::size_t nonzeros() const { return A_.extent(0) * A_.extent(1); }
  void apply(ConstVector x, Vector y) const;
  Vector diagonal() const;
  double residual_norm(ConstVector x, ConstVector b) const;
  const Kokkos::View<double**, Kokkos::LayoutRight>& matrix() const { return A_; }

private:
  Kokkos::View<double**, Kokkos::LayoutRight> A_;
};

/// y = A x computed by a function: apply(x, y) hands it host Views of x (read only) and y
/// (to be overwritten), copied from and to the solver's memory space where that is not the
/// host's. The function is trusted to be linear and symmetric; its exceptions propagate out
/// of the solver. Jacobi needs the diagonal, which only the caller can give.
class FunctionOperator {
public:
  using HostConstVector = Kokkos::View<const double*, Kokkos::HostSpace>;
  using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;
  using Function = std::function<void(HostConstVector x, HostVector y)>;
  FunctionOperator() = default;
  /// diagonal: diag(A) if known (n entries), else an empty View. Throws InvalidArgument if
  /// the function is empty or the diagonal has other than n entries.
  FunctionOperator(std::size_t n, Function apply, Vector diagonal = Vector());
  std::size_t size() const { return n_; }
  void apply(ConstVector x, Vector y) const;
  /// diag(A) as given, or an empty View where the caller gave none.
  Vector diagonal() const { return diagonal_; }
  /// ||b - y|| in double-double, y = A x from the function (rounded as it rounds).
  double residual_norm(ConstVector x, ConstVector b) const;

private:
  std::size_t n_ = 0;
  Function apply_;
  Vector diagonal_;
};

/// The rows of an operator for kernels that read stored vectors (cg_steps): a CSR matrix,
/// HPCCG's 27-point stencil, or none (the dense operator, spaces over several processes).
struct RowsOf {
  enum class Kind : std::uint8_t { none, csr, stencil };
  Kind kind = Kind::none;
  CsrMatrix A;              ///< csr
  int nx = 0, ny = 0, nz = 0;  ///< stencil
  /// csr: A's values, where each is exact in it, as bfloat16 bits or binary32, or binary64
  /// in the slices (else empty: A.values)
  Kokkos::View<const std::uint16_t*> values16;
  Kokkos::View<const float*> values32;
  Kokkos::View<const double*> values64;
  /// csr: each entry's column minus its row, where every one fits in 16 bits (a band of
  /// half-width up to 32767; else empty)
  Kokkos::View<const std::int16_t*> offsets16;
  /// csr: the words' slices of eight rows (CsrWords), or empty
  Kokkos::View<const std::size_t*> slices;
  /// csr: the number of entries (A may lack its values and columns where narrow words hold
  /// them: CsrOperator::narrowest)
  std::size_t nonzeros() const;
};
inline RowsOf rows_of(const CsrOperator& A) {
  RowsOf r;
  r.kind = RowsOf::Kind::csr;
  r.A = A.held();
  r.values16 = A.words().values16;
  r.values32 = A.words().values32;
  r.values64 = A.words().values64;
  r.offsets16 = A.words().offsets16;
  r.slices = A.words().slices;
  return r;
}
inline RowsOf rows_of(const StencilOperator& A) {
  RowsOf r;
  r.kind = RowsOf::Kind::stencil;
  r.nx = A.nx();
  r.ny = A.ny();
  r.nz = A.nz();
  return r;
}
inline RowsOf rows_of(const DenseOperator&) { return {}; }
inline RowsOf rows_of(const FunctionOperator&) { return {}; }

namespace detail {

/// The kernels behind the operators, for operators whose rows live on several processes
/// (ebla::mpi): the rows a process owns, reading entries it does not own from ghost copies.
///
/// y = A x for the 27-point stencil on the nx x ny x nz block of planes owned here; below
/// and above are copies of the plane under the block's first one and over its last one
/// (nx ny entries each), or empty where the global grid ends.
void stencil27_apply(int nx, int ny, int nz, ConstVector x, ConstVector below, ConstVector above, Vector y);
/// The same on the whole nx x ny x nz grid in binary32: float x and y, every sum in float, in
/// the same order (refined_cg's inner solve).
void stencil27_apply(int nx, int ny, int nz, ConstFloatVector x, FloatVector y);
/// sum over the block's rows of (b_i - (A x)_i)^2 in double-double (ghost planes as above).
DoubleDouble stencil27_residual_squares(int nx, int ny, int nz, ConstVector x, ConstVector below, ConstVector above,
                                        ConstVector b);
/// sum over the rows of A of (b_i - (A x)_i)^2 in double-double, for a rectangular A
/// (rows: b's entries; columns: x's entries, e.g. the owned entries followed by ghosts).
DoubleDouble csr_residual_squares(const CsrMatrix& A, ConstVector x, ConstVector b);
/// A CSR matrix in binary64 from its rows (rows.A itself where it has its values and
/// columns, else built exactly from the narrow words).
CsrMatrix binary64_matrix(const RowsOf& rows);

}  // namespace detail

}  // namespace ebla
