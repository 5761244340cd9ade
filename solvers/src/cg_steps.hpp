// The passes of CG with stored Krylov vectors (cg_stored.cpp) and of the power method with a
// stored iterate (power_stored.cpp), each one pass over its vectors
// that also takes the sums the iteration branches on (binary64, per tile, merged in tile
// order: the same bits for any thread count). p, q and r are StoredVectors of one format S;
// x, b and D^-1 stay binary64.
//
//   apply:      q = A p                 stored;  p^T q, |p|^T |q|, ||q - fl_S(q)||^2, max |q|
//   update:     x += alpha p, r -= alpha q;      r^T r, r^T z (z = D^-1 r), ||r - fl_S(r)||^2,
//                                                max |r|, max |z|
//   direction:  p = z + beta p;                  ||p - fl_S(p)||^2, max |p|
//   replace:    r = b - A x                      (the residual replacement), as update
//   power:      w = 2^-e A v            stored;  v^T w, v^T v, w^T w, ||w - fl_S(w)||^2, max |w|
//
// Where it runs: the default execution space; the rows of A (operators.hpp: RowsOf) are read
// through StoredAccess, every tile's rows computed in binary64. Where that space is the
// host's, on x86-64, a tile runs in a form compiled for AVX2 with F16C or for AVX-512
// (stored_simd.hpp), chosen at run time (stored_isa): the same operations in the same
// order, the same tiles merged in the same order, so the same bits as the generic form.
#pragma once

#include <ebla/kernels/quantize_host.hpp>
#include <ebla/kernels/stored_vector.hpp>
#include <ebla/solvers/operators.hpp>

namespace ebla::detail {

/// The instruction set of the passes' host form: best_host_isa(), baseline where AVX2 comes
/// without F16C or the default execution space is not the host's, capped by the environment
/// variable EBLA_ISA (generic or baseline: the generic form; avx2; avx512), read once;
/// set_stored_isa overrides it (for tests: throws where this CPU cannot run `isa`),
/// reset_stored_isa undoes that.
HostIsa stored_isa();
void set_stored_isa(HostIsa isa);
void reset_stored_isa();

/// The sums of a pass (what the fields mean depends on the pass, see above).
struct StepSums {
  double dot = 0;       ///< apply: p^T q; update, replace: r^T r
  double abs_dot = 0;   ///< apply: |p|^T |q|; update, replace: r^T z (= r^T r without Jacobi)
  double err2 = 0;      ///< ||v - stored v||^2 of the vector the pass stores
  double amax = 0;      ///< max |stored v_i|
  double zmax = 0;      ///< update, replace: max |z_i|
  bool bad = false;     ///< a value was not finite
};

/// CSR only: where every value of A is exact in bfloat16 (or else in binary32), a copy of the
/// values in that format, which the passes then read (HPCCG's -1 and 27 take 2 bytes each);
/// where every |column - row| is at most 32767, the columns as 16-bit offsets from their row
/// (2 bytes each instead of 4), and then values and offsets in slices of eight rows
/// (CsrWords), binary64 values included, where the slices' words (each row padded to the
/// longest of its eight) take at most max_growth times the bytes of A's binary64 CSR values
/// and columns (12 a nonzero; else values and offsets in the order of the rows' entries).
/// Nothing where A is held in such words already.
void narrow_values(RowsOf& A, double max_growth = 1);

/// A with narrow_values applied.
RowsOf narrowed(RowsOf A, double max_growth = 1);
/// Bytes per stored matrix value (8, or 4 or 2 after narrow_values).
double value_bytes(const RowsOf& A);
/// Bytes per column index the passes read (4, or 2 as offsets after narrow_values).
double column_bytes(const RowsOf& A);
/// Bytes a pass reads of A: values, column indices and row offsets (0 for the stencil).
double matrix_bytes(const RowsOf& A);

/// A bound on the infinity norm of A (its largest row sum of |a_ij|), with room for the
/// rounding of a row's sum: max_i |(A p)_i| as computed is at most it times max |p_j|.
double infinity_norm_bound(const RowsOf& A);

/// a_norm: infinity_norm_bound(A), which scales q's format; q_max_needed: whether the pass
/// must find max |q_i| where q is binary64 (a narrow r is scaled by it).
StepSums apply_stored(const RowsOf& A, double a_norm, const StoredVector& p, StoredVector& q, double p_max,
                      bool q_max_needed = true);
/// r = r - alpha q (line 9) and r's sums; x waits for direction_stored.
StepSums update_stored(double alpha, const StoredVector& q, StoredVector& r, ConstVector dinv, double q_max,
                       double r_max);
/// x += alpha p where x is given (line 8, with p before this pass), then p = z + beta p (line 12).
StepSums direction_stored(double beta, const StoredVector& r, ConstVector dinv, StoredVector& p, double z_max,
                          double p_max, double alpha = 0, Vector x = Vector());
StepSums replace_stored(const RowsOf& A, ConstVector b, ConstVector x, StoredVector& r, ConstVector dinv);

/// p := v rounded to p's format with p's scale as it stands (p.scale_exponent is not chosen
/// here): the tile store of the passes above, alone (tests compare its forms on values at
/// the formats' edges).
StoreSums store_stored(StoredVector& p, ConstVector v);

/// The sums of the power method's pass (power_stored.cpp) over v and w = 2^-e A v, w taken
/// before it is stored: v^T w, v^T v, w^T w and |v|^T |w|.
struct PowerSums {
  double vw = 0, vv = 0, ww = 0, abs_vw = 0;
  double err2 = 0;   ///< ||w - stored w||^2
  double amax = 0;   ///< max |stored w_i|
  bool bad = false;  ///< a value was not finite
};

/// The power method's one pass: w = 2^-e A v stored in w's format, with its sums; e is
/// chosen by the caller so that 2^-e a_norm v_max is at most 1 (w then neither overflows
/// nor drifts in size from one iteration to the next).
PowerSums power_stored(const RowsOf& A, double a_norm, const StoredVector& v, StoredVector& w, double v_max,
                       int e);

}  // namespace ebla::detail
